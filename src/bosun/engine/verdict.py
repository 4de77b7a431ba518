"""What a run's verdict means, and what blocks its approval beyond the change's own gates.

Three rules live here, each decided from the run record, the task's mode and the reviews, never from
what a worker says about itself:

- **Read-only modes never land a change.** An ``explore``, ``review`` or ``test`` run that wrote files
  has those writes saved as ``violation.patch`` and discarded from its worktree; the run is rejected
  (``READ_ONLY_VIOLATION``) and no waiver lets it be approved. A clean read-only run approves to
  nothing: its change is empty by construction.
- **Self-review is a gate.** An escalated, unparseable or failed self-review rejects the run
  (``SELF_REVIEW_ESCALATED``); ``approve`` then refuses with the review's reasons unless the parent
  passes its own review (``--review FILE``) or waives the gate with a reason.
- **Answers are checked.** The ``path:line`` citations of an explore or review answer are checked
  against the run's start tree (:mod:`bosun.engine.citations`); any that is not backed rejects the run
  (``INVALID_CITATIONS``) and the result says ``answer_verified: false``.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from bosun import paths
from bosun.changes import GateResult
from bosun.contract import Mode, TaskContract
from bosun.engine import record
from bosun.engine.self_review import ESCALATED, FAILED, PASSED, REVIEW_FILE, SKIPPED, UNPARSEABLE
from bosun.errors import BadInput, Rejected
from bosun.fileio import read_json, write_bytes_atomic

if TYPE_CHECKING:
    from bosun.store.rows import RunRow

READ_ONLY_VIOLATION = "READ_ONLY_VIOLATION"
SELF_REVIEW_ESCALATED = "SELF_REVIEW_ESCALATED"
INVALID_CITATIONS = "INVALID_CITATIONS"
# Gates that approve judges here (with their own refusal codes), not by the generic "gates not green".
VERDICT_GATES = (READ_ONLY_VIOLATION, SELF_REVIEW_ESCALATED)
UNWAIVABLE = (READ_ONLY_VIOLATION,)

VIOLATION_PATCH = "violation.patch"
CITATIONS_FILE = "citations.json"
ANSWER_MODES = (Mode.explore, Mode.review)

__all__ = ["ESCALATED", "FAILED", "PASSED", "SKIPPED", "UNPARSEABLE"]  # self-review outcomes, re-exported


# ---------------------------------------------------------------------------------------------
# read-only modes


def quarantine_read_only_writes(store: Any, run: RunRow, task: TaskContract) -> GateResult | None:
    """For a non-``code`` run: save what the worker wrote as ``violation.patch``, restore the worktree
    to the start tree and return the red gate. None for code runs and for read-only runs that wrote
    nothing. Call before the change is computed, so the change of a read-only run is always empty.
    A violation sticks to the run: re-verifying the restored tree does not make it approvable."""
    from bosun.engine.context import scan_run, view_of
    from bosun.isolation.change import materialize

    if task.mode == Mode.code:
        return None
    change = scan_run(run)
    if change.problems:
        return None  # a change bosun cannot represent is refused on its own, before anything runs
    if not change.changes:
        earlier = (run.get("data") or {}).get("read_only_violation")
        if earlier:
            return GateResult(READ_ONLY_VIOLATION, False,
                              f"mode {task.mode.value} must not change files, but the worker of this run changed "
                              f"{earlier.get('count')} earlier (discarded; kept in {VIOLATION_PATCH})")
        return None
    files = sorted({c.path for c in change.changes})
    write_bytes_atomic(paths.run_dir(run["id"]) / VIOLATION_PATCH, change.diff)
    # Back to exactly the start tree (ignored files included). A later `work --resume` starts clean,
    # and nothing the worker wrote can be verified, approved or merged.
    view = view_of(run)
    materialize(view, view.git(["rev-parse", f"{run['start_commit']}^{{tree}}"]).strip().decode())
    store.merge_data(run["id"], read_only_violation={
        "files": files[:50], "count": len(files), "patch": VIOLATION_PATCH,
        "diff_sha256": hashlib.sha256(change.diff).hexdigest(),
    })
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    return GateResult(
        READ_ONLY_VIOLATION, False,
        f"mode {task.mode.value} must not change files, but the worker changed {shown}; "
        f"the writes were discarded (kept in {VIOLATION_PATCH}) and cannot be approved",
    )


# ---------------------------------------------------------------------------------------------
# self-review


def review_status(judged: dict[str, Any] | None) -> str | None:
    """The outcome of a recorded self-review; None when there was none."""
    if not judged:
        return None
    if judged.get("status"):
        return str(judged["status"])
    return ESCALATED if judged.get("review_escalate") else PASSED  # records written before "status"


def self_review_gate(judged: dict[str, Any] | None) -> GateResult | None:
    """The gate row for a self-review that ran (None when it was not configured or was skipped)."""
    status = review_status(judged)
    if status in (None, SKIPPED):
        return None
    assert judged is not None
    if status == PASSED:
        return GateResult(SELF_REVIEW_ESCALATED, True, "the self-review found every criterion met and no P0..P2 finding")
    reasons = "; ".join(str(r) for r in judged.get("reasons", [])[:3]) or status
    return GateResult(SELF_REVIEW_ESCALATED, False, f"self-review {status}: {reasons}")


def current_review(run: RunRow) -> dict[str, Any] | None:
    """The self-review recorded for the run's current diff (a review of an earlier diff is stale)."""
    judged = read_json(paths.run_dir(run["id"]) / REVIEW_FILE, None)
    if not isinstance(judged, dict):
        return None
    if judged.get("diff_sha256") and run.get("diff_sha256") and judged["diff_sha256"] != run["diff_sha256"]:
        return None
    return judged


def _parent_review_passes(review: dict[str, Any] | None) -> bool:
    from bosun.engine.review import open_blocking_findings, validate_review

    if review is None:
        return False
    validate_review(review)
    rejected = str(review.get("verdict", "")).lower() in ("reject", "rejected", "request_changes")
    return not rejected and not open_blocking_findings(review)


# ---------------------------------------------------------------------------------------------
# approval


def check_waivers(waivers: dict[str, str]) -> None:
    for code in waivers:
        if code in UNWAIVABLE:
            raise BadInput(
                f"{code} cannot be waived: only a code task can land a change",
                "run the task again in mode code if the change is wanted; the discarded writes are in "
                f"the run directory ({VIOLATION_PATCH})",
            )


def refuse_unapprovable(
    run: RunRow, task: TaskContract, review: dict[str, Any] | None, waivers: dict[str, str]
) -> str | None:
    """Raise ``Rejected`` when the run's verdict forbids approval; otherwise return a note for the
    record when a self-review escalation was overruled by the parent's review (else None)."""
    check_waivers(waivers)
    data = run.get("data") or {}
    if task.mode != Mode.code and data.get("read_only_violation"):
        v = data["read_only_violation"]
        raise Rejected(
            f"cannot approve {run['id']}: a {task.mode.value} run may not change files, and this worker "
            f"changed {v.get('count', '?')} (discarded; kept in {v.get('patch', VIOLATION_PATCH)})",
            "no waiver applies; read the answer with `bosun show`, or run the task in mode code",
            code=READ_ONLY_VIOLATION,
        )
    judged = current_review(run)
    status = review_status(judged)
    if status in (None, PASSED, SKIPPED) or SELF_REVIEW_ESCALATED in waivers:
        return None
    if _parent_review_passes(review):
        return f"self-review {status}; approved on the parent's own review"
    assert judged is not None
    reasons = [str(r) for r in judged.get("reasons", [])] or [f"the self-review {status}"]
    raise Rejected(
        f"cannot approve {run['id']}: the self-review {status}: " + "; ".join(reasons[:5]),
        "read the findings (`bosun show " + run["id"] + "`); fix them with `bosun work --resume`, approve "
        "with your own review (`--review FILE`), or `--waive SELF_REVIEW_ESCALATED --reason TEXT`",
        code=SELF_REVIEW_ESCALATED,
    )


def ensure_landable(run: RunRow, task: TaskContract) -> None:
    """Integration's last word: a read-only run never lands anything, whatever else its record says."""
    if task.mode != Mode.code and (run.get("files_changed") or (run.get("data") or {}).get("read_only_violation")):
        raise Rejected(
            f"run {run['id']} is a {task.mode.value} run; it cannot land a change",
            "only code tasks change your branch; `bosun discard` the run",
            code=READ_ONLY_VIOLATION,
        )


# ---------------------------------------------------------------------------------------------
# answers


def answer_gate(store: Any, run: RunRow, task: TaskContract) -> GateResult | None:
    """Check the citations of an explore or review answer against the start tree; record them in
    ``citations.json`` and ``answer_verified``; return the gate row (None for other modes)."""
    from bosun.engine.citations import GitTree, answer_verified, check_answer

    if task.mode not in ANSWER_MODES:
        return None
    answer = ((run.get("data") or {}).get("worker") or {}).get("final_text") or ""
    checked = check_answer(GitTree(run["repo"], run["start_commit"]), answer)
    verified = answer_verified(checked)
    record.write_doc(run["id"], CITATIONS_FILE, {**checked, "answer_verified": verified, "tree": run["start_commit"]})
    store.merge_data(run["id"], answer_verified=verified)
    if verified is None:
        return GateResult(INVALID_CITATIONS, True, "the answer cites no path:line; nothing could be checked")
    if verified:
        return GateResult(INVALID_CITATIONS, True, f"all {checked['checked']} citation(s) exist in the start tree")
    bad = "; ".join(str(i.get("problem")) for i in checked["invalid"][:3])
    return GateResult(
        INVALID_CITATIONS, False,
        f"{checked['checked'] - checked['valid']} of {checked['checked']} citation(s) are not backed: {bad}",
    )
