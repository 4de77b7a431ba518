"""`bosun agent serve --supervise`: a stop that comes while the supervisor waits to restart a dead
agent ends it there, and no new agent is started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_sigterm_while_waiting_to_restart_stops_the_supervisor(tmp_path: Path):
    config = tmp_path / "agent.toml"
    config.write_text('[profiles.fix]\nadapter = "command"\ncommand = ["true"]\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BOSUN_CONFIG": str(config),
           "BOSUN_REMOTE_CONNECT_TIMEOUT_S": "1"}
    # Nothing listens on the hub's port: each agent it starts fails at once and exits.
    proc = subprocess.Popen(
        [sys.executable, "-m", "bosun", "agent", "serve", "--supervise", "--profile", "fix",
         "--nats", f"nats://127.0.0.1:{_free_port()}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        for line in proc.stderr:
            lines.append(line)
            if "restarting in" in line:
                proc.send_signal(signal.SIGTERM)  # during the wait before the restart
                break
        stopped_at = time.monotonic()
        _, rest = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    lines += rest.splitlines(keepends=True)
    assert proc.returncode == 0, lines
    assert time.monotonic() - stopped_at < 10, lines
    agents = [line for line in lines if "error:" in line]  # each agent started says why it could not serve
    assert len(agents) == 1, lines
    assert any("stopped while waiting to restart" in line for line in lines), lines
