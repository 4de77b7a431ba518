"""What ``bosun integrate`` costs on a branch that has not moved, with this code and with an older one
that verified the merged result again (the same tree as the one verified).

    .venv/bin/python bench/landing_reuse.py [--rounds 5] [--old-src DIR]

``--old-src`` is a ``src`` directory of the older code (e.g. ``git archive 54c98f0 src | tar -x -C
/tmp/old``, then ``/tmp/old/src``). Each round makes one run per code (a worker that fixes one file,
a verify command of ``python -m pytest -q`` on two tests), approves it, and times ``integrate`` alone
in a fresh process; the two codes alternate within a round. Everything lives in a temp dir.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
FIX = "import pathlib; pathlib.Path('calc.py').write_text('def add(a, b):\\n    return a + b\\n')"
TEST = "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n\ndef test_zero():\n    assert add(0, 0) == 0\n"


def make_repo(path: Path, env: dict[str, str]) -> None:
    path.mkdir(parents=True)
    (path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (path / "test_calc.py").write_text(TEST)
    (path / ".gitignore").write_text("__pycache__/\n*.pyc\n.pytest_cache/\n")
    (path / "bosun.toml").write_text(f'[profiles.fix]\nadapter = "command"\ncommand = {json.dumps([sys.executable, "-c", FIX])}\n')
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True)


def bosun(src: Path, env: dict[str, str], *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "bosun", *args, "--json"], env={**env, "PYTHONPATH": str(src)},
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bosun {' '.join(args)} failed ({done.returncode}): {done.stdout[-500:]}{done.stderr[-500:]}")
    return json.loads(done.stdout)


def one(src: Path, tmp: Path, env: dict[str, str], name: str) -> float:
    repo = tmp / name
    make_repo(repo, env)
    task = tmp / f"{name}.json"
    task.write_text(json.dumps({"title": "Fix add", "prompt": "add() must add.",
                                "verify": [f"{sys.executable} -m pytest -q -p no:cacheprovider"]}))
    run = bosun(src, env, "delegate", str(task), "--repo", str(repo), "--profile", "fix")
    bosun(src, env, "approve", run["id"], "--yes")
    start = time.perf_counter()
    bosun(src, env, "integrate", run["id"])
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--old-src", type=Path, help="the older code's src directory")
    args = ap.parse_args()
    codes = {"this code": SRC, **({"older code": args.old_src} if args.old_src else {})}
    times: dict[str, list[float]] = {name: [] for name in codes}
    with tempfile.TemporaryDirectory(prefix="bosun-landing-") as raw:
        tmp = Path(raw)
        (tmp / "gitconfig").write_text("[user]\n\tname = bench\n\temail = bench@localhost\n")
        env = dict(os.environ, BOSUN_HOME=str(tmp / "home"), BOSUN_CONFIG=str(tmp / "config.toml"),
                   GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"), GIT_CONFIG_NOSYSTEM="1")
        for r in range(args.rounds):
            for name, src in (codes.items() if r % 2 == 0 else reversed(codes.items())):
                times[name].append(one(src, tmp, env, f"{name.split()[0]}-{r}"))
    print(f"load average {os.getloadavg()[0]:.1f}; integrate on an unmoved branch, {args.rounds} rounds")
    print("| code | median s | min s | max s |\n|---|---:|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.3f} | {min(values):.3f} | {max(values):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
