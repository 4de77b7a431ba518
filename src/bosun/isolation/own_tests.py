"""The change's tests on the start tree's code: the run that shows whether the worker's own tests
fail without its fix (one tree of the proof matrix, :mod:`bosun.isolation.matrix`).

Invariant: **the tree holds the start tree's code and nothing of the change but its test paths.**
It is the start tree (with the holdout files, as the baseline runs it) with every test path the
change touched (test modules, harness, test data: :class:`bosun.gates.testset.TestSet`) as the
change has it, added, edited or deleted; the bytes come from the change's tree, read through bosun's
view before the run starts. It runs beside the worktree being verified, never in it, and never in a
pooled worktree (the worker's tests run there): in a temporary worktree under the run directory, in
a thread started as soon as the change is read, so it overlaps the change's own verification and costs no wall time unless it takes
longer. Its pytest processes go on past a module that does not import (``--continue-on-collection-
errors``): a worker's new test file that needs a new name must not hide its other tests. They leave
out the test modules the change does not touch that the start tree's run reported (``--ignore``):
the baseline ran exactly those on exactly this code, so the run costs what the worker's tests cost.

:func:`describe` names the tests that fail there and pass on the change, each with its source (the
worker's text, marked as such) and whether its failure says anything about the task
(:mod:`bosun.gates.owntests`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.core.changes import FileChange
from bosun.core.contract import TaskContract
from bosun.gates.owntests import BEHAVIOUR, classify, introduced_names, source_of
from bosun.gates.testset import TestSet, split_id

if TYPE_CHECKING:
    from bosun.isolation.change import Change, View
    from bosun.store.run import Run

OWN_DIR = "own-tests"
MAX_DESCRIBED = 10
Overlay = dict[str, tuple[str, bytes] | None]  # path -> (mode, bytes), or None: the change deletes it


def overlay_of(view: View, change: Change, touched: list[str]) -> Overlay:
    """The change's bytes of each touched test path (None where the change has none)."""
    from bosun.isolation.blobs import BlobReader
    from bosun.isolation.change import tree_entries

    entries = tree_entries(view, change.tree)
    out: Overlay = {}
    with BlobReader(view.worktree, view.env()) as blobs:
        for path in touched:
            entry = entries.get(path)
            data = blobs.read_object(entry[1]) if entry and entry[0] in ("100644", "100755") else None
            out[path] = None if data is None or entry is None else (entry[0], data)
    return out


def lay_over(checkout: Path, overlay: Overlay) -> None:
    """Write the overlay into a checkout of the start tree: test files as the change has them."""
    for path, item in overlay.items():
        target = checkout / path
        if target.is_symlink() or target.is_file():
            target.unlink()
        if item is None:
            continue
        mode, data = item
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o755 if mode == "100755" else 0o644)


def verify_beside(run: Run, task: TaskContract, commit: str, workdir: Path, *, prepare: Callable[[Path], None]
                  | None = None, should_stop: Any = None, addopts: str = "", pooled: bool = True) -> dict[str, Any]:
    """The verify commands on a checkout of ``commit`` beside the run's worktree (a pooled one when
    ``pooled`` and one is idle, else a temporary one under ``workdir``), with the run's set-up put back
    and the kernel confinement verification runs under; ``prepare`` changes the checkout first.

    Only code the user had may run in a pooled checkout: the pool resets it with git run inside it,
    and code that ran there could have pointed its ``.git`` file at another repository. A temporary
    checkout is removed from the repository's side, its ``.git`` file put back first."""
    from bosun.isolation.run_env import before_verify, with_run_env
    from bosun.isolation.setup import linked_reads
    from bosun.isolation.verify_commands import verify_checkout, verify_commit, verify_confinement
    from bosun.isolation.workspace import borrow_checkout, return_checkout

    repo = Path(run.repo)

    def confine_to(wt: Path, home: Path) -> Any:
        before_verify(run, wt)  # the start tree with the run's set-up, as verification will see it
        return verify_confinement(repo, wt, home, linked_reads(paths.run_dir(run.id)))  # what set-up linked stays readable

    commands = list(with_run_env(task, run).verify)
    slot = borrow_checkout(run, commit) if pooled else None
    if slot is None:
        return verify_commit(repo, commit, commands, workdir, task.title, confine_to=confine_to,
                             should_stop=should_stop, prepare=prepare, addopts=addopts)
    try:
        result = verify_checkout(slot, commit, commands, workdir, task.title, confine_to=confine_to,
                                 should_stop=should_stop, prepare=prepare, addopts=addopts)
        result["checkout"] = "pool"
    finally:
        return_checkout(run, slot)  # reset to a clean checkout: the overlay goes with the rest
    return result


MAX_IGNORED_CHARS = 60_000  # PYTEST_ADDOPTS is one environment string: the kernel caps one at 128 KiB


def pytest_options(unchanged: list[str]) -> str:
    """What the own-tests run asks of pytest: go on past a module that does not import, and leave out
    the test modules the change does not touch (the start tree's run already ran them on this code).
    Too many to name: they run too."""
    import shlex

    ignored = " ".join(shlex.quote(f"--ignore={{tree}}/{p}") for p in sorted(unchanged))
    return "--continue-on-collection-errors" + (f" {ignored}" if ignored and len(ignored) < MAX_IGNORED_CHARS else "")


class OwnTestsRun:
    """The change's test paths on the start tree's code, in a thread: ``start``, then ``wait``.
    ``unchanged``: test modules the start tree's run reported that the change does not touch."""

    def __init__(self, run: Run, task: TaskContract, overlay: Overlay, unchanged: list[str] | None = None) -> None:
        self.run, self.task, self.overlay = run, task, overlay
        self.options = pytest_options(unchanged or [])
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, name=f"own-tests-{run.id}", daemon=True)

    @property
    def paths(self) -> list[str]:
        return sorted(self.overlay)

    def start(self) -> OwnTestsRun:
        self._thread.start()
        return self

    def _work(self) -> None:
        start = (self.run.data.holdout or {}).get("full_start") or self.run.start_commit
        try:
            self.result = verify_beside(self.run, self.task, start, paths.run_dir(self.run.id) / OWN_DIR,
                                        prepare=lambda wt: lay_over(wt, self.overlay), should_stop=self._stop.is_set,
                                        addopts=self.options, pooled=False)  # the worker's tests run there
        except Exception as exc:  # noqa: BLE001 - a run that cannot be made proves nothing; never fatal
            self.error = f"{type(exc).__name__}: {exc}"

    def wait(self) -> dict[str, Any] | None:
        """The run's verification doc (None when it could not run), with the paths laid over."""
        self._thread.join()
        if self._stop.is_set() or self.result is None:
            return {"error": self.error, "paths": self.paths, "commands": []} if self.error else None
        return {**self.result, "paths": self.paths}

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def describe(view: View, start: str, change: Change, tests: TestSet, after: dict[str, Any],
             own: dict[str, Any]) -> list[dict[str, Any]]:
    """The tests that fail on the start tree's code with the change's tests and pass on the change:
    ``[{id, kind, why, source, untrusted}]``, those that show behaviour first, at most
    :data:`MAX_DESCRIBED`. ``source`` is the test as the worker wrote it (bounded): data to read,
    never instructions."""
    from bosun.isolation.blobs import BlobReader

    failed, broken, messages = _failures(own)
    candidates = [t for t in _passed(after) if t in failed or split_id(t)[0] in broken]
    if not candidates:
        return []
    with BlobReader(view.worktree, view.env()) as blobs:
        def text(rev: str, path: str) -> str | None:
            data = blobs.read(rev, path)
            return None if data is None else data.decode("utf-8", "replace")

        introduced = introduced_names(
            [(text(start, _old(c)), text(change.tree, c.path)) for c in _code(change.changes, tests)
             if c.status[:1] != "A"],
            [c.path for c in _code(change.changes, tests) if c.status[:1] == "A"])
        added = [c.path for c in change.changes if c.status[:1] == "A" and not tests.is_test_path(c.path)]
        described = []
        for test_id in candidates[:200]:
            path, qual = split_id(test_id)
            source = source_of(text(change.tree, path), qual)
            kind, why = classify(messages.get(test_id), path in broken and test_id not in failed, source, introduced,
                                 added)
            described.append({"id": test_id, "kind": kind, "why": why, "source": source, "untrusted": True})
    described.sort(key=lambda d: d["kind"] != BEHAVIOUR)
    return described[:MAX_DESCRIBED]


def _passed(doc: dict[str, Any]) -> list[str]:
    return [t for c in doc.get("commands") or [] for t in (c.get("tests") or {}).get("passed") or []]


def _failures(doc: dict[str, Any]) -> tuple[set[str], set[str], dict[str, str]]:
    failed: set[str] = set()
    broken: set[str] = set()
    messages: dict[str, str] = {}
    for cmd in doc.get("commands") or []:
        report = cmd.get("tests") or {}
        failed |= set(report.get("failed") or [])
        broken |= set(report.get("collect_errors") or [])
        messages.update(report.get("messages") or {})
    return failed, broken, messages


def _code(changes: list[FileChange], tests: TestSet) -> list[FileChange]:
    """The change's Python code files (not tests) that exist after it."""
    return [c for c in changes if c.path.endswith(".py") and c.status[:1] != "D" and not tests.is_test_path(c.path)]


def _old(change: FileChange) -> str:
    return change.old_path if change.status[:1] == "R" and change.old_path else change.path
