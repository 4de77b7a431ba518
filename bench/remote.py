"""Remote workers: what shipping a base costs, and how long a task takes to reach an agent.

1. Bundle cost on generated repositories (100 and 20,000 small files): the tree of the worktree on
   disk, the ship commit, the full bundle and its size, an incremental bundle after one file changed,
   and the agent's side (fetching each into its cache repository). No hub needed.
2. Dispatch latency with a real nats-server and one agent: from the coordinator's "task sent" event to
   the agent's first worker event relayed back ("attempt 1: ..."), over ROUNDS delegations of a
   trivial scripted worker; also the whole `delegate --remote` wall time.
3. ``--plan``: a plan of TASKS independent tasks whose worker sleeps SLEEP s and writes its own file,
   run with ``bosun plan run --profile remote`` across AGENTS real agents of ``--concurrency CAP``
   (a real nats-server), each task verified by a cheap command. Reported against two ideals: the
   strict packing ideal ``ceil(TASKS / (AGENTS x CAP)) x SLEEP``, and that plus bosun's own fixed
   cost, measured as the same plan with 0 s tasks (worktrees, shipping, verification, merges,
   landing). A per-task timeline (median phase durations) shows where the time goes.

    .venv/bin/python bench/remote.py [--sizes 100 20000] [--rounds 5]
    .venv/bin/python bench/remote.py --plan [--files 100 20000] [--reps 2] [--tasks 20] [--sleep 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from plan_waves import WORKER  # noqa: E402  (bench/plan_waves.py, next to this file)

ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **ENV}).stdout.strip()


def make_repo(path: Path, n: int) -> None:
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    for i in range(n):
        d = path / f"pkg{i % 50}" / f"sub{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod_{i}.py").write_text(f"def f_{i}(x):\n    return x + {i}\n" * 3)
    git("add", "-A", cwd=path)
    git("commit", "-qm", "init", cwd=path)


def timed(fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def bundle_cost(tmp: Path, n: int) -> dict[str, object]:
    from bosun.remote import bundles

    repo = tmp / f"repo{n}"
    make_repo(repo, n)
    out: dict[str, object] = {"files": n}
    t, tree = timed(lambda: bundles.disk_tree(repo, tmp / "scratch"))
    out["disk tree s"] = round(t, 3)
    t, (ship, _, _) = timed(lambda: bundles.plan_ship(repo, tree, None))
    out["ship commit s"] = round(t, 3)
    t, full = timed(lambda: bundles.make_bundle(repo, ship, None))
    out["full bundle s"], out["full bundle bytes"] = round(t, 3), len(full)
    (repo / "pkg0" / "sub0" / "mod_0.py").write_text("changed\n")
    tree2 = bundles.disk_tree(repo, tmp / "scratch")
    tip = {"commit": ship, "bundles": [{"name": "b", "tip": ship}]}
    ship2, parent, _ = bundles.plan_ship(repo, tree2, tip)
    t, delta = timed(lambda: bundles.make_bundle(repo, ship2, parent))
    out["incremental bundle s"], out["incremental bundle bytes"] = round(t, 3), len(delta)
    cache = bundles.cache_repo(tmp / f"cache{n}", "k")
    t, _ = timed(lambda: bundles.fetch_bundle(cache, full))
    out["agent fetch full s"] = round(t, 3)
    t, _ = timed(lambda: bundles.fetch_bundle(cache, delta))
    out["agent fetch incremental s"] = round(t, 3)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A real nats-server with JetStream in ``tmp``; returns once it accepts connections."""
    from bosun.cli.remote_demo import nats_server_binary

    port = free_port()
    store = tmp / f"nats-{port}"
    store.mkdir()
    server = subprocess.Popen([nats_server_binary(), "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(store)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("nats-server did not start") from None
            time.sleep(0.05)
    return server, f"nats://127.0.0.1:{port}"


def dispatch_latency(tmp: Path, rounds: int) -> dict[str, object]:
    sys.path.insert(0, str(ROOT))
    from tests.conftest import make_repo as sample_repo
    from tests.conftest import task_yaml

    server, url = start_server(tmp)
    worker = tmp / "worker.py"
    worker.write_text("import sys,pathlib\nsys.stdin.read()\np=pathlib.Path('src/calc.py')\n"
                      "p.write_text(p.read_text().replace('return a - b  # bug','return a + b'))\nprint('done')\n")
    config = tmp / "agent.toml"
    config.write_text(f'[profiles.fix]\nadapter = "command"\ncommand = {json.dumps([sys.executable, str(worker)])}\n')
    env = {**os.environ, **ENV, "PYTHONPATH": str(ROOT / "src"), "BOSUN_CONFIG": str(config)}
    agent = subprocess.Popen([sys.executable, "-m", "bosun", "agent", "serve", "--nats", url, "--profile", "fix",
                              "--name", "bench"], env={**env, "BOSUN_HOME": str(tmp / "agent-home")},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)
        latencies, walls = [], []
        for k in range(rounds):
            home = tmp / f"coord{k}"
            repo = sample_repo(tmp / f"sample{k}")
            (repo / "bosun.toml").write_text(f'remote = "{url}"\nbaseline = "off"\n')
            git("commit", "-qam", "remote", cwd=repo)
            task = task_yaml(tmp / f"task{k}.json")
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "bosun", "delegate", str(task), "--repo", str(repo),
                                  "--remote", "--json"], env={**env, "BOSUN_HOME": str(home),
                                                              "BOSUN_CONFIG": str(tmp / "none.toml")},
                                 capture_output=True, text=True, timeout=120)
            walls.append(time.perf_counter() - t0)
            res = json.loads(out.stdout)
            assert res["state"] == "verified", res
            events = [json.loads(line) for line in
                      (home / "runs" / res["id"] / "events.jsonl").read_text().splitlines()]
            sent = next(e["ts"] for e in events if "remote: task" in str(e.get("text")))
            first = next(e["ts"] for e in events if str(e.get("text", "")).startswith("attempt 1: profile fix"))
            latencies.append(first - sent)
        return {"rounds": rounds, "dispatch median s": round(statistics.median(latencies), 3),
                "dispatch max s": round(max(latencies), 3),
                "delegate --remote wall median s": round(statistics.median(walls), 2)}
    finally:
        agent.terminate()
        agent.wait(30)
        server.terminate()
        server.wait(10)


# -- 3. a plan across the pool ------------------------------------------------------------------


def bench_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PARENT_AGENT", "BOSUN_PROFILE", "BOSUN_MAX_CONCURRENT_RUNS", "PYTHONDONTWRITEBYTECODE")}
    gitconfig = tmp / "gitconfig"
    gitconfig.write_text("[user]\n\tname = bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    env.update(ENV, PYTHONPATH=str(ROOT / "src"), GIT_CONFIG_GLOBAL=str(gitconfig), GIT_CONFIG_NOSYSTEM="1",
               PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
    return env


class Pool:
    """A nats-server and AGENTS `bosun agent serve` processes of concurrency CAP, each running the
    sleeper through the `command` adapter."""

    def __init__(self, tmp: Path, agents: int, cap: int) -> None:
        self.tmp = tmp
        self.env = bench_env(tmp)
        self.server, self.url = start_server(tmp)
        worker = tmp / "sleeper.py"
        worker.write_text(WORKER)  # @sleep and @write lines of the prompt, as in plan_waves
        config = tmp / "agent.toml"
        config.write_text(f'[profiles.sleeper]\nadapter = "command"\n'
                          f'command = {json.dumps([sys.executable, str(worker)])}\n')
        self.agents: list[subprocess.Popen[bytes]] = []
        self.logs = [tmp / f"agent-a{i}.log" for i in range(agents)]
        for i, log in enumerate(self.logs):
            env = {**self.env, "BOSUN_HOME": str(tmp / f"agent-a{i}"), "BOSUN_CONFIG": str(config)}
            self.agents.append(subprocess.Popen(
                [sys.executable, "-m", "bosun", "agent", "serve", "--nats", self.url, "--profile", "sleeper",
                 "--name", f"a{i}", "--concurrency", str(cap)],
                env=env, stdout=subprocess.DEVNULL, stderr=log.open("ab")))
        deadline = time.monotonic() + 60
        while not all(log.exists() and "serving" in log.read_text() for log in self.logs):
            if time.monotonic() > deadline:
                raise SystemExit("the agents did not start")
            time.sleep(0.1)

    def cpu(self) -> float:
        """CPU seconds the agents used so far, their finished workers included."""
        total = 0.0
        for agent in self.agents:
            fields = Path(f"/proc/{agent.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        return total

    def served(self) -> list[int]:
        return [log.read_text().count("published") for log in self.logs]

    def close(self) -> None:
        for agent in self.agents:
            agent.terminate()
        for agent in self.agents:
            agent.wait(60)
        self.server.terminate()
        self.server.wait(10)


def plan_task(n: int, sleep: float) -> dict[str, object]:
    path = f"out/t{n:02d}.txt"
    return {"id": f"t{n:02d}", "title": f"task {n}", "prompt": f"@sleep {sleep:g}\n@write {path} {n}",
            "owns": [path], "verify": [f"test -s {path}"], "timeout_s": 120}


def run_plan(pool: Pool, label: str, files: int, tasks: int, sleep: float, settings: str) -> dict[str, object]:
    """One `bosun plan run --profile remote` in a fresh repository and BOSUN_HOME; wall time and timeline."""
    tmp = pool.tmp / label
    tmp.mkdir()
    repo = tmp / "repo"
    make_repo(repo, files)
    (repo / "bosun.toml").write_text(f'remote = "{pool.url}"\n{settings}')
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "remote", cwd=repo)
    plan = tmp / "plan.json"
    plan.write_text(json.dumps({"title": f"{tasks} x {sleep:g} s", "tasks": [plan_task(n, sleep) for n in range(tasks)]}))
    home = tmp / "home"
    env = {**pool.env, "BOSUN_HOME": str(home), "BOSUN_CONFIG": str(tmp / "none.toml")}
    import resource

    before, agents_cpu = pool.served(), pool.cpu()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "bosun", "plan", "run", str(plan), "--repo", str(repo), "--profile",
                          "remote", "--json", "--quiet"], env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    coordinator_cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    agents_cpu = pool.cpu() - agents_cpu
    try:
        out = json.loads(res.stdout)
    except ValueError:
        raise SystemExit(f"plan run failed ({res.returncode}):\n{res.stdout}\n{res.stderr}") from None
    if out.get("state") != "succeeded":
        raise SystemExit(f"plan ended {out.get('state')}: {out.get('error')}")
    landed = git("show", "--name-only", "--format=", "HEAD", cwd=repo).split()
    assert len(landed) == tasks, landed
    served = [b - a for a, b in zip(before, pool.served(), strict=True)]
    return {"wall s": round(wall, 2), "served per agent": served,
            "coordinator cpu s": round(coordinator_cpu, 2), "agents cpu s": round(agents_cpu, 2),
            **timeline(home, str(out["id"]))}


def timeline(home: Path, plan_id: str) -> dict[str, object]:
    """Median phase durations per task, from the store's transitions, the plan's events and each run's
    events (the remote adapter's notes and the agent's relayed worker events)."""
    import sqlite3

    db = sqlite3.connect(home / "bosun.db")
    start = db.execute("SELECT MIN(at) FROM plan_events WHERE plan_id = ?", (plan_id,)).fetchone()[0]
    end = db.execute("SELECT MAX(at) FROM plan_events WHERE plan_id = ?", (plan_id,)).fetchone()[0]
    wave = db.execute("SELECT MIN(at) FROM plan_events WHERE plan_id = ? AND kind = 'wave'", (plan_id,)).fetchone()[0]
    phases: dict[str, list[float]] = {}
    spans: list[tuple[float, float]] = []
    marks: dict[str, list[float]] = {"last merged": [], "first prepared": []}
    retried = {}
    for task, run_id, attempts, data in db.execute(
            "SELECT task_id, run_id, attempts, data FROM plan_tasks WHERE plan_id = ?", (plan_id,)).fetchall():
        if attempts > 1:
            retried[task] = [f.get("message") for f in json.loads(data).get("failures") or []]
        at = dict(db.execute("SELECT to_state, MIN(at) FROM transitions WHERE run_id = ? GROUP BY to_state",
                             (run_id,)).fetchall())
        merged = db.execute("SELECT MIN(at) FROM plan_events WHERE plan_id = ? AND task_id = ? AND detail LIKE "
                            "'merged into%'", (plan_id, task)).fetchone()[0]
        ready = db.execute("SELECT MIN(at) FROM plan_events WHERE plan_id = ? AND task_id = ? AND detail LIKE "
                           "'verified and approved%'", (plan_id, task)).fetchone()[0]
        events = [json.loads(line) for line in (home / "runs" / run_id / "events.jsonl").read_text().splitlines()]

        sent, first, result = (next((e["ts"] for e in events if str(e.get("text", "")).startswith(prefix)), None)
                               for prefix in ("remote: task", "attempt 1: profile sleeper", "remote: result"))
        # Relayed events are best effort: one sent before the coordinator listened is not there.
        first = first if first is not None else sent
        points = [("wait for a slot", wave, at["prepared"]), ("prepare", at["prepared"], at["working"]),
                  ("ship + send", at["working"], sent), ("dispatch (sent to worker start)", sent, first),
                  ("agent: worker + change + record", first, result), ("fetch + apply", result, at["worked"]),
                  ("verify", at["worked"], at["verified"]), ("approve + landing commit", at["verified"], ready),
                  ("wait for merge", ready, merged)]
        for name, a, b in points:
            if a is not None and b is not None:
                phases.setdefault(name, []).append(b - a)
        if first is not None and result is not None:
            spans.append((first, result))
        marks["first prepared"].append(at["prepared"])
        marks["last merged"].append(merged)
    # How many workers ran at once (from the relayed start to the result).
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    running = peak = 0
    for _, d in edges:
        running += d
        peak = max(peak, running)
    return {
        "plan start to wave start s": round(wave - start, 2),
        "wave start to last merge s": round(max(marks["last merged"]) - wave, 2),
        "last merge to plan end s": round(end - max(marks["last merged"]), 2),
        "peak workers at once": peak,
        "retried tasks": retried,
        "phase medians s": {k: round(statistics.median(v), 2) for k, v in phases.items()},
        "phase max s": {k: round(max(v), 2) for k, v in phases.items()},
    }


def plan_bench(tmp: Path, files: list[int], reps: int, tasks: int, sleep: float, agents: int, cap: int,
               settings: str, skip_zero: bool = False) -> dict[str, object]:
    import math

    pool = Pool(tmp, agents, cap)
    try:
        run_plan(pool, "warm-up", 10, 2, 0.0, settings)  # discarded: fills the bytecode cache
        out: dict[str, object] = {"tasks": tasks, "sleep s": sleep, "agents": agents, "agent concurrency": cap,
                                  "bosun.toml extra": settings.strip() or "(none)"}
        packing = math.ceil(tasks / (agents * cap)) * sleep
        out["packing ideal s"] = packing
        for n in files:
            # Interleaved, so both plans see the same (shared machine's) load.
            zero, real = [], []
            for k in range(reps):
                if not skip_zero:
                    zero.append(run_plan(pool, f"zero-{n}-{k}", n, tasks, 0.0, settings))
                real.append(run_plan(pool, f"plan-{n}-{k}", n, tasks, sleep, settings))
            fixed = statistics.median(float(z["wall s"]) for z in zero) if zero else float("nan")  # type: ignore[arg-type]
            wall = statistics.median(float(r["wall s"]) for r in real)  # type: ignore[arg-type]
            cpu = statistics.median(float(r["coordinator cpu s"]) + float(r["agents cpu s"])  # type: ignore[arg-type]
                                    for r in real)
            out[f"{n} files"] = {
                "plan wall s": [r["wall s"] for r in real], "0 s plan wall s": [z["wall s"] for z in zero],
                # Coordinator and agents share this machine's cores: their CPU time over the cores is a
                # floor no scheduling beats.
                "cpu floor s": round(cpu / (os.cpu_count() or 1), 2),
                "ratio to packing ideal": round(wall / packing, 2),
                "ideal with bosun's fixed cost s": round(fixed + packing, 2),
                "ratio to packing + fixed cost": round(wall / (fixed + packing), 2),
                "last plan run": real[-1], "last 0 s plan run": zero[-1] if zero else None,
            }
        return out
    finally:
        pool.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 20000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--plan", action="store_true", help="the plan across a pool instead of parts 1 and 2")
    ap.add_argument("--files", type=int, nargs="+", default=[100], help="--plan: repository sizes")
    ap.add_argument("--reps", type=int, default=2, help="--plan: runs of each plan (the median is reported)")
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--sleep", type=float, default=2.0)
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--cap", type=int, default=4, help="--plan: each agent's --concurrency")
    ap.add_argument("--settings", default="", help="--plan: extra bosun.toml lines for the coordinator's repository")
    ap.add_argument("--skip-zero", action="store_true", help="--plan: not the 0 s plan (no second ideal)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bosun-bench-remote-"))
    try:
        report: dict[str, object] = {"machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cpus",
                                     "load before": os.getloadavg()[0]}
        if args.plan:
            report["plan"] = plan_bench(tmp, args.files, args.reps, args.tasks, args.sleep, args.agents, args.cap,
                                        args.settings.replace("\\n", "\n") + "\n", args.skip_zero)
        else:
            report["bundles"] = [bundle_cost(tmp, n) for n in args.sizes]
            report["dispatch"] = dispatch_latency(tmp, args.rounds)
        report["load after"] = os.getloadavg()[0]
        print(json.dumps(report, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
