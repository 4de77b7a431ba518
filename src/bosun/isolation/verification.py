"""Verification of a worked run on exactly the bytes that will be merged: the one call the verify
phase makes below the engine (``verify_worked``), and what it returns (``TreeVerified``).

Invariant: **the tree bosun computed is what gets verified, gated, approved and merged.** Nothing
else the worker wrote can reach a verify command, and nothing stored on disk decides approval on its
own. In order:

1. Nothing of the worker's may still be running: processes that live in, or hold files of, the
   worktree are killed first, and verification refuses while any survives.
2. A read-only run (``review``, ``ask``) that wrote anyway has its writes taken out: the worktree is
   put back to the start tree before the change is read, so its change is always empty.
3. bosun's own view computes the change as a tree (:mod:`bosun.isolation.change`); what cannot be
   represented faithfully (a replaced ``.git`` pointer, a nested repository) fails closed and is
   never verified.
4. The worktree is made to hold exactly that tree (every other file removed, ignored ones
   included), and the verify commands run there with a fresh HOME made after the worker stopped;
   then the other trees of the proof matrix (:mod:`bosun.isolation.matrix`): the original tests on
   the change's code, the change's tests on the start tree's code, each compared test by test with
   the start tree's run.
5. Gates judge the tree (file contents come from its blobs, not from disk), handed the test files
   the runners reported and how the original tests ran. ``approve`` recomputes them from the
   recorded tree id and verification (:func:`gates_for_tree`).

The engine gives the inputs (the run, its task, its settings, the refusals it already knows, the
start tree's run as it takes it) and gets back one value to prove, record and judge
(engine/checking.py); it does not reach the tree itself in between.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.changes import GateResult
from bosun.core.config import Settings
from bosun.core.contract import Mode, TaskContract
from bosun.gates.testset import TestSet
from bosun.isolation.change import Change, View, tree_changes, tree_diff
from bosun.isolation.run_env import view_of

if TYPE_CHECKING:
    from bosun.isolation.heldout import HeldOut
    from bosun.isolation.matrix import Before, Matrix
    from bosun.store.run import Run


@dataclass
class TreeVerified:
    """What verification found on the worked tree, before the engine proves and records it.

    ``gates`` decided what ran (the change's own problems, the refusals handed in, a changed
    environment, a touched holdout file); ``tree_gates`` are every gate judged on the tree. The
    verification doc has no proof yet: the proof waits for the baseline, which is the engine's."""

    change: Change
    diff: bytes
    verification: dict[str, Any]
    gates: list[GateResult] = field(default_factory=list)
    tree_gates: list[GateResult] = field(default_factory=list)
    held: HeldOut | None = None
    heldout_doc: dict[str, Any] | None = None  # the run with the original tests held out, as it ran
    kept_tests_changed: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)
    discarded: Change | None = None  # a read-only run's writes, taken out before the change was read
    tests: TestSet = field(default_factory=TestSet)  # the test files, as the runners reported them

    @property
    def ran(self) -> bool:
        """The verify commands ran on the tree (nothing refused it first)."""
        return not self.verification.get("skipped")


def verify_worked(run: Run, task: TaskContract, settings: Settings, refusals: list[GateResult],
                  before: Before | None = None) -> TreeVerified:
    """Stop what the worker left running, read its change, verify exactly those bytes and gate them.
    ``before`` is the start tree's run (the baseline) as the engine takes it, None without one.

    Fail closed: with ``refusals`` (or problems in the change itself) no verify command runs."""
    from bosun.isolation.change import read_change
    from bosun.isolation.lingering import stop_lingering

    window = run.data.worker_window
    killed = stop_lingering(Path(run.worktree), (window[0], window[1]) if window else None)
    view = view_of(run)  # one view for the whole verification (a run prepared before views gets it here)
    discarded = _take_out_read_only_writes(run, task, view)
    change = read_change(view)
    verification, gates, matrix = verify_change(run, task, change, refusals, view, before)
    diff, tree_gates = gates_for_tree(run, task, settings, change.tree, verification,
                                      on_disk=not verification.get("skipped"), scanned=change)
    tests = matrix.tests if matrix else TestSet()
    return TreeVerified(change, diff, verification, gates, tree_gates, matrix.held if matrix else None,
                        matrix.heldout if matrix else None, _kept_tests_changed(task, change, tests), killed,
                        discarded, tests)


def _take_out_read_only_writes(run: Run, task: TaskContract, view: View) -> Change | None:
    """A read-only run's change when it has one: the worktree goes back to exactly the start tree
    (ignored files included), so nothing the worker wrote can be verified, approved or merged, and a
    later ``work --resume`` starts clean. None for code runs and for read-only runs that wrote nothing."""
    from bosun.isolation.change import materialize, read_change

    if task.mode == Mode.code:
        return None
    change = read_change(view)
    if change.problems or not change.changes:
        return None  # a change bosun cannot represent is refused on its own, before anything runs
    materialize(view, view.git(["rev-parse", f"{run.start_commit}^{{tree}}"]).strip().decode())
    return change


def problem_gates(change: Change) -> list[GateResult]:
    return [GateResult(p.code, False, p.detail) for p in change.problems]


def verify_change(
    run: Run, task: TaskContract, change: Change, refusals: list[GateResult], view: View,
    before: Before | None = None,
) -> tuple[dict[str, Any], list[GateResult], Matrix | None]:
    """Run the verify commands on exactly the change (plus the holdout files), and the other trees of
    the proof matrix. Returns the verification doc (the change's run, with the start tree's, the
    held-out originals' and the own tests' beside it), the gates that decided what ran, and the
    matrix when it ran.

    Fail closed: with ``refusals`` (or problems in the change itself) nothing is run at all.
    """
    from bosun.isolation.heldout import holdout_gate
    from bosun.isolation.matrix import run_matrix
    from bosun.isolation.run_env import environment_gates

    refusals = problem_gates(change) + refusals + environment_gates(run)
    if refusals:
        skipped: dict[str, Any] = {"passed": False if task.verify else None, "commands": [], "tree": change.tree,
                                   "skipped": "not run: " + "; ".join(g.detail for g in refusals)}
        return skipped, refusals, None
    gates = holdout_gate(task, change.changes)
    if not all(g.ok for g in gates):
        return {"passed": False, "commands": [], "tree": change.tree, "skipped": gates[0].detail}, gates, None
    matrix = run_matrix(run, task, change, view, before)
    verification = matrix.change
    if matrix.baseline is not None:
        verification["baseline"] = matrix.baseline
    if matrix.held is not None and matrix.heldout is not None:
        held = matrix.held
        verification["heldout"] = {**matrix.heldout, "tree": held.tree, "paths": held.paths, "excused": held.excused}
    if matrix.own is not None:
        verification["own"] = matrix.own
    verification["test_files"] = sorted(matrix.tests.reported)
    verification["tree"] = change.tree
    return verification, gates, matrix


def _kept_tests_changed(task: TaskContract, change: Change, tests: TestSet) -> list[str]:
    """Existing test files the change edits, renames or deletes (refused under ``tests: keep``)."""
    if task.tests != "keep":
        return []
    return sorted({p for c in change.changes if c.status[:1] != "A"
                   for p in (c.path, c.old_path) if p and tests.is_test_path(p)})


def gates_for_tree(
    run: Run,
    task: TaskContract,
    settings: Settings,
    tree: str,
    verification: dict[str, Any],
    *,
    on_disk: bool,
    scanned: Change | None = None,
) -> tuple[bytes, list[GateResult]]:
    """The diff and gates of ``start..tree``, file contents read from the tree's blobs.

    ``on_disk``: the worktree holds exactly ``tree`` right now (after ``materialize``), so symlinks may
    be resolved there; at approve time it may not, and only the tree is judged.
    ``scanned``: the scan that built ``tree`` moments ago in this process; its diff and files are
    those of ``start..tree`` (the scan diffs the same two trees through the same view), so they are
    not computed again. ``approve`` passes none and recomputes them from the tree.
    """
    from bosun.isolation.blobs import BlobReader
    from bosun.isolation.gating import evaluate

    view = view_of(run)
    if scanned is not None and scanned.tree == tree and view.start == run.start_commit:
        diff, changes = scanned.diff, scanned.changes
    else:
        diff = tree_diff(view, run.start_commit, tree)
        changes = tree_changes(view, run.start_commit, tree)
    links = {c.path for c in changes if c.new_mode == "120000"}
    new: dict[str, bytes | None] = {}  # several gates read the same file: it is read once
    old: dict[str, bytes | None] = {}

    # Old and new bytes come through one `cat-file --batch` of bosun's view (never the worktree's git).
    with BlobReader(view.worktree, view.env()) as blobs:
        def new_bytes(path: str) -> bytes | None:
            if path in links:
                return None
            if path not in new:
                new[path] = blobs.read(tree, path)
            return new[path]

        def base_bytes(path: str) -> bytes | None:
            if path not in old:
                old[path] = blobs.read(run.start_commit, path)
            return old[path]

        gates = evaluate(run, task, settings, diff, changes, verification, new_bytes=new_bytes,
                         base_bytes=base_bytes, on_disk=on_disk)
    return diff, gates
