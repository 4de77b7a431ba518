"""The acp adapter against a real ACP agent: `opencode acp`, talking to bosun's scripted model server.

bosun is the ACP client: it configures OpenCode as the opencode adapter does (provider, model and the
mode's permission rules in OPENCODE_CONFIG_CONTENT), opens one session, sends the prompt and turns the
session updates into events.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bosun.replay import ReplayServer
from tests.conftest import task_yaml
from tests.e2e.cli_support import cli_binary
from tests.e2e.worker_support import SANDBOX, events, processes_of

pytestmark = [pytest.mark.slow, pytest.mark.cli]

KEY_ENV = "BOSUN_TEST_KEY"
ROOT = Path(__file__).resolve().parents[2]
FIX = [
    {"run": "git commit -am wip"},  # refused by the rules bosun gives OpenCode
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
    {"say": "Fixed add() in src/calc.py."},
]


@pytest.fixture(scope="module")
def opencode() -> str:
    return cli_binary("opencode")


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


def add_acp_profile(repo: Path, opencode: str, base_url: str, **extra: object) -> None:
    lines = [
        "\n[profiles.agent]",
        'adapter = "acp"',
        f"command = {json.dumps([opencode, 'acp'])}",
        'model = "mock-model"',
        f'base_url = "{base_url}"',
        f'api_key_env = "{KEY_ENV}"',
        "timeout_s = 120",
    ]
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    config = repo / "bosun.toml"
    text = config.read_text() if config.exists() else ""
    if not text.startswith("sandbox ="):
        text = f"sandbox = {json.dumps(SANDBOX)}\n" + text
    config.write_text(text + "\n".join(lines) + "\n")


def delegate(cli, repo: Path, task: Path, *extra: str) -> tuple[int, dict]:
    return cli("delegate", str(task), "--repo", str(repo), "--profile", "agent", "--json", *extra)


def test_acp_agent_fixes_the_bug(cli, repo, task_file, opencode):
    from bosun.store.db import open_store

    with ReplayServer(FIX) as srv:
        add_acp_profile(repo, opencode, srv.base_url("opencode"))
        code, res = delegate(cli, repo, task_file, "--auto-approve")
        tools = srv.requests[-1]["tools"]
        assert not srv.errors, srv.errors
    assert code == 0, res
    assert res["state"] == "cleaned", res
    assert "return a + b" in (repo / "src" / "calc.py").read_text()
    assert res["final_message"] == "Fixed add() in src/calc.py."
    assert res["usage"]["input_tokens"] > 0, res["usage"]
    if SANDBOX == "required":
        assert res["sandbox"]["mechanism"] in ("namespaces", "landlock"), res["sandbox"]
    assert open_store().get_run(res["id"]).session_id.startswith("ses_")
    evs = events(res)
    results = [e for e in evs if e["type"] == "tool_result"]
    denied = [e for e in results if e["denied"]]
    assert len(denied) == 1 and "git commit" in json.dumps(evs), results
    assert any(e["tool"] == "edit" and e["ok"] for e in results), results
    assert {"bash", "edit", "read"} <= set(tools) and "webfetch" not in tools
    assert not processes_of(res["run_dir"])


def test_acp_explore_mode_gets_no_edit_or_shell(cli, repo, tmp_path, opencode):
    task = task_yaml(tmp_path / "t.json", mode="explore", verify=[], locked=[], prompt="How does add() work?")
    with ReplayServer([{"read": "src/calc.py"}, {"say": "add() subtracts."}]) as srv:
        add_acp_profile(repo, opencode, srv.base_url("opencode"))
        code, res = delegate(cli, repo, task)
        tools = set(srv.requests[-1]["tools"])
    assert res["final_message"] == "add() subtracts.", res
    assert "read" in tools and not tools & {"edit", "write", "bash", "webfetch"}, tools


def test_acp_resume_loads_the_session(cli, repo, tmp_path, opencode):
    from bosun.store.db import open_store

    task = task_yaml(tmp_path / "t.json")
    script = [
        {"read": "src/calc.py"},
        {"say": "add() subtracts; should I change it?"},
        {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
        {"say": "Done."},
    ]
    with ReplayServer(script) as srv:
        add_acp_profile(repo, opencode, srv.base_url("opencode"))
        code, res = delegate(cli, repo, task)
        assert res["state"] == "rejected", res  # no change yet
        first_session = open_store().get_run(res["id"]).session_id
        code, res = cli("work", res["id"], "--resume", "Yes, fix it.", "--json")
        assert res["state"] == "worked", res
        last = srv.requests[-1]["body"]["messages"]
    run = open_store().get_run(res["id"])
    assert run.session_id == first_session
    texts = [json.dumps(m.get("content")) for m in last]
    assert any("Yes, fix it." in t for t in texts)
    assert any("should I change it" in t for t in texts)  # the same conversation
    assert "return a + b" in (Path(run.worktree) / "src" / "calc.py").read_text()


def test_acp_bad_key_blocks(cli, repo, task_file, opencode):
    with ReplayServer([{"fault": 401, "repeat": 5}]) as srv:
        add_acp_profile(repo, opencode, srv.base_url("opencode"))
        code, res = delegate(cli, repo, task_file)
    assert res["state"] == "blocked", res
    assert res["error"]["code"] == "AUTH"


def test_acp_rate_limit_is_classified_without_waiting_for_opencodes_retries(cli, repo, task_file, opencode):
    with ReplayServer([{"fault": 429, "repeat": 20}]) as srv:
        add_acp_profile(repo, opencode, srv.base_url("opencode"))
        code, res = delegate(cli, repo, task_file)
        refused = len(srv.requests)
    assert res["state"] == "failed", res
    assert res["error"]["code"] == "RATE_LIMITED"
    assert refused < 6  # OpenCode alone retries 5 times over ~70 s


def test_acp_cancel_ends_the_turn_and_leaves_no_process(cli, repo, task_file, opencode):
    with ReplayServer([{"fault": "stall", "stall_s": 120}]) as srv:
        add_acp_profile(repo, opencode, srv.base_url("opencode"))
        code, res = cli("prepare", str(task_file), "--repo", str(repo), "--profile", "agent", "--json")
        run_id = res["id"]
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        worker = subprocess.Popen([sys.executable, "-m", "bosun", "work", run_id, "--json"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not srv.requests:
                time.sleep(0.2)  # the agent is waiting for the stalled model
            assert srv.requests, "the agent never reached the model"
            code, cancelled = cli("cancel", run_id, "--json")
            out, _ = worker.communicate(timeout=60)
        finally:
            if worker.poll() is None:
                os.killpg(worker.pid, 9)
    res = json.loads(out)
    assert res["state"] == "cancelled", res
    assert res["error"]["code"] == "CANCELLED"
    assert not processes_of(res["run_dir"])
