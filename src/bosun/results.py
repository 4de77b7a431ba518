"""The result object every verb returns with ``--json`` (the CLI contract outside tools rely on).

Kept free of pydantic and rich so ``bosun show --json`` and ``bosun list --json`` start fast.
"""

from __future__ import annotations

from typing import Any

from bosun.fileio import read_json
from bosun.paths import run_dir


def run_result(run: dict[str, Any], error: dict[str, Any] | None = None, brief: bool = False) -> dict[str, Any]:
    rdir = run_dir(run["id"])
    data = run.get("data") or {}
    gates_doc = read_json(rdir / "gates.json", {}) or {}
    verification = read_json(rdir / "verification.json", None)
    metrics = read_json(rdir / "metrics.json", {}) or {}
    result: dict[str, Any] = {
        "id": run["id"],
        "state": run["state"],
        "title": run["title"],
        "profile": run["profile"],
        "profile_reason": run.get("profile_reason"),
        "base": run["base"],
        "source_branch": run["source_branch"],
        "branch": run["branch"],
        "worktree": run["worktree"],
        "diff_sha256": run.get("diff_sha256"),
        "files_changed": run.get("files_changed", 0),
        "gates": [
            {"code": g["code"], "ok": g["ok"], "detail": g.get("detail", ""), **({"waived": True} if g.get("waived") else {})}
            for g in gates_doc.get("gates", [])
        ],
        "verification": _verification(verification),
        "usage": data.get("usage"),
        "cost_usd": (metrics.get("worker") or {}).get("cost_usd"),
        "merged_commit": run.get("merged_commit"),
        "error": error if error is not None else data.get("error"),
        "run_dir": str(rdir),
    }
    review = read_json(rdir / "review.json", None)
    if review is not None:
        rep = review.get("report") or {}
        result["review"] = {
            "escalate": review.get("review_escalate"),
            "reasons": review.get("reasons", []),
            "summary": rep.get("summary"),
            "criteria": rep.get("criteria", []),
            "findings": rep.get("findings", []),
        }
    unenforced = (data.get("worker") or {}).get("unenforced")
    if unenforced:
        # Safety rules this worker CLI could not enforce for this run (bosun's gates still apply).
        result["unenforced"] = unenforced
    if not brief:
        result["savings"] = metrics.get("parent")
        result["final_message"] = (data.get("worker") or {}).get("final_text")
    return result


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
        "proof": doc.get("proof"),
        "fail_to_pass": doc.get("fail_to_pass"),
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


def list_item(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": run["id"],
        "state": run["state"],
        "title": run["title"],
        "profile": run["profile"],
        "files_changed": run.get("files_changed", 0),
        "created_at": run["created_at"],
        "updated_at": run["updated_at"],
        "repo": run["repo"],
        "plan_id": run.get("plan_id"),
    }
