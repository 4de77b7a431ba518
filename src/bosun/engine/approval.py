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

from bosun.core import paths, states
from bosun.core.changes import GateResult
from bosun.core.contract import Mode, TaskContract
from bosun.core.errors import BadInput, Rejected
from bosun.core.fileio import write_bytes_atomic
from bosun.engine import record
from bosun.engine.self_review import ESCALATED, FAILED, PASSED, SKIPPED, UNPARSEABLE
from bosun.engine.stops import clear_error

if TYPE_CHECKING:
    from collections.abc import Mapping

    from bosun.engine.context import RunContext
    from bosun.isolation.change import Change
    from bosun.store.db import Store
    from bosun.store.run import Run

READ_ONLY_VIOLATION = "READ_ONLY_VIOLATION"
SELF_REVIEW_ESCALATED = "SELF_REVIEW_ESCALATED"
INVALID_CITATIONS = "INVALID_CITATIONS"
# Gates that approve judges here (with their own refusal codes), not by the generic "gates not green".
VERDICT_GATES = (READ_ONLY_VIOLATION,)
UNWAIVABLE = (READ_ONLY_VIOLATION,)

VIOLATION_PATCH = "violation.patch"
CITATIONS_FILE = "citations.json"
ANSWER_MODES = (Mode.explore, Mode.review)

__all__ = ["ESCALATED", "FAILED", "PASSED", "SKIPPED", "UNPARSEABLE"]  # self-review outcomes, re-exported


# ---------------------------------------------------------------------------------------------
# read-only modes


def read_only_gate(store: Store, run: Run, task: TaskContract, discarded: Change | None) -> GateResult | None:
    """READ_ONLY_VIOLATION for a non-``code`` run that wrote: what verification took out of its
    worktree (``discarded``, :func:`bosun.isolation.verification.verify_worked`) is kept as
    ``violation.patch`` and recorded. None for code runs and for read-only runs that wrote nothing.
    A violation sticks to the run: re-verifying the restored tree does not make it approvable."""
    if task.mode == Mode.code:
        return None
    change = discarded
    if change is None:
        earlier = run.data.read_only_violation
        if earlier:
            return GateResult(READ_ONLY_VIOLATION, False,
                              f"mode {task.mode.value} must not change files, but the worker of this run changed "
                              f"{earlier.get('count')} earlier (discarded; kept in {VIOLATION_PATCH})")
        return None
    files = sorted({c.path for c in change.changes})
    write_bytes_atomic(paths.run_dir(run.id) / VIOLATION_PATCH, change.diff)
    store.merge_data(run.id, read_only_violation={
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
    # Not a refusal: the worker graded itself and is unsure. A person decides (engine/verdict.py); an
    # unparseable or failed review is never read as a pass.
    return GateResult(SELF_REVIEW_ESCALATED, True, f"self-review {status}: {reasons}",
                      review=[{"code": SELF_REVIEW_ESCALATED, "sentence": f"the worker's self-review {status}: {reasons}"}])


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


def refuse_unapprovable(run: Run, task: TaskContract, waivers: dict[str, str]) -> None:
    """Raise ``Rejected`` when the run's mode forbids approval whatever anyone says: a read-only run
    that wrote files."""
    check_waivers(waivers)
    data = run.data
    if task.mode != Mode.code and data.read_only_violation:
        v = data.read_only_violation
        count = v.get("count") or len(v.get("files") or ())
        raise Rejected(
            f"cannot approve {run.id}: a {task.mode.value} run may not change files, and this worker "
            f"changed {count} file{'' if count == 1 else 's'} (discarded; kept in {v.get('patch', VIOLATION_PATCH)})",
            "no waiver applies; read the answer with `bosun show`, or run the task in mode code",
            code=READ_ONLY_VIOLATION,
        )


def ensure_landable(run: Run, task: TaskContract) -> None:
    """Integration's last word: a read-only run never lands anything, whatever else its record says."""
    if task.mode != Mode.code and (run.files_changed or run.data.read_only_violation):
        raise Rejected(
            f"run {run.id} is a {task.mode.value} run; it cannot land a change",
            "only code tasks change your branch; `bosun discard` the run",
            code=READ_ONLY_VIOLATION,
        )


# ---------------------------------------------------------------------------------------------
# answers


def answer_gate(store: Store, run: Run, task: TaskContract) -> GateResult | None:
    """Check the citations of an explore or review answer against the start tree; record them in
    ``citations.json`` and ``answer_verified``; return the gate row (None for other modes)."""
    from bosun.engine.citations import GitTree, answer_verified, check_answer

    if task.mode not in ANSWER_MODES:
        return None
    answer = (run.data.worker or {}).get("final_text") or ""
    checked = check_answer(GitTree(run.repo, run.start_commit), answer)
    verified = answer_verified(checked)
    record.write_doc(run.id, CITATIONS_FILE, {**checked, "answer_verified": verified, "tree": run.start_commit})
    store.merge_data(run.id, answer_verified=verified)
    if verified is None:
        return GateResult(INVALID_CITATIONS, True, "the answer cites no path:line; nothing could be checked")
    if verified:
        return GateResult(INVALID_CITATIONS, True, f"all {checked['checked']} citation(s) exist in the start tree")
    bad = "; ".join(str(i.get("problem")) for i in checked["invalid"][:3])
    return GateResult(
        INVALID_CITATIONS, False,
        f"{checked['checked'] - checked['valid']} of {checked['checked']} citation(s) are not backed: {bad}",
    )


# ---------------------------------------------------------------------------------------------
# approve

# Who said yes to a run that needs review (recorded in the run's ``acknowledged``).
BY_PERSON, BY_SCRIPT, BY_PARENT = "person", "script", "parent"
ALL = "all"  # acknowledge every reason: a person who read them, or a script's --yes

# Refusals that mean bosun has no faithful change to judge: no waiver makes one.
UNWAIVABLE_GATES = frozenset({"GIT_POINTER_CHANGED", "NESTED_REPOSITORY", "USER_GIT_TAMPERED", "USER_FILES_TAMPERED"})
# Only a green change lands: a failed verification is never waived either.
VERIFY_FAILED = "VERIFY_FAILED"


def forget_acknowledgment(store: Store, run_id: str) -> None:
    """A person's yes was to the change they read: when the worker works again or the change is
    verified again, it no longer stands. This module is the one writer of ``acknowledged``."""
    store.merge_data(run_id, acknowledged=None)


def approve(
    ctx: RunContext, run_id: str, review: dict[str, Any] | None = None, waivers: dict[str, str] | None = None,
    task: TaskContract | None = None, acknowledge: Any = None, by: str = BY_PERSON,
) -> Run:
    """Approve a green, unchanged diff. Refuses otherwise and says why.

    A run whose verdict needs review is approved only with ``acknowledge``: ``ALL`` (a person who
    read the reasons, or a script's ``--yes``) or a list naming every reason code (the parent over
    MCP). Without it, ``NeedsReview`` lists the reasons; with a list that leaves one out, ``BadInput``
    names the missing codes. Who acknowledged what is recorded on the run."""
    from pathlib import Path

    from bosun.core.errors import InvalidTransition, NeedsReview
    from bosun.engine import locks, verdict
    from bosun.engine.context import load_task
    from bosun.engine.review import open_blocking_findings, validate_review
    from bosun.engine.verifying import recheck_gates

    waivers = waivers or {}
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run.state not in (states.VERIFIED, states.REJECTED):
            raise InvalidTransition(
                f"run {run_id} is {run.state!r}; only a verified run can be approved",
                "run `bosun verify` first" if run.state == states.WORKED else "`bosun show` the run",
            )
        task = task or load_task(run_id)
        refuse_unapprovable(run, task, waivers)  # read-only modes
        gates, tampered = recheck_gates(run, task, ctx.settings(Path(run.repo)))
        if tampered:
            if run.state != states.REJECTED:
                ctx.store.transition(run_id, run.state, states.REJECTED, "records disagree with the verified tree")
            raise Rejected(
                f"cannot approve {run_id}: its records disagree with the tree bosun verified: " + "; ".join(tampered),
                "something rewrote the run's records after verification; run `bosun verify` again",
                code="RECORD_MISMATCH",
            )
        verification = record.read_doc(run_id, record.VERIFICATION, {}) or {}
        _check_waivers_known(gates, waivers)
        waived = [{**g, "waived": True, "waiver_reason": waivers[g["code"]]} if g["code"] in waivers and not g["ok"]
                  else g for g in gates]
        problems = []
        if review is not None:
            validate_review(review)
            blocking = open_blocking_findings(review)
            if blocking:
                problems.append(f"{len(blocking)} open P0..P2 finding(s) in the review: " + blocking[0])
            if str(review.get("verdict", "")).lower() in ("reject", "rejected", "request_changes"):
                problems.append("the review's verdict is " + str(review.get("verdict")))
        judged = verdict.decide(run.with_state(states.VERIFIED), task.model_dump(mode="json"), waived, verification)
        assert judged is not None
        if judged["outcome"] == verdict.REFUSED:
            problems.insert(0, "refused by " + ", ".join(f"{r['code']} ({r['sentence'][:160]})" for r in judged["reasons"][:4]))
        if problems:
            raise Rejected(f"cannot approve {run_id}: " + "; ".join(problems),
                           _refused_hint(run_id, judged, review is not None), code="APPROVE_REFUSED")
        acknowledged: dict[str, Any] | None = None
        # Waivers given with this approval are its own acknowledgment of them (each carries a reason).
        # Not over MCP: there the parent names every code, WAIVED included, in `acknowledge`.
        implicit = {verdict.WAIVED} if waivers and by != BY_PARENT else set()
        if judged["outcome"] == verdict.NEEDS_REVIEW and not set(verdict.codes(judged)) <= implicit:
            reasons = "; ".join(f"{r['code']}: {r['sentence']}" for r in judged["reasons"])
            if acknowledge is None:
                raise NeedsReview(
                    f"run {run_id} needs a person's review before it lands: {reasons}",
                    f"read the reasons (`bosun show {run_id}`, `bosun diff {run_id}`); `bosun approve {run_id}` "
                    "on a terminal asks you [y/N], a script passes --yes (recorded); `bosun integrate` then lands it",
                )
            if acknowledge != ALL:
                missing = [c for c in verdict.missing_acknowledgments(judged, acknowledge) if c not in implicit]
                if missing:
                    raise BadInput(
                        f"run {run_id} needs review; acknowledge every reason to approve it, missing: "
                        + ", ".join(missing),
                        "read each reason to your person; approve with acknowledge=[" +
                        ", ".join(repr(c) for c in verdict.codes(judged)) + "] once they said yes",
                        code="ACKNOWLEDGE_MISSING",
                    )
        if judged["outcome"] == verdict.NEEDS_REVIEW:
            import time

            acknowledged = {"by": by, "codes": verdict.codes(judged), "at": round(time.time(), 3)}
        if waivers:
            gates_doc = {**(record.read_doc(run_id, record.GATES, {}) or {}), "gates": waived}
            record.write_doc(run_id, record.GATES, gates_doc)
        ctx.store.merge_data(
            run_id,
            waivers=[{"code": c, "reason": r} for c, r in waivers.items()],
            review=review,
            approved_diff_sha256=run.diff_sha256,
            approved_tree=run.data.verified_tree,
            acknowledged=acknowledged,
        )
        clear_error(ctx.store, run_id)
        reason = "approved" + (f" with waivers {', '.join(waivers)}" if waivers else "")
        if acknowledged:
            reason += f"; review reasons acknowledged by {by}: " + ", ".join(acknowledged["codes"])
        ctx.store.transition(run_id, run.state, states.APPROVED, reason)
        return ctx.store.require_run(run_id)  # type: ignore[no-any-return]


def _refused_hint(run_id: str, judged: Mapping[str, Any], reviewed: bool) -> str:
    """What to do about a refusal: --waive only when every refusing gate may be waived."""
    from bosun.engine import verdict

    codes = verdict.codes(judged) if judged["outcome"] == verdict.REFUSED else []
    revise = f"revise it with `bosun work {run_id} --resume \"what to fix\"`"
    if not codes:
        return f"address the review's findings: {revise}, then approve again" if reviewed else revise
    if VERIFY_FAILED in codes or UNWAIVABLE_GATES & set(codes):
        return (f"`bosun show {run_id}` says what failed; {revise}, or fix the task and delegate it again "
                "(a failed verification, or a change bosun could not compute faithfully, is never waived)")
    return (f"`bosun show {run_id}` explains each gate; {revise}, or, if the change is right, waive the gate by name: "
            f"`bosun approve {run_id} --waive {codes[0]} --reason \"why it is acceptable\"`")


def _check_waivers_known(gates: list[dict[str, Any]], waivers: dict[str, str]) -> None:
    unknown = set(waivers) - {g["code"] for g in gates}
    if unknown:
        raise BadInput(f"cannot waive unknown gate {sorted(unknown)[0]!r}", "`bosun show` lists this run's gates")
    if any(g["code"] == VERIFY_FAILED and not g["ok"] for g in gates) and VERIFY_FAILED in waivers:
        raise BadInput("VERIFY_FAILED cannot be waived: only a change whose verify commands pass can land",
                       "revise the change with `bosun work RUN --resume \"what to fix\"`, or fix the verify command "
                       "in the task and delegate it again")
    unwaivable = [g["code"] for g in gates if not g["ok"] and g["code"] in waivers and g["code"] in UNWAIVABLE_GATES]
    if unwaivable:
        raise BadInput(f"{unwaivable[0]} cannot be waived: bosun could not compute a faithful change",
                       "discard the run and delegate again")


def ensure_may_land(run: Run) -> None:
    """Integration's check that the run's verdict lets it land: landable, or acknowledged review."""
    from bosun.core.errors import NeedsReview
    from bosun.engine import verdict

    judged = verdict.of_run(run.with_state(states.VERIFIED))
    if verdict.may_land(judged):
        return
    if judged and judged["outcome"] == verdict.NEEDS_REVIEW:
        raise NeedsReview(f"run {run.id} needs a person's review before it lands: " + ", ".join(verdict.codes(judged)),
                          f"`bosun approve {run.id}` after reading the reasons")
    raise Rejected(f"run {run.id} cannot land: its verdict is {verdict.one_line(judged)}",
                   f"`bosun show {run.id}`", code="NOT_LANDABLE")
