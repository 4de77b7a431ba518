"""README's "An offline first try", run as written (its port aside): a new user's first bosun.toml with
the scripted model server and the native worker lands the fix, with no key and no network."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def _block() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### An offline first try", 1)[1]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_the_readmes_offline_first_try_lands_the_fix(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    script = "set -e\n" + _block().replace("8765", port).replace("sleep 1", "sleep 2")
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "task ok" in done.stdout and "landable" in done.stdout, done.stdout
    log = done.stdout.strip().splitlines()[-2:]
    assert log[0].split(" ", 1)[1] == "Fix add()" and log[1].endswith("add() subtracts"), log
    assert "return a + b" in (tmp_path / "try-bosun" / "calc.py").read_text()
