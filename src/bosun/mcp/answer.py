"""The compact answer a parent reads instead of the diff: the verdict first, then gates, verification, files,
receipt.

bosun ran the verify commands and the gates itself, so a parent that trusts them need not read the
diff; it is included only when asked for.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from bosun.core.fileio import read_json
from bosun.core.paths import run_dir
from bosun.core.quoting import WORKER_WORDS, untrusted_fields
from bosun.engine.results import run_result

if TYPE_CHECKING:
    from collections.abc import Mapping

    from bosun.store.run import Run

FINAL_MESSAGE_CHARS = 2000
FAILED_TAIL_CHARS = 1200

_NEXT = {
    "verified": "read this, then call approve and integrate (or discard); call diff only if you must see the change",
    "rejected": "see the red gates and failed commands; discard, or delegate a corrected task",
    "failed": "see error.hint; discard, or delegate again (another profile)",
    "blocked": "the worker could not start (auth, missing CLI or key); see error.hint, then delegate again",
    "cancelled": "nothing landed; discard to remove the worktree",
    "approved": "call integrate to land it on the source branch",
    "integrated": "landed on the source branch (not pushed)",
    "reported": "finished",
    "cleaned": "finished; the worktree is gone",
    "interrupted": "the background process died; run `bosun recover RUN` in a shell",
}


def file_changes(diff_text: str) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = []
    for line in diff_text.splitlines():
        m = re.match(r"^diff --git a/(.*) b/(.*)$", line)
        if m:
            files.append({"path": m.group(2), "added": 0, "deleted": 0})
        elif files and line.startswith("+") and not line.startswith("+++"):
            files[-1]["added"] += 1
        elif files and line.startswith("-") and not line.startswith("---"):
            files[-1]["deleted"] += 1
    return files


def summary(v: Mapping[str, Any] | None, state: str, verification: Mapping[str, Any] | None,
            error: Mapping[str, Any] | None) -> str:
    """The verdict in a sentence, said first: what bosun decided and what the parent does about it."""
    from bosun.engine.verdict import (
        LANDABLE,
        NEEDS_REVIEW,
        OWN_TESTS_PROOF,
        codes,
        one_line,
        waits_for_a_person,
    )

    if v is None:
        return f"{state}: not judged yet" + (f" ({error.get('message')})" if error else "")
    head = one_line(v)
    if waits_for_a_person(v) and codes(v) == [OWN_TESTS_PROOF]:
        return (f"{head}: proven only by the worker's own tests. Read own_tests (each test's source, the worker's "
                "text); if they state what the task asks, approve with acknowledge=['OWN_TESTS_PROOF'] on your own "
                "reading; if not, discard it or delegate again.")
    if waits_for_a_person(v):
        reasons = "; ".join(f"{r['code']}: {r['sentence']}" for r in v["reasons"])
        return (f"{head}: a person must decide. Read these reasons to your person before approving: {reasons}. "
                f"{WORKER_WORDS} Approve with acknowledge={codes(v)} only after they said yes; never acknowledge on "
                "their behalf.")
    if v["outcome"] == NEEDS_REVIEW:
        return f"{head}; the run is {state}"
    if v["outcome"] == LANDABLE and state == "verified":
        if (verification or {}).get("proven_by") == "own_tests":
            return ("landable: verified and proven by the worker's own tests, which fail without the change and "
                    "pass with it (bosun ran both); the cross-review read them and left nothing open, and every "
                    "gate is green")
        if (verification or {}).get("proven"):
            return ("landable: verified and proven: the verify commands failed before the change and pass with "
                    "it (bosun ran both), and every gate is green")
        return "landable: bosun re-ran the verify commands itself and every gate is green"
    if v["outcome"] == LANDABLE:
        return f"landable; the run is {state}"
    why = "; ".join(f"{r['code']}: {r['sentence'][:300]}" for r in v["reasons"][:6])
    return f"{head}: {why}"


def next_step(v: Mapping[str, Any] | None, state: str) -> str:
    from bosun.engine.verdict import OWN_TESTS_PROOF, codes, waits_for_a_person

    if state == "verified" and waits_for_a_person(v) and codes(v) == [OWN_TESTS_PROOF]:
        return ("read own_tests: if the tests state what the task asks, call approve with "
                "acknowledge=['OWN_TESTS_PROOF']; if not, discard")
    if state == "verified" and waits_for_a_person(v):
        return (f"a person must decide: read verdict.reasons to your person (call diff if they want to see the "
                f"change); if they say yes, call approve with acknowledge={codes(v)}; if not, discard")
    return _NEXT.get(state, "call wait again")


def receipt(run: Run, full: Mapping[str, Any]) -> dict[str, Any]:
    metrics = read_json(run_dir(run.id) / "metrics.json", {}) or {}
    est = metrics.get("parent") or {}
    data = run.data
    measured = metrics.get("parent_measured") or data.parent_measured
    return {
        "worker_usage": full.get("usage"),
        "worker_cost_usd": full.get("cost_usd"),
        "parent_estimated": {k: est.get(k) for k in ("parent_direct_tokens", "parent_actual_tokens", "compression",
                                                      "saving_usd")} if est else None,
        "parent_measured": measured or {"measured": False, "reason": "measured when the review ends (approve, "
                                                                      "integrate, discard or cancel)"},
    }


def compact_result(run: Run, include_diff: bool = False, done: bool = True) -> dict[str, Any]:
    full = run_result(run)
    red = [g["code"] for g in full["gates"] if not g["ok"] and not g.get("waived")]
    ver = full.get("verification")
    commands = []
    for c in (ver or {}).get("commands", []):
        item: dict[str, Any] = {"argv": c.get("argv"), "exit_code": c.get("exit_code")}
        if c.get("exit_code") != 0:
            item["output_tail"] = (c.get("output_tail") or "")[-FAILED_TAIL_CHARS:]
        commands.append(item)
    diff_path = run_dir(run.id) / "diff.patch"
    diff_text = diff_path.read_text("utf-8", "replace") if diff_path.exists() else ""
    final = full.get("final_message") or ""
    v = full.get("verdict")
    out: dict[str, Any] = {
        # The one verdict first (engine/verdict.py), and the sentence that says it.
        "verdict": v,
        "summary": summary(v, run.state, ver, full.get("error")),
        "id": run.id,
        "state": run.state,
        "done": done,
        "title": run.title,
        "profile": run.profile,
        "gates": {"green": sum(1 for g in full["gates"] if g["ok"]), "red": red,
                  "details": [g for g in full["gates"] if not g["ok"]]},
        "verification": None if ver is None else {"passed": ver.get("passed"), "commands": commands},
        # The fail-to-pass proof: the verify commands failed on the start tree and pass on the change.
        "proven": (ver or {}).get("proven"),
        "proven_by": (ver or {}).get("proven_by"),
        "proof": (ver or {}).get("proof"),
        "files_changed": file_changes(diff_text),
        "diff_sha256": full.get("diff_sha256"),
        "final_message": final[:FINAL_MESSAGE_CHARS] + ("..." if len(final) > FINAL_MESSAGE_CHARS else ""),
        "receipt": receipt(run, full),
        "error": full.get("error"),
        "merged_commit": full.get("merged_commit"),
        "next": next_step(v, run.state),
    }
    for key in ("review", "unenforced", "warnings", "landing_refused"):
        if full.get(key) is not None:
            out[key] = full[key]
    if ver is not None and ver.get("own_tests"):
        # A few lines of test instead of the diff: each test's source as the worker wrote it (untrusted).
        out["own_tests"] = ver["own_tests"]
    if include_diff:
        out["diff"] = diff_text
    out["untrusted_fields"] = untrusted_fields(out)
    return out
