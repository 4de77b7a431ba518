"""What the kernel sandbox adds to starting a worker process, side by side with it off.

    .venv/bin/python bench/sandbox_start.py            # 100 rounds, prints medians
    .venv/bin/python bench/sandbox_start.py --runs 30

Each round starts ``/bin/true`` the way ``proc.run_supervised`` does, once for every mechanism this
machine has, in rotating order so drift in machine load hits all alike:

* ``off``: no confinement (the subreaper's containment sweep still runs, as for every step);
* ``landlock``: Landlock alone (a machine without user namespaces or bwrap), the worker's rules;
* ``namespaces``: the default where the machine allows it: bwrap's mount, PID, IPC and user
  namespaces with the worker's view (bosun's state, the repository and the credential stores hidden,
  the worktree, HOME and TMPDIR writable) and Landlock's TCP rules for its provider's port.

Two figures per mechanism: the **start** (from building the confinement to the end of the child,
``prepare`` + ``spawn`` + wait: /bin/true itself takes ~1 ms) and the **whole step** (the
``run_supervised`` call, with its containment work). The target: the sandbox adds under 50 ms to a
worker's start. Exit status 1 means it was missed.

Then the mode watch around every worker turn (``isolation/modewatch.py``): one snapshot of
``--tree`` (default: this repository, its ``.venv`` included) before the turn, one comparison after.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bosun import proc
from bosun.sandbox import PROBE_ENV, Confinement, prepare, probe, spawn
from bosun.sandbox.credentials import credential_stores

TARGET_MS = 50.0


def _start(cwd: Path, env: dict[str, str], confine: Confinement | None) -> float:
    """prepare + spawn + wait, as run_supervised does it, without its supervision."""
    t = time.perf_counter()
    if confine is None:
        child = subprocess.Popen(["/bin/true"], cwd=cwd, env=env, stdin=subprocess.DEVNULL, close_fds=True,
                                 start_new_session=True)
        child.wait()
    else:
        prepared = prepare(confine)
        argv = prepared.command(["/bin/true"], cwd)

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, close_fds=True,
                                    start_new_session=True)

        child = spawn(prepared, start)
        prepared.close()
        child.wait()
        prepared.release()
    assert child.returncode == 0, argv if confine else "/bin/true"
    return (time.perf_counter() - t) * 1000


def _step(cwd: Path, env: dict[str, str], confine: Confinement | None) -> float:
    t = time.perf_counter()
    res = proc.run_supervised(["/bin/true"], cwd=cwd, env=env, timeout_s=30, confine=confine, stdout_grace_s=0.5)
    assert res.exit_code == 0, res.output_tail()
    return (time.perf_counter() - t) * 1000


def _timed(mechanism: str, fn, *args: object) -> float:  # type: ignore[no-untyped-def]
    if mechanism == "landlock":
        os.environ[PROBE_ENV] = "landlock"
    try:
        return float(fn(*args))
    finally:
        os.environ.pop(PROBE_ENV, None)


def _mode_watch(tree: Path) -> None:
    from bosun.isolation import modewatch

    takes, compares, entries = [], [], 0
    for _ in range(5):
        t = time.perf_counter()
        snap = modewatch.take((tree,))
        takes.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        assert not modewatch.changes(snap)
        compares.append((time.perf_counter() - t) * 1000)
        entries = len(snap)
    print(f"mode watch, {entries} entries under {tree}: before the turn median {statistics.median(takes):.1f} ms, "
          f"after it {statistics.median(compares):.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    args = ap.parse_args()
    support = probe()
    if support.mechanism == "none":
        print("this machine has neither Landlock nor namespaces: nothing to measure")
        return 0
    mechanisms = ["off", "landlock"] + (["namespaces"] if support.namespaces else [])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        state, repo = root / "bosun-home", root / "repo"
        dirs = [state / "worktrees" / "run", state / "runs" / "run" / "home", state / "runs" / "run" / "tmp"]
        for d in [*dirs, repo / ".git"]:
            d.mkdir(parents=True)
        confine = Confinement(writable=tuple(dirs), deny_read=(repo, state, *credential_stores()),
                              readable=(repo / ".git",), connect_ports=(443,))
        env = proc.allowlisted_env()
        confines = {"off": None, "landlock": confine, "namespaces": confine}
        for m in mechanisms * 3:  # warm the page cache, the imports and the bwrap probe
            _timed(m, _step, dirs[0], env, confines[m])
        start: dict[str, list[float]] = {m: [] for m in mechanisms}
        whole: dict[str, list[float]] = {m: [] for m in mechanisms}
        for i in range(args.runs):
            order = mechanisms[i % len(mechanisms):] + mechanisms[:i % len(mechanisms)]
            for m in order:
                start[m].append(_timed(m, _start, dirs[0], env, confines[m]))
                whole[m].append(_timed(m, _step, dirs[0], env, confines[m]))
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}, "
          f"Landlock ABI {support.landlock_abi}, bwrap {support.bwrap or 'none'}, Python {platform.python_version()}; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"runs: {args.runs} rounds of /bin/true, each mechanism in turn")
    base_start, base_whole = statistics.median(start["off"]), statistics.median(whole["off"])
    worst = 0.0
    for m in mechanisms:
        s, w = statistics.median(start[m]), statistics.median(whole[m])
        p90 = statistics.quantiles(start[m], n=10)[8]
        added = s - base_start
        worst = max(worst, added)
        print(f"{m:<11} start median {s:6.2f} ms (p90 {p90:6.2f}; +{added:5.2f} over off)   "
              f"whole step median {w:6.2f} ms (+{w - base_whole:5.2f})")
    _mode_watch(args.tree)
    met = worst < TARGET_MS
    print(f"target: the sandbox adds under {TARGET_MS:g} ms to a worker's start: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
