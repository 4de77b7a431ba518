"""The proof matrix: the trees verification runs the verify commands on, compared test by test.

=============  =============  ===========================  ==================================  =====================
tree           code           tests                        where, when                         what it answers
=============  =============  ===========================  ==================================  =====================
start          start          start                        a checkout beside the worktree,     which tests failed
                                                           while the worker works              before the change
                                                           (engine/baseline.py)
change         change         change                       the run's worktree                  what passes on the
                                                                                               bytes that land
held-out       change         start's, on every test path  the run's worktree, after the       do the original tests
                              the change touched           change (isolation/heldout.py)       still pass; did a test
                                                                                               deleted or rewritten
                                                                                               check behaviour that
                                                                                               changed
own tests      start          change's, on every test      a checkout beside the worktree,     do the worker's tests
                              path the change touched      concurrently with the change        fail without its code
                                                           (isolation/own_tests.py)
=============  =============  ===========================  ==================================  =====================

Invariant: **every tree is built by bosun from git objects, and every outcome is the runner's own
report of that run** (:mod:`bosun.isolation.test_reports`). Which files are tests is what those
reports name (:class:`bosun.gates.testset.TestSet`), so the held-out and own-tests trees are built
from the files that ran. The reports of the change and of a finished baseline are read before those
trees are built; when the baseline finishes later and names a test file the first build could not
know, the tree is built and run again: never judged on a partial notion of what a test is.

The engine judges the proof from these runs (engine/proof.py); gates read them as data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from bosun.core.contract import Mode, TaskContract
from bosun.gates.testset import TestSet

if TYPE_CHECKING:
    from bosun.isolation.change import Change, View
    from bosun.isolation.heldout import HeldOut
    from bosun.isolation.own_tests import OwnTestsRun
    from bosun.store.run import Run


class Before(Protocol):
    """The start tree's run (the baseline) as the engine takes it: ``ready`` without waiting."""

    def ready(self) -> dict[str, Any] | None: ...

    def wait(self) -> dict[str, Any] | None: ...


@dataclass
class Matrix:
    """The runs of one verification: the change's doc, and the other trees' where they ran."""

    change: dict[str, Any]
    tests: TestSet
    baseline: dict[str, Any] | None = None
    held: HeldOut | None = None
    heldout: dict[str, Any] | None = None
    own: dict[str, Any] | None = None


def run_matrix(run: Run, task: TaskContract, change: Change, view: View, before: Before | None) -> Matrix:
    """Verify the change and the trees built from it; the worktree holds exactly the change after."""
    from bosun.isolation.change import materialize
    from bosun.isolation.heldout import with_holdout
    from bosun.isolation.run_env import run_verify_commands

    hold = run.data.holdout or {}
    hidden, full_start = hold.get("paths") or [], hold.get("full_start") or run.start_commit
    code = task.mode == Mode.code
    known = before.ready() if before is not None else None
    own = _start_own(run, task, view, change, TestSet.of(known), known) if code and before is not None else None
    try:
        materialize(view, with_holdout(view, change.tree, full_start, hidden))
        after = mark_tampered(run_verify_commands(task, run, view.worktree), change)
        matrix = Matrix(after, TestSet.of(known, after))
        if code and after["passed"]:
            _held_out(matrix, run, task, view, change, full_start, hidden)
        matrix.baseline = before.wait() if before is not None else None
        matrix.tests = TestSet.of(matrix.baseline, after, matrix.heldout)
        if code and after["passed"] and _touched(change, matrix.tests) != (matrix.held.paths if matrix.held else []):
            _held_out(matrix, run, task, view, change, full_start, hidden)  # the baseline named more tests
    except BaseException:
        if own is not None:
            own.stop()  # nothing of this verification outlives it
        raise
    finally:
        materialize(view, change.tree)  # holdout files and original tests leave the worktree again
    matrix.own = _finish_own(own, matrix, run, task, view, change)
    matrix.tests = TestSet.of(matrix.baseline, after, matrix.heldout, matrix.own)
    return matrix


def _touched(change: Change, tests: TestSet) -> list[str]:
    from bosun.isolation.heldout import touched_test_paths

    return touched_test_paths(change.changes, tests)


def _held_out(matrix: Matrix, run: Run, task: TaskContract, view: View, change: Change, full_start: str,
              hidden: list[str]) -> None:
    """The change's code with the original tests put back, run in the worktree."""
    from bosun.isolation.change import materialize
    from bosun.isolation.heldout import heldout_tree, with_holdout
    from bosun.isolation.run_env import run_verify_commands

    matrix.held = heldout_tree(view, run.start_commit, change.tree, change.changes, matrix.tests)
    matrix.heldout = None
    if matrix.held is not None:
        materialize(view, with_holdout(view, matrix.held.tree, full_start, hidden))
        matrix.heldout = mark_tampered(run_verify_commands(task, run, view.worktree), change)


def mark_tampered(doc: dict[str, Any], change: Change) -> dict[str, Any]:
    """A verify command whose test runner the change's code tampered with did not pass, whatever it
    exited with: its entry says why (``runner_tampered``) and the doc does not pass. The proof reads
    the same mark (core/outcomes.py), so such a run is never proven."""
    from bosun.gates.runner_tamper import runner_findings

    changed = {c.path for c in change.changes if c.status[:1] != "D"}
    added = {c.path for c in change.changes if c.status[:1] in ("A", "R", "C")}
    for cmd in doc.get("commands") or []:
        refusals, _ = runner_findings([cmd], changed, added)
        if refusals:
            cmd["runner_tampered"] = refusals[:5]
            doc["passed"] = False
    return doc


def _wants_own(task: TaskContract, change: Change, tests: TestSet, baseline: dict[str, Any] | None) -> list[str]:
    """The test paths to lay over the start tree, when the worker's tests may be what proves the change:
    the task asks for a proof, the change adds or edits a test path, and the start tree's run did
    not already fail (then the task's own tests decide)."""
    if task.proof != "required" or (baseline is not None and baseline.get("passed") is False):
        return []
    touched = _touched(change, tests)
    kept = {c.path for c in change.changes if c.status[:1] != "D"}
    return touched if any(p in kept for p in touched) else []


def _start_own(run: Run, task: TaskContract, view: View, change: Change, tests: TestSet,
               known: dict[str, Any] | None) -> OwnTestsRun | None:
    from bosun.isolation.own_tests import OwnTestsRun, overlay_of

    paths = _wants_own(task, change, tests, known)
    return OwnTestsRun(run, task, overlay_of(view, change, paths), _unchanged(tests, paths)).start() if paths else None


def _unchanged(tests: TestSet, touched: list[str]) -> list[str]:
    """Test modules the runners reported that the change leaves as they were."""
    return sorted(tests.reported - set(touched))


def _finish_own(own: OwnTestsRun | None, matrix: Matrix, run: Run, task: TaskContract, view: View,
                change: Change) -> dict[str, Any] | None:
    """The own-tests run, once the change passed: waited for when it ran on the right test paths,
    run again when the reports named others, and its tests described (isolation/own_tests.py)."""
    from bosun.isolation.own_tests import OwnTestsRun, describe, overlay_of

    ready = matrix.change["passed"] and matrix.baseline is not None  # no baseline: nothing to compare with
    paths = _wants_own(task, change, matrix.tests, matrix.baseline) if ready else []
    if own is not None and own.paths != paths:
        own.stop()  # not needed after all, or laid over the wrong paths
        own = None
    if own is None and paths:
        unchanged = _unchanged(TestSet.of(matrix.baseline), paths)
        own = OwnTestsRun(run, task, overlay_of(view, change, paths), unchanged).start()
    doc = own.wait() if own is not None else None
    if doc is not None and doc.get("commands"):
        doc["tests"] = describe(view, run.start_commit, change, TestSet.of(matrix.baseline, matrix.change, doc),
                                matrix.change, doc)
    return doc
