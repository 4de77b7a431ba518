"""The verify phase: what bosun finds about one worked run, as one typed value.

``check_worked`` reads the worker's change itself (``read_run_change``), runs the verify commands on
exactly those bytes, runs every gate on that tree, and the self-review when the profile asks for it.
Its ``Checked`` is everything the verdict is built from; ``lifecycle`` records it and moves the run
to ``verified`` (every gate green) or ``rejected``, and ``engine/verdict.py`` reads the record. The
gates come from five places (the worker step's git-dir watch, the read-only violation, the tree's
gates, the answer check, the self-review); they are put together here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.core.changes import GateResult
from bosun.core.quoting import quoted
from bosun.engine import record
from bosun.engine.context import RunContext, read_run_change

if TYPE_CHECKING:
    from bosun.core.contract import TaskContract
    from bosun.store.run import Run


@dataclass
class Checked:
    """What the verify phase found: the tree it verified, its diff, the verification and the gates."""

    tree: str
    diff: bytes
    diff_sha256: str
    files_changed: int
    verification: dict[str, Any]
    gates: list[GateResult] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        return [g.code for g in self.gates if not g.ok]


def check_worked(ctx: RunContext, run: Run, task: TaskContract) -> Checked:
    """Verify exactly the tree bosun computes from the worktree: one call below the engine
    (:func:`bosun.isolation.verification.verify_worked`), then the proof, the record and the gates
    only the engine knows (the answer, the read-only violation, the self-review)."""
    from bosun.core.contract import Mode
    from bosun.engine import approval
    from bosun.engine.baseline import Baseline
    from bosun.engine.verifying import digest, prove
    from bosun.isolation.heldout import rewritten_gate
    from bosun.isolation.verification import verify_worked

    run_id = run.id
    settings = ctx.settings(Path(run.repo))
    wants_proof = settings.baseline != "off" and bool(task.verify) and task.mode == Mode.code
    found = verify_worked(run, task, settings, tamper_gates(run), Baseline(run, task) if wants_proof else None)
    if found.killed:
        system_event(run_id, "stopped processes the worker left running before verification: "
                     + ", ".join(found.killed[:10]))
    violation = approval.read_only_gate(ctx.store, run, task, found.discarded)  # read-only modes land nothing
    verification, gates = found.verification, list(found.gates)
    if found.ran and task.mode == Mode.code and task.verify:
        heldout_doc = found.heldout_doc
        verification.update(prove(verification, task))
        held = found.held
        gates.append(rewritten_gate(task, verification, heldout_doc, held.paths if held else [],
                                    verification.get("baseline") or None, found.kept_tests_changed,
                                    held.excused if held else []))
    record.write_doc(run_id, record.VERIFICATION, verification)
    gates.extend(found.tree_gates)
    gates.extend(g for g in (violation, approval.answer_gate(ctx.store, ctx.store.require_run(run_id), task)) if g)
    checked = Checked(found.change.tree, found.diff, digest(found.diff), len(found.change.changes), verification, gates)
    if not checked.failed and task.mode == Mode.code:
        checked.gates.extend(self_review(ctx, run, task, checked))
    return checked


def system_event(run_id: str, text: str) -> None:
    from bosun.workers.base import ev_message

    record.EventLog(paths.run_dir(run_id) / record.EVENTS).append(ev_message(text, role="system"))


def tamper_gates(run: Run) -> list[GateResult]:
    """USER_GIT_TAMPERED from what the worker step found changed in the user's git dir, and
    USER_FILES_TAMPERED from the modes, owners or flags of the user's files it changed."""
    gates = []
    for code, found, what in (("USER_GIT_TAMPERED", run.data.user_git_tampered, "the repository's git dir"),
                              ("USER_FILES_TAMPERED", run.data.user_files_tampered,
                               "the modes, owners or flags of your files")):
        if not found:
            continue
        detail = f"the worker changed {what} (" + ", ".join(quoted(p) for p in found["changed"][:5]) + ")"
        if found.get("restored"):
            detail += "; bosun restored " + ", ".join(quoted(p) for p in found["restored"][:5])
        if found.get("failed"):
            detail += "; NOT restored: " + ", ".join(quoted(p) for p in found["failed"][:5])
        gates.append(GateResult(code, False, detail))
    return gates


def self_review(ctx: RunContext, run: Run, task: TaskContract, checked: Checked) -> list[GateResult]:
    """Run self-review when the profile asks for it. A reviewer that edits files is a red gate; its
    findings are reasons for review (engine/approval.py)."""
    from bosun.engine.approval import self_review_gate
    from bosun.engine.self_review import run_self_review

    judged = run_self_review(ctx, run, task, checked.diff, checked.diff_sha256, checked.verification)
    if judged is None:
        return []
    ctx.store.merge_data(run.id, review_escalate=judged["review_escalate"], review_reasons=judged["reasons"],
                         review_usage=judged.get("usage"))
    gates = [g for g in [self_review_gate(judged)] if g]
    if read_run_change(run).tree != checked.tree:
        gates.append(GateResult("REVIEW_CHANGED_TREE", False, "the read-only review turn changed files in the worktree"))
    return gates
