"""Fail-to-pass proof: the verify commands run on the start tree too, while the worker works.

A change is *proven* when at least one verify command failed on the start tree (the baseline) and
every one passes on the change. Tests that already passed before prove nothing about the change,
and bosun says so. When the worker changed existing tests, the proof is taken with the original
tests held out (see :mod:`bosun.isolation.heldout`): a rewritten test proves nothing either.

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
FORMAT_VERSION = 1

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
    from bosun.isolation.verify_commands import verify_checkout, verify_commit, verify_confinement

    repo = Path(run.repo)
    # With holdout files, the baseline runs on the full start (the hidden tests included).
    start = (run.data.holdout or {}).get("full_start") or run.start_commit
    from bosun.isolation.run_env import before_verify, environment_identity, with_run_env
    from bosun.isolation.workspace import borrow_checkout, return_checkout

    key = cache_key(tree_of(repo, start), task)
    env_id = environment_identity(run)
    if env_id:  # a baseline made with another set-up (or none) proves nothing about this one
        key = hashlib.sha256(f"{key}\0{env_id}".encode()).hexdigest()
    cached = read_json(_cache_path(key), None)
    if isinstance(cached, dict) and cached.get("format_version") == FORMAT_VERSION:
        return {**cached["verification"], "cached": True}
    workdir = paths.run_dir(run.id) / "baseline"

    def confine_to(wt: Path, home: Path) -> Any:
        before_verify(run, wt)  # the start tree with the run's set-up, as verification will see it
        return verify_confinement(repo, wt, home)

    commands = list(with_run_env(task, run).verify)
    slot = borrow_checkout(run, start)
    if slot is None:
        result = verify_commit(repo, start, commands, workdir, task.title, confine_to=confine_to,
                               should_stop=should_stop)
    else:
        try:
            result = verify_checkout(slot, start, commands, workdir, task.title, confine_to=confine_to,
                                     should_stop=should_stop)
            result["checkout"] = "pool"
        finally:
            return_checkout(run, slot)
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


def _passed(cmd: dict[str, Any]) -> bool:
    return cmd.get("exit_code") == 0 and not cmd.get("timed_out") and not cmd.get("runner_tampered")


def proof(baseline: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """``{proven, failed_before, sentence}`` from the baseline and the verification it is compared with."""
    if baseline is None or not baseline.get("commands"):
        return {"proven": None, "failed_before": [], "sentence": "no baseline was taken: bosun cannot say whether "
                "the tests failed before this change"}
    before = baseline["commands"]
    failed_before = [i for i, c in enumerate(before) if not _passed(c)]
    passes_after = bool(after.get("commands")) and all(_passed(c) for c in after["commands"])
    if not failed_before:
        return {"proven": False, "failed_before": [],
                "sentence": "the tests already passed before this change: they do not prove it"}
    if passes_after:
        return {"proven": True, "failed_before": failed_before, **_flips(before, after["commands"]),
                "sentence": "the tests failed before this change and pass after it"}
    return {"proven": False, "failed_before": failed_before, **_flips(before, after.get("commands", [])),
            "sentence": "the tests failed before this change and still fail after it"}


def _flips(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Test ids that went fail-to-pass and pass-to-fail, where the commands reported test lists."""
    f2p: list[str] = []
    p2f: list[str] = []
    for b, a in zip(before, after, strict=False):
        if "tests" in b and "tests" in a:
            f2p += sorted(set(b["tests"]["failed"]) & set(a["tests"]["passed"]))
            p2f += sorted(set(b["tests"]["passed"]) & set(a["tests"]["failed"]))
    return {"fail_to_pass": f2p[:200], "pass_to_fail": p2f[:200]}
