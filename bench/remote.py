"""Remote workers: what shipping a base costs, and how long a task takes to reach an agent.

1. Bundle cost on generated repositories (100 and 20,000 small files): the tree of the worktree on
   disk, the ship commit, the full bundle and its size, an incremental bundle after one file changed,
   and the agent's side (fetching each into its cache repository). No hub needed.
2. Dispatch latency with a real nats-server and one agent: from the coordinator's "task sent" event to
   the agent's first worker event relayed back ("attempt 1: ..."), over ROUNDS delegations of a
   trivial scripted worker; also the whole `delegate --remote` wall time.

    .venv/bin/python bench/remote.py [--sizes 100 20000] [--rounds 5]
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


def dispatch_latency(tmp: Path, rounds: int) -> dict[str, object]:
    sys.path.insert(0, str(ROOT))
    from tests.conftest import make_repo as sample_repo
    from tests.conftest import task_yaml

    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    (tmp / "nats").mkdir()
    server = subprocess.Popen([str(Path(sys.executable).with_name("nats-server")), "-a", "127.0.0.1", "-p",
                               str(port), "-js", "-sd", str(tmp / "nats")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 20000])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bosun-bench-remote-"))
    try:
        report = {"machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cpus",
                  "bundles": [bundle_cost(tmp, n) for n in args.sizes],
                  "dispatch": dispatch_latency(tmp, args.rounds)}
        print(json.dumps(report, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
