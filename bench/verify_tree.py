"""Two ways to give the verify commands exactly the verified tree, measured side by side.

* **reset**: the run's worktree is made to hold exactly the tree (``materialize``: files that differ
  rewritten from blobs, everything else removed). Cost grows with what changed plus one stat pass.
* **fresh**: a new directory filled from the tree (``git checkout-index --all`` into it), removed after.
  Cost grows with the size of the repository.

Also timed: ``git worktree add`` of the same repository (the cost the issue's target is relative to),
and bosun's ``scan`` (the view computing the change). Each timed step runs after ``sync`` and a short
settle (this disk is slow right after many writes). Rounds are interleaved.

    .venv/bin/python bench/verify_tree.py [--sizes 100 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from bosun.isolation.change import create_view, materialize, read_change  # noqa: E402

ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_NOSYSTEM": "1"}


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env or ENV, check=True, capture_output=True,
                          text=True).stdout.strip()


def make_repo(path: Path, n: int) -> str:
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    for i in range(n):
        d = path / f"pkg{i % 50}" / f"sub{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod_{i}.py").write_text(f"def f_{i}(x):\n    return x + {i}\n" * 3)
    (path / ".gitignore").write_text("__pycache__/\nbuild/\n")
    git("add", "-A", cwd=path)
    git("commit", "-qm", "init", cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


def settle() -> None:
    os.sync()
    time.sleep(0.3)


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    settle()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def one_round(tmp: Path, repo: Path, start: str, k: int) -> dict[str, float]:
    wt = tmp / f"wt{k}"
    out: dict[str, float] = {}
    out["git worktree add"] = timed(lambda: git("worktree", "add", "-q", "-b", f"b{k}", str(wt), start, cwd=repo))
    view = create_view(tmp / f"run{k}", wt, repo, start)
    # A worker's edits: one file changed, one added, and ignored junk the verification must not see.
    (wt / "pkg0" / "sub0" / "mod_0.py").write_text("changed\n")
    (wt / "NEW.md").write_text("new\n")
    (wt / "build").mkdir()
    (wt / "build" / "junk.o").write_text("x" * 1000)
    change = read_change(view)
    out["scan (view)"] = timed(lambda: read_change(view))
    out["reset: materialize in worktree"] = timed(lambda: materialize(view, change.tree))
    fresh = tmp / f"fresh{k}"

    def fill_fresh() -> None:
        fresh.mkdir()
        env = {**view.env(), "GIT_WORK_TREE": str(fresh), "GIT_INDEX_FILE": str(tmp / f"fresh{k}.index")}
        subprocess.run(["git", "read-tree", change.tree], cwd=fresh, env=env, check=True)
        subprocess.run(["git", "checkout-index", "--all", "--force"], cwd=fresh, env=env, check=True)

    out["fresh: checkout into a new dir"] = timed(fill_fresh)
    shutil.rmtree(fresh)
    git("worktree", "remove", "--force", str(wt), cwd=repo)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 20000])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{git('--version', cwd=ROOT)}")
    print(f"command: .venv/bin/python bench/verify_tree.py --sizes {' '.join(map(str, args.sizes))} "
          f"--rounds {args.rounds}\n")
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bosun-bench-") as t:
            tmp = Path(t)
            start = make_repo(tmp / "repo", n)
            rows: dict[str, list[float]] = {}
            for k in range(args.rounds):
                for key, value in one_round(tmp, tmp / "repo", start, k).items():
                    rows.setdefault(key, []).append(value)
            base = statistics.median(rows["git worktree add"])
            print(f"{n} files (median of {args.rounds} rounds; ratio to `git worktree add`)")
            print("| step | median | ratio |\n|---|---|---|")
            for key, values in rows.items():
                med = statistics.median(values)
                print(f"| {key} | {med * 1000:.0f} ms | {med / base:.2f} |")
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
