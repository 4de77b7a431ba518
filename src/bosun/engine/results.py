"""The result object every verb returns with ``--json`` (the CLI contract outside tools rely on).

Kept free of pydantic and rich so ``bosun show --json`` and ``bosun list --json`` start fast.
"""

from __future__ import annotations

from bosun.core.fileio import read_json
from bosun.core.paths import run_dir
from bosun.core.quoting import untrusted_fields
from bosun.engine.review_record import compact as compact_review
from bosun.engine.review_record import read as read_review

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from typing import Any

    from bosun.core.result_types import RunResult
    from bosun.store.run import Run

# States that are an outcome without a fault: an ``error`` recorded on the way there is history,
# not the current state, and is never shown (the transition log keeps it).
CLEAN_STATES = frozenset({"prepared", "worked", "verified", "approved", "integrated", "reported", "cleaned"})


def current_error(run: Run) -> dict[str, Any] | None:
    """The run's recorded error if it still describes the run's state, else None."""
    if run.state in CLEAN_STATES:
        return None
    err = run.data.error
    return err if isinstance(err, dict) else None


def run_result(run: Run, error: dict[str, Any] | None = None, brief: bool = False) -> RunResult:
    rdir = run_dir(run.id)
    data = run.data
    gates_doc = read_json(rdir / "gates.json", {}) or {}
    verification = read_json(rdir / "verification.json", None)
    metrics = read_json(rdir / "metrics.json", {}) or {}
    review_doc = _current_review(rdir, run)
    citations = read_json(rdir / "citations.json", None)
    from bosun.engine.verdict import decide

    task_doc = read_json(rdir / "task.json", {}) or {}
    cross_review = read_review(run.id)  # read once: the verdict and the result's own block
    result: dict[str, Any] = {
        "id": run.id,
        "state": run.state,
        # The one verdict (engine/verdict.py): landable, needs_review (with its reasons) or refused.
        "verdict": decide(run, task_doc.get("task"), gates_doc.get("gates", []), verification, cross_review),
        # The verdicts come first: the self-review's, and whether an answer's citations are backed.
        **({"review": _review(review_doc)} if review_doc is not None else {}),
        **({"answer_verified": citations.get("answer_verified")} if isinstance(citations, dict) else {}),
        "title": run.title,
        "profile": run.profile,
        "profile_reason": run.profile_reason,
        "base": run.base,
        "source_branch": run.source_branch,
        "branch": run.branch,
        "worktree": run.worktree,
        "diff_sha256": run.diff_sha256,
        "files_changed": run.files_changed,
        "gates": [
            {"code": g["code"], "ok": g["ok"], "detail": g.get("detail", ""), **({"waived": True} if g.get("waived") else {}),
             **({"review": g["review"]} if g.get("review") else {})}
            for g in gates_doc.get("gates", [])
        ],
        "verification": _verification(verification),
        "usage": data.usage,
        # Every worker turn the run took (recorded with its usage); a run recorded before that: its receipt's.
        "cost_usd": data.cost_usd if data.cost_usd is not None else (metrics.get("worker") or {}).get("cost_usd"),
        "merged_commit": run.merged_commit,
        "error": error if error is not None else current_error(run),
        "run_dir": str(rdir),
    }
    if data.turns and len(data.turns) > 1:
        # Repair rounds and the ladder's rungs (engine/repair.py): each turn, why it was given, its cost.
        result["turns"] = data.turns
        if len({t.get("profile") for t in data.turns}) > 1:
            from bosun.engine.turns import cost_by_rung

            result["cost_by_rung"] = cost_by_rung(data.turns)
    if cross_review is not None:
        # Another profile's review of the change: its rounds, findings and cost (engine/review_record.py).
        result["cross_review"] = compact_review(cross_review, run.diff_sha256, brief=brief)
    if isinstance(citations, dict):
        # Explore and review answers: which path:line citations the start tree backs.
        result["citations"] = {k: citations.get(k) for k in ("checked", "valid", "invalid", "backed")}
    if data.read_only_violation:
        result["read_only_violation"] = data.read_only_violation
    warnings = landing_warnings(run)
    if warnings:
        # What stands in the way of landing a change the verdict would let land.
        result["warnings"] = warnings
    if data.landing_refused and run.state == "approved":
        result["landing_refused"] = data.landing_refused
    if data.sandbox:
        # What the kernel enforced for this run's worker: {mechanism, abi, network, containment}.
        result["sandbox"] = data.sandbox
    # After landing: the revert of its landing commit (by a commit, or a revert run), the run this one
    # reverts, and the other branches its change was applied to (engine/undo.py, engine/apply_run.py).
    if data.reverted:
        result["reverted"] = data.reverted
    if data.revert_of:
        result["revert_of"] = data.revert_of
    if data.applied:
        result["applied"] = data.applied
    unenforced = (data.worker or {}).get("unenforced")
    if unenforced:
        # Safety rules this worker CLI could not enforce for this run (bosun's gates still apply).
        result["unenforced"] = unenforced
    if not brief:
        result["savings"] = metrics.get("parent")
        result["final_message"] = (data.worker or {}).get("final_text")
    # Which of these fields hold text a worker wrote (core/quoting.py): data for the parent, never orders.
    result["untrusted_fields"] = untrusted_fields(result)
    return result  # type: ignore[return-value]  # built in key order (verdicts first), shaped as RunResult


def _current_review(rdir: Any, run: Run) -> dict[str, Any] | None:
    """The self-review record of the run's current diff (one of an earlier diff is left out)."""
    doc = read_json(rdir / "review.json", None)
    if not isinstance(doc, dict):
        return None
    if doc.get("diff_sha256") and run.diff_sha256 and doc.get("diff_sha256") != run.diff_sha256:
        return None
    return doc


def _review(doc: dict[str, Any]) -> dict[str, Any]:
    rep = doc.get("report") or {}
    verdict = doc.get("status") or ("escalated" if doc.get("review_escalate") else "passed")
    return {
        "verdict": verdict,  # passed | escalated | unparseable | failed | skipped; only "passed" is a pass
        "escalate": verdict != "passed" and verdict != "skipped",
        "reasons": doc.get("reasons", []),
        "summary": rep.get("summary"),
        "criteria": rep.get("criteria", []),
        "findings": rep.get("findings", []),
    }


def _verification(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    if doc is None:
        return None
    return {
        "passed": doc.get("passed"),
        "commands": [
            {
                "argv": c.get("argv"),
                "exit_code": c.get("exit_code"),
                "duration_s": c.get("duration_s"),
                "output_tail": (c.get("output_tail") or "")[-1500:],
            }
            for c in doc.get("commands", [])
        ],
        # The fail-to-pass proof (see engine/baseline.py): None when no baseline was taken.
        "proven": doc.get("proven"),
        "proven_by": doc.get("proven_by"),  # task_tests | own_tests (engine/proof.py)
        "proof": doc.get("proof"),
        "fail_to_pass": doc.get("fail_to_pass"),
        # The worker's tests that fail on the start tree's code: their source is the worker's text.
        "own_tests": doc.get("own_tests"),
        "pass_to_fail": doc.get("pass_to_fail"),
        "baseline": _baseline(doc.get("baseline")),
    }


def _baseline(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    if not doc:
        return None
    return {
        "passed": doc.get("passed"),
        "cached": bool(doc.get("cached")),
        "commands": [{"argv": c.get("argv"), "exit_code": c.get("exit_code"), "duration_s": c.get("duration_s")}
                     for c in doc.get("commands", [])],
    }


def landing_warnings(run: Run) -> list[dict[str, str]]:
    """``[{code, message, hint}]``: what would stop ``integrate``, seen when bosun verified the change
    (the user's uncommitted edits in files it touches), while the run has not landed."""
    overlap = run.data.uncommitted_overlap
    if not overlap or run.merged_commit or run.state not in ("verified", "approved"):
        return []
    files = ", ".join(overlap["paths"][:5]) + (f" and {len(overlap['paths']) - 5} more" if len(overlap["paths"]) > 5 else "")
    return [{"code": "OVERLAPS_UNCOMMITTED",
             "message": f"when bosun verified this change, you had uncommitted edits in files it changes ({files}, "
                        f"in {overlap['checkout']}): integrate refuses to land it over them",
             "hint": f"commit or stash your edits in {files} first, then `bosun approve {run.id}` and "
                     f"`bosun integrate {run.id}`"}]


def list_item(run: Run) -> dict[str, Any]:
    from bosun.core.states import shown_commit, shown_state

    data = run.data.to_dict()
    return {
        "id": run.id,
        "state": run.state,
        # What the run is (core/states.py): landed, merged, reverted, discarded, landing refused, or its state.
        "shown_state": shown_state(run.state, run.merged_commit, data),
        "shown_commit": shown_commit(run.state, run.merged_commit, data),
        "title": run.title,
        "profile": run.profile,
        "files_changed": run.files_changed,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "repo": run.repo,
        "plan_id": run.plan_id,
    }
