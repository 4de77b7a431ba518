"""What the runner guard adds to a verify command.

    .venv/bin/python bench/runner_guard.py              # 20 pairs per case, prints medians
    .venv/bin/python bench/runner_guard.py --runs 10 --suite tests/gates

Each round runs the same command twice, in alternating order so drift in machine load hits both
alike: once with the verify environment bosun gave before the guard, once the way
``run_verification`` runs it now (``open_guard``: the guard's directory and FIFO made, the reader
thread started, the environment extended; ``close``: the records folded and the files removed). It
reports the paired medians of the difference, per case:

* ``python -c pass``: the guard's fixed cost in every Python process (its ``sitecustomize``);
* ``pytest, 2 tests``: a small project's verify command, the case that runs on every delegation;
* ``pytest, SUITE``: a real suite (bosun's own ``tests/gates`` by default, 360 tests), where the
  per-test checkpoints and the audit hook's share show.

Wall time on a shared machine moves by hundreds of ms between two runs of the same pytest; the CPU
time of the command's processes (``RUSAGE_CHILDREN``) moves far less, so the target is read on it.
Target: under 30 ms of CPU added per verify command on the small project. Exit status 1 means it was
missed.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bosun import proc
from bosun.isolation.runner_guard import open_guard
from bosun.isolation.verify_commands import verify_env

TARGET_MS = 30.0
ROOT = Path(__file__).resolve().parent.parent
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_zero():\n    assert add(0, 4) == 4\n"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argv: list[str], cwd: Path, home: Path, guarded: bool, index: int) -> tuple[float, float]:
    """(wall ms including the guard's set-up and close, CPU ms of the command's processes)."""
    env = proc.without_relative_path({**verify_env(home), "PYTEST_ADDOPTS": "-p no:cacheprovider -p no:randomly"})
    cpu = _cpu()
    start = time.perf_counter()
    guard = open_guard(home, cwd, index) if guarded else None
    res = proc.run_supervised(argv, cwd=cwd, env=guard.env(env) if guard else env, timeout_s=600, stdout_grace_s=0.5)
    if guard is not None:
        runner = guard.close(None, res.exit_code, None)
        assert runner["processes"], "the guard saw no process"
    elapsed = (time.perf_counter() - start) * 1000
    assert res.exit_code == 0, res.output_tail()
    return elapsed, (_cpu() - cpu) * 1000


def _case(name: str, argv: list[str], cwd: Path, runs: int) -> float:
    plain: list[float] = []
    guarded: list[float] = []
    deltas: list[float] = []
    cpu_deltas: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        (home / "tmp").mkdir(parents=True)
        _run(argv, cwd, home, True, 0)  # warm the page cache for both
        for i in range(runs):
            order = (False, True) if i % 2 == 0 else (True, False)
            times = {g: _run(argv, cwd, home, g, i) for g in order}
            plain.append(times[False][0])
            guarded.append(times[True][0])
            deltas.append(times[True][0] - times[False][0])
            cpu_deltas.append(times[True][1] - times[False][1])
    med = statistics.median(cpu_deltas)
    print(f"{name:<28} plain {statistics.median(plain):8.1f} ms   guarded {statistics.median(guarded):8.1f} ms   "
          f"wall added {statistics.median(deltas):+7.1f} ms; CPU added {med:+6.1f} ms (paired medians; CPU p25 "
          f"{statistics.quantiles(cpu_deltas, n=4)[0]:+.1f}, p75 {statistics.quantiles(cpu_deltas, n=4)[2]:+.1f})")
    return med


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--suite", default="tests/gates", help="a test directory of this checkout to time as a real suite")
    ap.add_argument("--suite-runs", type=int, default=5)
    args = ap.parse_args()
    print(f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "calc"
        (project / "tests").mkdir(parents=True)
        (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        (project / "tests" / "test_calc.py").write_text(TESTS)
        _case("python -c pass", [sys.executable, "-c", "pass"], project, args.runs)
        small = _case("pytest, 2 tests", [sys.executable, "-m", "pytest", "-q", "tests"], project, args.runs)
    _case(f"pytest, {args.suite}", [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", args.suite], ROOT,
          args.suite_runs)
    print(f"target: under {TARGET_MS:g} ms added on the small project: {'met' if small < TARGET_MS else 'MISSED'}")
    return 0 if small < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
