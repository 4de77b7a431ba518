"""`delegate --dry-run` shows the command a run starts: for every adapter, the argv the dry run prints
is the argv the real run records (its `command` event), the effort flags included. Each run is the
real CLI against bosun's scripted model server, answering one question in explore mode."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bosun.core.adapters import NAMES
from bosun.replay import ReplayServer
from tests.conftest import ROOT, task_yaml
from tests.e2e.worker_support import API, KEY_ENV, SANDBOX, add_profile, binary, events

pytestmark = [pytest.mark.slow, pytest.mark.cli]

FLAVOUR = {**API, "opencode": "opencode", "pi": "pi", "acp": "opencode", "native": "openai", "command": "openai"}
SCRIPTED = ROOT / "tests" / "workers" / "scripted.py"
# The remote adapter starts no process here: its agent's run takes its command from the same function.
ADAPTERS = sorted(set(NAMES) - {"remote"})
EFFORT = "max"  # on the command line of claude, codex and pi (snapped where needed); in the config of others
EFFORT_FLAGS = {"claude": ["--effort", "max"], "codex": ["-c", 'model_reasoning_effort="xhigh"'],
                "pi": ["--thinking", "high"]}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


def _profile(repo: Path, adapter: str, base_url: str) -> str:
    if adapter not in ("acp", "command", "native"):
        return add_profile(repo, adapter, base_url, effort=EFFORT)
    command = {"acp": [binary("opencode"), "acp"], "command": [sys.executable, str(SCRIPTED), "noop"]}.get(adapter)
    lines = [f"\n[profiles.{adapter}]", f'adapter = "{adapter}"', 'model = "mock-model"', f'base_url = "{base_url}"',
             f'api_key_env = "{KEY_ENV}"', "timeout_s = 120", f'effort = "{EFFORT}"']
    if command:
        lines.append(f"command = {json.dumps(command)}")
    config = repo / "bosun.toml"
    text = config.read_text()
    if not text.startswith("sandbox ="):
        text = f"sandbox = {json.dumps(SANDBOX)}\n" + text
    config.write_text(text + "\n".join(lines) + "\n")
    return adapter


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_the_dry_run_shows_the_command_the_run_starts(cli, repo, tmp_path, adapter):
    task = task_yaml(tmp_path / "explore.json", mode="explore", verify=[], locked=[], prompt="How does add() work?",
                     timeout_s=300)
    with ReplayServer({"turns": [{"say": "add() subtracts."}]}) as srv:
        profile = _profile(repo, adapter, srv.base_url(FLAVOUR[adapter]))
        code, dry = cli("delegate", str(task), "--repo", str(repo), "--profile", profile, "--dry-run", "--json")
        assert code == 0, dry
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", profile, "--json")
    ran = [e["argv"] for e in events(res) if e["type"] == "command"]
    shown = dry["worker"]["argv"]
    if adapter == "native":  # bosun's own loop: no process, on either side
        assert shown is None and ran == [], (shown, ran)
        return
    assert len(ran) == 1, (res["state"], res["error"])
    # The run's directory, worktree and id are the dry run's <run-dir>, the repository and <run-id>.
    recorded = [a.replace(res["run_dir"], "<run-dir>").replace(res["worktree"], str(repo)).replace(res["id"], "<run-id>")
                for a in ran[0]]
    # A CLI that serves itself on loopback gets a free port when its run starts: the dry run says <port>.
    recorded = ["<port>" if i and recorded[i - 1] == "--port" and shown[i] == "<port>" else a
                for i, a in enumerate(recorded)] if len(recorded) == len(shown) else recorded
    assert shown == recorded
    flags = EFFORT_FLAGS.get(adapter)
    if flags:
        assert any(shown[i:i + len(flags)] == flags for i in range(len(shown))), shown
