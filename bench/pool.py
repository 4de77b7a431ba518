"""``bosun delegate`` with and without the warm pool, paired per round, on 100 and 20,000 files.

Two generated repositories with the same content (bench/overhead.py's generator), one with
``[pool] size = 1``. Each round, in this order, each timed step after ``sync`` and a short settle:

* ``git worktree add`` of the repository, bare (what a fresh run costs before its worker can start);
* ``bosun delegate`` without the pool (a fresh worktree);
* ``bosun delegate`` with the pool (the idle worktree moved to the new base).

The fail-to-pass baseline is off (it overlaps the worker, which here takes no time; bench/baseline.py
measures it). Between rounds (untimed) both repositories get a new commit touching one file, so the pooled
worktree always moves to a new base, and the pooled run is discarded (its worktree goes back; the
time that takes is reported too). Fresh worktrees are removed only after all rounds: deleting 20,000
files right before a checkout slows the checkout several-fold on this disk.

The worker (``command`` adapter) writes the wall clock to a file first thing, so *to worker* is the
time from launching ``bosun delegate`` to the worker running; *total* is the whole delegate;
*overhead* is total less the same worker and verify command run bare. Targets (20,000 files): the
pooled run's worker starts before a bare ``git worktree add`` finishes (ratio < 1), and its overhead
is <= 0.3 s.

``--warm`` adds, each round, the pooled delegate through ``bosun warm`` (after a new commit of its own).

Each round also times *git alone*: the git commands that bosun's checks cannot do without, run bare
one after another on a worktree of the pooled repository moved to the same base (untimed resets
between rounds): the user's ``status`` (their uncommitted work is carried), the move to the new base,
the scan (``add -u``, the untracked listing, ``write-tree``), the ``clean`` before the verify commands,
and after them ``diff-files`` and ``clean`` again. It leaves out everything else a delegate does (the
worker's sandbox, the walk for stray ``.git`` entries, records, gates), so it is a lower bound of the
overhead on this machine's disk.

    .venv/bin/python bench/pool.py [--sizes 100 20000] [--rounds 3] [--warm]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import overhead  # noqa: E402  (bench/overhead.py: the repository generator)
import startup  # noqa: E402

VERIFY = ["true"]
TARGET_S = 0.3


def settle() -> None:
    os.sync()
    time.sleep(0.5)


# The worker's sandbox lets it write only in its worktree, HOME and TMPDIR: the clock goes to its HOME
# (runs/<id>/home/touch/, kept until the run is cleaned up).
WORKER = ["sh", "-c", "date +%s.%N > \"$HOME/bench-mark\"; echo 'touched by the benchmark' >> README.md"]


def worker_argv(mark: Path) -> list[str]:
    return WORKER


def make_repo(path: Path, n: int, env: dict[str, str], mark: Path, pool: int) -> Path:
    repo = overhead.generate_repo(path, n, env)
    # The fail-to-pass baseline checks out the start tree in a worktree of its own while the worker
    # works (bench/baseline.py measures it); with a worker that takes no time it would be all that is
    # measured here, so it is off.
    toml = 'baseline = "off"\n\n' + f'[profiles.touch]\nadapter = "command"\ncommand = {json.dumps(worker_argv(mark))}\n'
    if pool:
        toml += f"\n[pool]\nsize = {pool}\n"
    (repo / "bosun.toml").write_text(toml)
    _git(repo, env, "commit", "-qam", "benchmark profile")
    return repo


def _git(repo: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _bosun(env: dict[str, str], *args: str) -> dict:
    res = subprocess.run([*startup.bosun_argv(), *args, "--json"], env=env, capture_output=True, text=True)
    try:
        return json.loads(res.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"bosun {args} printed no JSON (exit {res.returncode}):\n{res.stderr}") from None


def delegate(repo: Path, task: Path, env: dict[str, str], mark: Path, warm: bool = False) -> tuple[float, float, dict]:
    """(seconds to the worker's start, seconds of the whole delegate, its result). ``warm``: through
    `bosun warm` (started by the caller), else the ordinary way."""
    settle()
    launched = time.time()
    t0 = time.perf_counter()
    res = subprocess.run([*startup.bosun_argv(), "delegate", str(task), "--profile", "touch", "--json", "--repo",
                          str(repo)], env={**env, "BOSUN_WARM": "1" if warm else "0"}, capture_output=True, text=True)
    total = time.perf_counter() - t0
    out = json.loads(res.stdout)
    if out.get("state") != "verified":
        raise SystemExit(f"unexpected outcome: {out.get('state')} {out.get('error')}")
    mark = Path(env["BOSUN_HOME"]) / "runs" / out["id"] / "home" / "touch" / "bench-mark"
    return float(mark.read_text()) - launched, total, out


def bare(mark: Path, tmp: Path) -> float:
    d = tmp / "bare"
    d.mkdir(exist_ok=True)
    (d / "README.md").write_text("x\n")
    settle()
    t0 = time.perf_counter()
    subprocess.run(WORKER, cwd=d, input=b"prompt", capture_output=True, check=True, env={**os.environ, "HOME": str(d)})
    subprocess.run(VERIFY, cwd=d, capture_output=True, check=True)
    return time.perf_counter() - t0


def worktree_add(repo: Path, env: dict[str, str], tmp: Path, k: int) -> float:
    path = tmp / "bare-worktrees" / f"wt{k}"
    path.parent.mkdir(exist_ok=True)
    settle()
    t0 = time.perf_counter()
    _git(repo, env, "worktree", "add", "--quiet", "--no-track", "-b", f"bench/wt{k}", str(path), "HEAD")
    return time.perf_counter() - t0


def git_alone(repo: Path, wt: Path, env: dict[str, str]) -> float:
    """The git passes a pooled delegate needs, bare and in sequence, with the worker's one-line edit."""
    head = _git(repo, env, "rev-parse", "HEAD").strip()
    settle()
    t0 = time.perf_counter()
    _git(repo, env, "--no-optional-locks", "status", "--porcelain", "-z", "--no-renames", "--untracked-files=all")
    _git(wt, env, "checkout", "--quiet", "--detach", head)
    with open(wt / "README.md", "a") as fh:
        fh.write("touched by the benchmark\n")
    _git(wt, env, "add", "-u", "--", ".")
    _git(wt, env, "ls-files", "-z", "--others", "--exclude-standard")
    _git(wt, env, "write-tree")
    _git(wt, env, "clean", "-ffdxq")
    _git(wt, env, "diff-files", "--name-only", "-z")
    _git(wt, env, "clean", "-ffdxq")
    took = time.perf_counter() - t0
    _git(wt, env, "reset", "--quiet", "--hard")  # untimed: the next round starts clean
    return took


def new_base(repo: Path, env: dict[str, str], k: int) -> None:
    (repo / "README.md").write_text(f"# Generated benchmark repository, round {k}\n")
    _git(repo, env, "commit", "-qam", f"round {k}")


def measure(n: int, rounds: int, tmp: Path, warm: bool = False) -> dict[str, list[float]]:
    env = startup.isolated_env(tmp)
    base = tmp / f"size-{n}"
    base.mkdir()
    task = base / "task.json"
    task.write_text(json.dumps({"title": "benchmark", "prompt": "do nothing useful", "verify": [VERIFY]}))
    mark = base / "mark"
    fresh_repo = make_repo(base / "fresh", n, env, mark, pool=0)
    pool_repo = make_repo(base / "pooled", n, env, mark, pool=1)
    _bosun(env, "pool", "warm", "--repo", str(pool_repo))
    floor_wt = base / "git-alone"
    _git(pool_repo, env, "worktree", "add", "--quiet", "--detach", str(floor_wt), "HEAD")
    if warm:
        subprocess.run([*startup.bosun_argv(), "warm", "start"], env=env, capture_output=True, check=True)
    # Untimed: page cache, bytecode, the pool's first lease (and the warm process's first fork).
    for repo, through_warm in ((fresh_repo, False), (pool_repo, False), *([(pool_repo, True)] if warm else [])):
        _, _, out = delegate(repo, task, env, mark, warm=through_warm)
        _bosun(env, "discard", out["id"])
    raw: dict[str, list[float]] = {k: [] for k in ("worktree_add", "bare", "fresh_to_worker", "fresh_total",
                                                   "pool_to_worker", "pool_total", "pool_give_back",
                                                   "warm_to_worker", "warm_total", "git_alone")}
    fresh_runs = []
    for k in range(rounds):
        new_base(fresh_repo, env, k)
        new_base(pool_repo, env, k)
        raw["worktree_add"].append(worktree_add(fresh_repo, env, base, k))
        raw["bare"].append(bare(mark, base))
        raw["git_alone"].append(git_alone(pool_repo, floor_wt, env))
        to_worker, total, out = delegate(fresh_repo, task, env, mark)
        raw["fresh_to_worker"].append(to_worker)
        raw["fresh_total"].append(total)
        fresh_runs.append(out["id"])
        to_worker, total, out = delegate(pool_repo, task, env, mark)
        if "/pool/" not in out["worktree"]:
            raise SystemExit("the pooled run did not get the pool's worktree")
        raw["pool_to_worker"].append(to_worker)
        raw["pool_total"].append(total)
        settle()
        t0 = time.perf_counter()
        _bosun(env, "discard", out["id"])
        raw["pool_give_back"].append(time.perf_counter() - t0)
        if warm:  # the same pooled run through the warm process, from a new base of its own
            new_base(pool_repo, env, k + 1000)
            to_worker, total, out = delegate(pool_repo, task, env, mark, warm=True)
            if "/pool/" not in out["worktree"]:
                raise SystemExit("the pooled run did not get the pool's worktree")
            raw["warm_to_worker"].append(to_worker)
            raw["warm_total"].append(total)
            _bosun(env, "discard", out["id"])
        print(f"[{n} files] round {k + 1}/{rounds} done", file=sys.stderr)
    for run_id in fresh_runs:
        _bosun(env, "discard", run_id)
    if warm:
        subprocess.run([*startup.bosun_argv(), "warm", "stop"], env=env, capture_output=True)
    shutil.rmtree(base, ignore_errors=True)
    return raw


def report(results: dict[int, dict[str, list[float]]]) -> str:
    def med(xs: list[float]) -> float:
        return statistics.median(xs)

    lines = [f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
             f"{subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()}, "
             f"load {os.getloadavg()[0]:.1f}", ""]
    for n, raw in results.items():
        rounds = len(raw["bare"])
        add = raw["worktree_add"]
        paired_ratio = [p / a for p, a in zip(raw["pool_to_worker"], add, strict=True)]
        pool_over = [t - b for t, b in zip(raw["pool_total"], raw["bare"], strict=True)]
        fresh_over = [t - b for t, b in zip(raw["fresh_total"], raw["bare"], strict=True)]
        fresh_over_add = [t - b - a for t, b, a in zip(raw["fresh_total"], raw["bare"], add, strict=True)]
        lines += [f"{n:,} files (median of {rounds} paired rounds)", "",
                  "| step | median | min |", "|---|---|---|"]
        rows = [
            ("`git worktree add`, bare", add),
            ("worker + verify, bare", raw["bare"]),
            ("delegate without pool: to worker start", raw["fresh_to_worker"]),
            ("delegate without pool: total", raw["fresh_total"]),
            ("delegate with pool: to worker start", raw["pool_to_worker"]),
            ("delegate with pool: total", raw["pool_total"]),
            ("pooled worktree given back (`discard`, not in delegate)", raw["pool_give_back"]),
            ("overhead without pool (total - bare)", fresh_over),
            ("overhead without pool less the round's bare `git worktree add`", fresh_over_add),
            ("overhead with pool (total - bare)", pool_over),
            ("git alone: the passes bosun's checks need, bare, in sequence (a lower bound)", raw["git_alone"]),
        ]
        warm_over = [t - b for t, b in zip(raw["warm_total"], raw["bare"], strict=False)]
        if raw["warm_total"]:
            rows += [("delegate with pool, through `bosun warm`: to worker start", raw["warm_to_worker"]),
                     ("delegate with pool, through `bosun warm`: total", raw["warm_total"]),
                     ("overhead with pool, through `bosun warm` (total - bare)", warm_over)]
        for name, xs in rows:
            lines.append(f"| {name} | {med(xs) * 1000:.0f} ms | {min(xs) * 1000:.0f} ms |")
        lines += ["", f"pooled worker start / bare `git worktree add`, paired: median {med(paired_ratio):.2f} "
                  f"(target < 1: {'met' if med(paired_ratio) < 1 else 'not met'}); overhead with pool "
                  f"{med(pool_over) * 1000:.0f} ms (target <= {TARGET_S * 1000:.0f} ms: "
                  f"{'met' if med(pool_over) <= TARGET_S else 'not met'})"]
        if raw["warm_total"]:
            lines.append(f"through `bosun warm`: pooled worker start / bare `git worktree add`, paired: median "
                         f"{med([p / a for p, a in zip(raw['warm_to_worker'], add, strict=True)]):.2f}; overhead "
                         f"{med(warm_over) * 1000:.0f} ms (target <= {TARGET_S * 1000:.0f} ms: "
                         f"{'met' if med(warm_over) <= TARGET_S else 'not met'})")
        lines.append(f"git alone, the lower bound of the overhead on this disk: median {med(raw['git_alone']) * 1000:.0f} ms "
                     f"(min {min(raw['git_alone']) * 1000:.0f} ms)")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 20000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm", action="store_true",
                    help="also time the pooled delegate through `bosun warm` (from a new base of its own)")
    args = ap.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(prefix="bosun-bench-pool-", dir=os.environ.get("BENCH_TMP")) as tmp:
        for n in args.sizes:
            sub = Path(tmp) / str(n)
            sub.mkdir()
            results[n] = measure(n, args.rounds, sub, warm=args.warm)
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
