"""What the fail-to-pass baseline costs a delegation: `delegate` with `baseline = "auto"` against `"off"`.

The worker waits like a model-driven worker does (idle, then one edit: WORKER_S seconds); the verify
command is CPU-bound Python (about VERIFY_S seconds of work). With the worker longer than the tests,
the baseline (run on the start tree while the worker works) should add at most 10% to the wall time.
Rounds alternate auto/off in one run, each with a fresh BOSUN_HOME (no cached baseline).

    .venv/bin/python bench/baseline.py [--rounds 5] [--worker-s 4] [--verify-s 1]
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
p = 'src/calc.py'
text = open(p).read().replace('return a - b', 'return a + b')
open(p, 'w').write(text)
print('done')
"""

BUSY_TEST = """import time
from calc import add


def test_add():
    end = time.process_time() + {verify_s}
    while time.process_time() < end:
        pass
    assert add(2, 3) == 5
"""


def make_repo(path: Path, env: dict[str, str], worker_s: float, verify_s: float) -> None:
    write_repo(path, env, {"src/calc.py": "def add(a, b):\n    return a - b\n",
                           "tests/test_calc.py": BUSY_TEST.format(verify_s=verify_s)},
               WORKER.format(worker_s=worker_s))


def write_repo(path: Path, env: dict[str, str], files: dict[str, str], worker: str) -> None:
    """A committed repository of ``files`` (pytest finds ``src/``) whose default profile runs ``worker``."""
    for name, text in {**files, "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["src"]\n',
                       "worker.py": worker}.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    (path / "bosun.toml").write_text(
        f'default_profile = "w"\n[profiles.w]\nadapter = "command"\ncommand = [{json.dumps(sys.executable)}, '
        f'{json.dumps(str(path / "worker.py"))}]\n')
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)


def bench_env(tmp: Path) -> dict[str, str]:
    """The environment of a bench's git and bosun: a fixed identity, no user or system config."""
    return {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
            "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(tmp / "gc"),
            "BOSUN_CONFIG": str(tmp / "none.toml")}


def delegate(repo: Path, task: Path, home: Path, baseline: str, env: dict[str, str]) -> float:
    toml = repo / "bosun.toml"
    text = toml.read_text().split("\n", 1)[1] if toml.read_text().startswith("baseline") else toml.read_text()
    toml.write_text(f'baseline = "{baseline}"\n' + text)
    subprocess.run(["git", "commit", "-qam", "set baseline", "--allow-empty"], cwd=repo, env=env, capture_output=True)
    wall, out = timed_delegate(repo, task, home, env)
    assert (out["verification"]["proven"] is True) == (baseline == "auto"), out["verification"]
    return wall


def timed_delegate(repo: Path, task: Path, home: Path, env: dict[str, str]) -> tuple[float, dict]:
    """``bosun delegate --json`` in a process of its own: its wall time and its verified result."""
    run_env = {**env, "BOSUN_HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "bosun", "delegate", str(task), "--repo", str(repo), "--json"],
                         env=run_env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    out = json.loads(res.stdout)
    assert out["state"] == "verified", out
    return wall, out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--worker-s", type=float, default=4.0)
    ap.add_argument("--verify-s", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bosun-bench-baseline-") as t:
        tmp = Path(t)
        env = bench_env(tmp)
        repo = tmp / "repo"
        make_repo(repo, env, args.worker_s, args.verify_s)
        task = tmp / "task.json"
        task.write_text(json.dumps({"title": "fix add", "prompt": "fix add()", "verify": ["python -m pytest -q tests"],
                                    "timeout_s": 120}))
        walls: dict[str, list[float]] = {"auto": [], "off": []}
        for k in range(args.rounds):
            for mode in ("auto", "off") if k % 2 == 0 else ("off", "auto"):
                walls[mode].append(delegate(repo, task, tmp / f"home-{mode}-{k}", mode, env))
    auto, off = statistics.median(walls["auto"]), statistics.median(walls["off"])
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"command: .venv/bin/python bench/baseline.py --rounds {args.rounds} --worker-s {args.worker_s} "
          f"--verify-s {args.verify_s}")
    print("| baseline | median wall | runs |\n|---|---|---|")
    print(f"| off | {off:.2f} s | {', '.join(f'{w:.2f}' for w in walls['off'])} |")
    print(f"| auto | {auto:.2f} s | {', '.join(f'{w:.2f}' for w in walls['auto'])} |")
    print(f"\nratio auto/off: {auto / off:.3f} (target <= 1.10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
