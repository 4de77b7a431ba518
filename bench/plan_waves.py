"""Plan wave scheduling: 20 independent tasks whose worker sleeps 2 s, concurrency cap 8.

The ideal wall time is ``ceil(20 / 8) = 3`` rounds of slots x 2 s, plus one task's bare overhead:
everything bosun does around a worker (prepare, worktree, guard, verify, gates, report), measured as
one ``bosun delegate`` of the same task minus its 2 s of sleep. The plan's wall time (``bosun plan
run``: checkpoint, waves, merges into the integration branch, plan verify, landing, cleanup) is
compared with it; the target is at most 1.2x.

Every measurement is a fresh process with its own BOSUN_HOME and a fresh repository; bytecode is
cached (one discarded warm-up delegate and plan fill the cache) as on a normal install. Run on its
own: ``.venv/bin/python bench/plan_waves.py [--reps 3] [--tasks 20] [--cap 8] [--sleep 2]``;
``--max-load L`` first waits (up to ``--max-wait`` s) for the 1-minute load average to fall below L,
since other work on the machine shows up directly in the figures; the load is reported either way.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.2

WORKER = '''\
import json, os, sys, time
from pathlib import Path
sys.stdin.read()
prompt = json.loads(Path(os.environ["BOSUN_TASK_FILE"]).read_text())["task"]["prompt"]
for line in prompt.splitlines():
    op, *args = line.split()
    if op == "@sleep":
        time.sleep(float(args[0]))
    elif op == "@write":
        Path(args[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(args[0]).write_text(" ".join(args[1:]) + "\\n")
print("done")
'''


def bosun_argv() -> list[str]:
    script = Path(sys.executable).parent / "bosun"
    return [str(script)] if script.exists() else [sys.executable, "-m", "bosun"]


PYCACHE: str | None = None  # one bytecode cache for every process of the benchmark


def env_for(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Bytecode is cached as on a normal install (the discarded warm-up runs write it), outside the
    # sources; an inherited PYTHONDONTWRITEBYTECODE would make every process recompile all of bosun
    # and inflate the single-delegate overhead the ideal is built from.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if PYCACHE:
        env["PYTHONPYCACHEPREFIX"] = PYCACHE
    gitconfig = tmp / "gitconfig"
    gitconfig.write_text("[user]\n\tname = bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    env.update(BOSUN_HOME=str(tmp / "home"), BOSUN_CONFIG=str(tmp / "none.toml"), GIT_CONFIG_GLOBAL=str(gitconfig),
               GIT_CONFIG_NOSYSTEM="1")
    for key in ("PARENT_AGENT", "BOSUN_PROFILE", "BOSUN_MAX_CONCURRENT_RUNS"):
        env.pop(key, None)
    return env


def make_repo(tmp: Path, env: dict[str, str], cap: int) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    worker = tmp / "worker.py"
    worker.write_text(WORKER)
    (repo / "README.md").write_text("# bench\n")
    (repo / "bosun.toml").write_text(
        f'default_profile = "sleeper"\nmax_concurrent_runs = {cap}\n\n[profiles.sleeper]\nadapter = "command"\n'
        f"command = {json.dumps([sys.executable, str(worker)])}\n"
    )
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return repo


def task(n: int, sleep: float) -> dict:
    path = f"out/t{n:02d}.txt"
    return {"id": f"t{n:02d}", "title": f"task {n}", "prompt": f"@sleep {sleep}\n@write {path} {n}",
            "owns": [path], "verify": [f"test -s {path}"], "timeout_s": 120}


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    res = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    try:
        out = json.loads(res.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{' '.join(argv)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}") from None
    return wall, out


TMPDIR: str | None = None


def one_delegate(sleep: float, cap: int) -> float:
    with tempfile.TemporaryDirectory(prefix="bosun-bench-", dir=TMPDIR) as d:
        tmp = Path(d)
        env = env_for(tmp)
        repo = make_repo(tmp, env, cap)
        spec = task(0, sleep)
        contract = {k: v for k, v in spec.items() if k not in ("id", "owns")}
        contract["scope"] = spec["owns"]
        (tmp / "task.json").write_text(json.dumps(contract))
        wall, out = timed([*bosun_argv(), "delegate", str(tmp / "task.json"), "--json", "--quiet"], env, repo)
        if out.get("state") != "verified":
            raise SystemExit(f"delegate ended {out.get('state')}: {out.get('error')}")
        return wall


def one_plan(tasks: int, sleep: float, cap: int) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory(prefix="bosun-bench-", dir=TMPDIR) as d:
        tmp = Path(d)
        env = env_for(tmp)
        repo = make_repo(tmp, env, cap)
        plan = {"title": f"{tasks} independent tasks", "tasks": [task(n, sleep) for n in range(tasks)]}
        (tmp / "plan.json").write_text(json.dumps(plan))
        wall, out = timed([*bosun_argv(), "plan", "run", str(tmp / "plan.json"), "--json", "--quiet"], env, repo)
        if out.get("state") != "succeeded":
            raise SystemExit(f"plan ended {out.get('state')}: {out.get('error')}")
        files = subprocess.run(["git", "show", "--name-only", "--format=", "HEAD"], cwd=repo, env=env,
                               capture_output=True, text=True).stdout.split()
        assert len(files) == tasks, files
        return wall, out


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, Python {platform.python_version()}, {git}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--cap", type=int, default=8)
    ap.add_argument("--sleep", type=float, default=2.0)
    ap.add_argument("--tmpdir", help="where the repositories and BOSUN_HOME go (default: the system temp dir)")
    ap.add_argument("--max-load", type=float, help="wait for the 1-minute load average to fall below this first")
    ap.add_argument("--max-wait", type=float, default=600.0, help="longest wait for --max-load, in seconds")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args()
    if not shutil.which("git"):
        raise SystemExit("git is required")
    global TMPDIR
    TMPDIR = args.tmpdir
    if args.max_load is not None:
        deadline = time.monotonic() + args.max_wait
        while os.getloadavg()[0] >= args.max_load and time.monotonic() < deadline:
            time.sleep(5)
    load_before = os.getloadavg()[0]

    global PYCACHE
    cache_dir = tempfile.TemporaryDirectory(prefix="bosun-bench-pycache-", dir=TMPDIR)
    PYCACHE = cache_dir.name
    one_delegate(0.0, args.cap)  # warm-up, discarded: fills the bytecode cache
    one_plan(2, 0.0, args.cap)
    delegates = [one_delegate(args.sleep, args.cap) for _ in range(args.reps)]
    overhead = statistics.median(delegates) - args.sleep
    rounds = math.ceil(args.tasks / args.cap)
    ideal = rounds * args.sleep + overhead
    plans = [one_plan(args.tasks, args.sleep, args.cap)[0] for _ in range(args.reps)]
    wall = statistics.median(plans)
    ratio = wall / ideal
    cache_dir.cleanup()
    result = {
        "machine": machine(),
        "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
        "tmpdir": args.tmpdir or tempfile.gettempdir(),
        "tasks": args.tasks, "cap": args.cap, "sleep_s": args.sleep, "reps": args.reps,
        "delegate_s": [round(x, 3) for x in delegates], "overhead_s": round(overhead, 3),
        "ideal_s": round(ideal, 3), "plan_s": [round(x, 3) for x in plans], "plan_median_s": round(wall, 3),
        "ratio": round(ratio, 3), "target": TARGET, "met": ratio <= TARGET,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"machine: {result['machine']}")
        print(f"load average (1 min): {result['load_before']} before, {result['load_after']} after; "
              f"tmp: {result['tmpdir']}")
        print(f"single delegate: {', '.join(f'{x:.2f}' for x in delegates)} s -> overhead {overhead:.2f} s")
        print(f"ideal: {rounds} rounds x {args.sleep:g} s + {overhead:.2f} s = {ideal:.2f} s")
        print(f"plan run: {', '.join(f'{x:.2f}' for x in plans)} s (median {wall:.2f} s)")
        print(f"ratio: {ratio:.3f} (target <= {TARGET}): {'met' if result['met'] else 'NOT met'}")
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
