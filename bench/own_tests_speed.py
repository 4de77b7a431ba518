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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKER = """import sys, time
sys.stdin.read()
time.sleep({worker_s})
code = open('src/calc.py').read().replace('return a - b', 'return a + b', 1)
open('src/calc.py', 'w').write(code)
test = open('tests/test_sub.py').read().replace('sub(5, 3) == 2', 'add(2, 3) == 5').replace('import sub', 'import add')
open('tests/test_add.py', 'w').write(test.replace('def test_sub', 'def test_add'))
print('done')
"""

BUSY_TEST = """import time
from calc import sub


def test_sub():
    end = time.process_time() + {verify_s}
    while time.process_time() < end:
        pass
    assert sub(5, 3) == 2
"""


def make_repo(path: Path, env: dict[str, str], worker_s: float, verify_s: float) -> None:
    (path / "src").mkdir(parents=True)
    (path / "tests").mkdir()
    (path / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    (path / "tests" / "test_sub.py").write_text(BUSY_TEST.format(verify_s=verify_s))
    (path / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (path / ".gitignore").write_text("__pycache__/\n")
    (path / "worker.py").write_text(WORKER.format(worker_s=worker_s))
    (path / "bosun.toml").write_text(
        f'default_profile = "w"\n[profiles.w]\nadapter = "command"\ncommand = [{json.dumps(sys.executable)}, '
        f'{json.dumps(str(path / "worker.py"))}]\n')
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)


def delegate(repo: Path, task: Path, home: Path, env: dict[str, str], own: bool) -> tuple[float, float | None]:
    run_env = {**env, "BOSUN_HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "bosun", "delegate", str(task), "--repo", str(repo), "--json"],
                         env=run_env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    out = json.loads(res.stdout)
    assert out["state"] == "verified", out
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
        env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(tmp / "gc"),
               "BOSUN_CONFIG": str(tmp / "none.toml")}
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
