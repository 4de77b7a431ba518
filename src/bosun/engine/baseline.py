"""The start tree's run (the *baseline*): the verify commands on the start tree, while the worker works.

It is the "before" of the proof (engine/proof.py judges it test by test against the other trees of
the proof matrix, isolation/matrix.py), and its runners' reports name test files the change may
delete or rename.

The baseline runs in a detached checkout of the start commit (an idle worktree of the warm pool
when there is one, else a new worktree), in a thread started when the worker starts, so it costs no
wall time when the worker takes longer than the tests. A delegation does not wait for it when the
worker ends: verification of the change runs while the baseline finishes, and the proof waits for it
(:func:`settle`) only once both are needed. Its result is cached
per start tree and commands (``$BOSUN_HOME/baselines``): the same task run again, or a plan's
tasks on the same base, reuse it. The baseline directory lives under the run directory, outside
anything the worker's sandbox lets it write.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.core.contract import TaskContract
from bosun.core.fileio import read_json, write_json_atomic

if TYPE_CHECKING:
    from bosun.store.run import Run

BASELINE = "baseline.json"
FORMAT_VERSION = 2  # 2: per-test reports name each test's file (repository-relative ids)

# Baselines this process started and has not recorded yet, by run id (see ``settle``).
_running: dict[str, BaselineJob] = {}


def cache_key(start_tree: str, task: TaskContract) -> str:
    commands = [c.model_dump(mode="json") for c in task.verify]
    raw = json.dumps({"tree": start_tree, "commands": commands}, sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()


def _cache_path(key: str) -> Path:
    # Under BOSUN_HOME rather than the shared cache dir: a baseline vouches for a proof, so it lives
    # where bosun's other records do (and where the worker's sandbox cannot write).
    return paths.bosun_home() / "baselines" / f"{key}.json"


def run_baseline(run: Run, task: TaskContract, should_stop: Any = None) -> dict[str, Any] | None:
    """Run the verify commands on the run's start commit (cached); returns the verification doc."""
    from bosun.isolation.git import tree_of
    from bosun.isolation.own_tests import verify_beside
    from bosun.isolation.run_env import environment_identity

    repo = Path(run.repo)
    # With holdout files, the baseline runs on the full start (the hidden tests included).
    start = (run.data.holdout or {}).get("full_start") or run.start_commit
    key = cache_key(tree_of(repo, start), task)
    env_id = environment_identity(run)
    if env_id:  # a baseline made with another set-up (or none) proves nothing about this one
        key = hashlib.sha256(f"{key}\0{env_id}".encode()).hexdigest()
    cached = read_json(_cache_path(key), None)
    if isinstance(cached, dict) and cached.get("format_version") == FORMAT_VERSION:
        return {**cached["verification"], "cached": True}
    result = verify_beside(run, task, start, paths.run_dir(run.id) / "baseline", should_stop=should_stop)
    if should_stop is not None and should_stop():
        return None  # stopped half-way: proves nothing, and is never cached
    write_json_atomic(_cache_path(key), {"format_version": FORMAT_VERSION, "verification": result})
    return result


class BaselineJob:
    """The baseline in a background thread; ``wait()`` writes ``baseline.json`` in the run directory."""

    def __init__(self, run: Run, task: TaskContract) -> None:
        self.run = run
        self.task = task
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, name=f"baseline-{run.id}", daemon=True)

    def start(self) -> BaselineJob:
        _running[self.run.id] = self
        self._thread.start()
        return self

    def _work(self) -> None:
        try:
            self.result = run_baseline(self.run, self.task, should_stop=self._stop.is_set)
        except Exception as exc:  # noqa: BLE001 - a baseline that cannot run proves nothing; never fatal
            self.error = f"{type(exc).__name__}: {exc}"

    def stop(self) -> None:
        """Stop the baseline (its commands' process groups are killed) and wait for its thread: a worker
        that failed or was cancelled will not be verified, and nothing of the baseline may outlive it."""
        self._stop.set()
        self._thread.join()
        _running.pop(self.run.id, None)

    def wait(self) -> dict[str, Any]:
        self._thread.join()
        doc = {"format_version": FORMAT_VERSION, "verification": self.result, "error": self.error}
        write_json_atomic(paths.run_dir(self.run.id) / BASELINE, doc)
        _running.pop(self.run.id, None)
        return doc


def retake_baseline(run: Run, task: TaskContract) -> dict[str, Any] | None:
    """The baseline once more, in this thread (its first try failed); recorded like the first."""
    job = BaselineJob(run, task)
    job._work()  # in this thread: the verification that asks for it waits anyway
    doc = {"format_version": FORMAT_VERSION, "verification": job.result, "error": job.error, "retaken": True}
    write_json_atomic(paths.run_dir(run.id) / BASELINE, doc)
    return job.result


def start_baseline(run: Run, task: TaskContract, setting: str) -> BaselineJob | None:
    """Start the baseline unless it is off, the task has nothing to verify, or it was taken already."""
    if setting == "off" or not task.verify or task.mode.value != "code":
        return None
    existing = read_json(paths.run_dir(run.id) / BASELINE, None)
    if isinstance(existing, dict) and existing.get("verification"):
        return None
    return BaselineJob(run, task).start()


def settle(run_id: str) -> None:
    """Wait for the baseline this process is still taking for ``run_id``, if any, and record it.

    ``work(defer_baseline=True)`` leaves the baseline running when the worker ends, so that
    verification of the change overlaps it (a fast worker finishes before the tests on the start
    tree do); whoever needs the baseline, or ends the delegation, settles it."""
    job = _running.get(run_id)
    if job is not None:
        job.wait()


def stop_running(run_id: str) -> None:
    """Stop the baseline this process is still taking for ``run_id``, if any (nothing recorded)."""
    job = _running.get(run_id)
    if job is not None:
        job.stop()


def read_baseline(run_id: str) -> dict[str, Any] | None:
    settle(run_id)
    doc = read_json(paths.run_dir(run_id) / BASELINE, None)
    return doc.get("verification") if isinstance(doc, dict) else None


class Baseline:
    """The start tree's run as verification takes it (``isolation.matrix.Before``): ``ready`` while it
    may still run, ``wait`` for it. A baseline that was taken but failed to run (git, the disk) is
    taken again once on ``wait``: without it the change could not be proven, and would wait for a
    person for no fault of its own."""

    def __init__(self, run: Run, task: TaskContract) -> None:
        self.run, self.task = run, task
        self._waited: dict[str, Any] | None = None
        self._done = False

    def ready(self) -> dict[str, Any] | None:
        if self._done:
            return self._waited
        job = _running.get(self.run.id)
        if job is not None:
            return job.result if not job._thread.is_alive() else None
        doc = read_json(paths.run_dir(self.run.id) / BASELINE, None)
        return doc.get("verification") if isinstance(doc, dict) else None

    def wait(self) -> dict[str, Any] | None:
        if not self._done:
            found = read_baseline(self.run.id)
            if found is None and (read_json(paths.run_dir(self.run.id) / BASELINE, {}) or {}).get("error"):
                found = retake_baseline(self.run, self.task)
            self._waited, self._done = found, True
        return self._waited
