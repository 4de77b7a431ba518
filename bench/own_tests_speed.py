"""What running the worker's own tests on the start tree's code costs a delegation, side by side.

The task is "fix add() and add a regression test": no test fails before the fix, so the worker's new
test is the proof. Two arms, alternating, each with a fresh BOSUN_HOME (no cached baseline):

* **own tests**: ``proof: required``: bosun lays the change's test files over a checkout of the start
  tree and runs the verify commands there, concurrently with the change's own verification;
* **without**: ``proof: not-required``: the same delegation without that run (everything else, the
  baseline and the held-out originals included, runs alike).

The worker waits WORKER_S seconds (as a model-driven worker waits on its provider), then writes the fix
and a test; the verify command is CPU-bound pytest (about VERIFY_S seconds of work per test module).
Also printed: how long the own-tests run itself took, so what it would add if it ran after the
change's verification rather than beside it can be read off.

    .venv/bin/python bench/own_tests_speed.py [--rounds 5] [--worker-s 2] [--verify-s 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from baseline import BUSY_TEST as BUSY_ADD_TEST  # noqa: E402  (the fail-to-pass bench's repository)
from baseline import bench_env, timed_delegate, write_repo  # noqa: E402

WORKER = """import sys, time
sys.stdin.read()
time.sleep({worker_s})
code = open('src/calc.py').read().replace('return a - b', 'return a + b', 1)
open('src/calc.py', 'w').write(code)
test = open('tests/test_sub.py').read().replace('sub(5, 3) == 2', 'add(2, 3) == 5').replace('import sub', 'import add')
open('tests/test_add.py', 'w').write(test.replace('def test_sub', 'def test_add'))
print('done')
"""

# The fail-to-pass bench's busy test, of sub() (which works): the task's tests pass before the fix.
BUSY_TEST = BUSY_ADD_TEST.replace("add", "sub").replace("sub(2, 3) == 5", "sub(5, 3) == 2")


def make_repo(path: Path, env: dict[str, str], worker_s: float, verify_s: float) -> None:
    calc = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
    write_repo(path, env, {"src/calc.py": calc, "tests/test_sub.py": BUSY_TEST.format(verify_s=verify_s),
                           ".gitignore": "__pycache__/\n"}, WORKER.format(worker_s=worker_s))


def delegate(repo: Path, task: Path, home: Path, env: dict[str, str], own: bool) -> tuple[float, float | None]:
    wall, out = timed_delegate(repo, task, home, env)
    assert (out["verification"].get("proven_by") == "own_tests") == own, out["verification"]
    doc = json.loads((home / "runs" / out["id"] / "verification.json").read_text())
    own_s = sum(c.get("duration_s") or 0 for c in (doc.get("own") or {}).get("commands") or []) or None
    return wall, own_s


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--worker-s", type=float, default=2.0)
    ap.add_argument("--verify-s", type=float, default=1.0)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bosun-bench-own-") as t:
        tmp = Path(t)
        env = bench_env(tmp)
        repo = tmp / "repo"
        make_repo(repo, env, args.worker_s, args.verify_s)
        tasks = {}
        for own in (True, False):
            tasks[own] = tmp / f"task-{own}.json"
            tasks[own].write_text(json.dumps({
                "title": "fix add", "prompt": "fix add() and add a regression test",
                "verify": [f"{sys.executable} -m pytest -q tests"], "timeout_s": 120,
                "proof": "required" if own else "not-required"}))
        walls: dict[bool, list[float]] = {True: [], False: []}
        own_runs: list[float] = []
        for k in range(args.rounds):
            for own in (True, False) if k % 2 == 0 else (False, True):
                wall, own_s = delegate(repo, tasks[own], tmp / f"home-{own}-{k}", env, own)
                walls[own].append(wall)
                if own_s:
                    own_runs.append(own_s)
    with_own, without = statistics.median(walls[True]), statistics.median(walls[False])
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()} (load average {load:.1f} at the start)")
    print(f"command: .venv/bin/python bench/own_tests_speed.py --rounds {args.rounds} --worker-s {args.worker_s} "
          f"--verify-s {args.verify_s}")
    print("| arm | median wall | runs |\n|---|---|---|")
    print(f"| without (proof: not-required) | {without:.2f} s | {', '.join(f'{w:.2f}' for w in walls[False])} |")
    print(f"| own tests (proof: required) | {with_own:.2f} s | {', '.join(f'{w:.2f}' for w in walls[True])} |")
    print(f"\nratio own/without: {with_own / without:.3f}; the own-tests run itself: median "
          f"{statistics.median(own_runs):.2f} s of its verify commands")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
