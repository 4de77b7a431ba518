"""`bosun demo --remote` numbers its steps 1..n, one number per step, however many agents it starts.

The demo runs here with its processes stood in for (no hub, no agents, a plan answer made up), so the
narration is the one it prints, in a fraction of a second."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bosun.cli import remote_demo


class _Process:
    def poll(self) -> int:
        return 0

    def wait(self, timeout: float | None = None) -> int:
        return 0


def test_the_steps_are_numbered_once_each_in_order(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    real_run, real_popen = subprocess.run, subprocess.Popen

    def popen(argv: list[str], *args: Any, **kw: Any) -> Any:
        return real_popen(argv, *args, **kw) if argv[0] == "git" else _Process()

    def run(argv: list[str], *args: Any, **kw: Any) -> Any:
        if argv[0] == "git":  # the sample repository is real
            return real_run(argv, *args, **kw)
        tasks = [{"id": n, "state": "merged"} for n in remote_demo.NAMES]
        return subprocess.CompletedProcess(argv, 0, json.dumps({"id": "p-1", "state": "succeeded", "tasks": tasks}), "")

    monkeypatch.setattr(remote_demo, "nats_server_binary", lambda: "nats-server")
    monkeypatch.setattr(remote_demo, "_wait_port", lambda port: None)
    monkeypatch.setattr(remote_demo.subprocess, "Popen", popen)
    monkeypatch.setattr(remote_demo.subprocess, "run", run)
    monkeypatch.setattr(remote_demo.tempfile, "mkdtemp", lambda prefix: str(tmp_path / "demo"))
    (tmp_path / "demo").mkdir()

    assert remote_demo.run_remote_demo() == 0
    numbers = [int(m.group(1)) for m in re.finditer(r"^(\d+)\. ", capsys.readouterr().err, re.M)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 4, numbers
