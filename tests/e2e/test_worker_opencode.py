"""OpenCode as a worker: the real CLI against bosun's scripted model server, through the real loop.

OpenCode gets absolute paths under the run's worktree; the replay server finds that root in OpenCode's
system prompt ("Working directory: ..."), so the scripts use repo-relative paths.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bosun.replay import ReplayServer
from tests.conftest import task_yaml
from tests.e2e.cli_support import cli_binary
from tests.e2e.worker_support import add_profile, events, processes_of

pytestmark = [pytest.mark.slow, pytest.mark.cli]

KEY_ENV = "BOSUN_TEST_KEY"
FIX = [
    {"run": "git commit -am wip"},  # refused by the agent's permission rules
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b", "usage": {"input": 900, "output": 40, "cached": 512}},
    {"say": "Fixed add() in src/calc.py."},
]


@pytest.fixture(scope="module")
def opencode() -> str:
    return cli_binary("opencode")


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


def delegate(cli, repo: Path, task: Path, *extra: str) -> tuple[int, dict]:
    return cli("delegate", str(task), "--repo", str(repo), "--profile", "oc", "--json", *extra)


def test_opencode_fixes_the_bug_with_permissions_enforced(cli, repo, task_file, opencode):
    from bosun.store.db import open_store

    with ReplayServer(FIX) as srv:
        add_profile(repo, "opencode", srv.base_url("opencode"), name="oc")
        code, res = delegate(cli, repo, task_file, "--auto-approve")
        tools = srv.requests[-1]["tools"]
        assert not srv.errors, srv.errors
    assert code == 0, res
    assert res["state"] == "cleaned"
    assert "return a + b" in (repo / "src" / "calc.py").read_text()
    assert res["usage"]["input_tokens"] > 0 and res["usage"]["output_tokens"] > 0
    assert res["usage"]["cached_input_tokens"] == 512
    assert res["final_message"] == "Fixed add() in src/calc.py."
    run = open_store().get_run(res["id"])
    assert run.session_id.startswith("ses_")
    evs = events(res)
    denied = [e for e in evs if e["type"] == "tool_result" and e.get("denied")]
    assert denied and denied[0]["tool"] == "bash", evs
    assert any(e["type"] == "tool_result" and e["tool"] == "edit" and e["ok"] for e in evs)
    assert sum(1 for e in evs if e["type"] == "usage") == 4  # one per model turn
    assert {"bash", "edit", "read"} <= set(tools) and "webfetch" not in tools and "task" not in tools


def test_opencode_read_only_mode_gets_no_edit_or_shell(cli, repo, tmp_path, opencode):
    task = task_yaml(tmp_path / "t.json", mode="explore", verify=[], locked=[], prompt="How does add() work?")
    with ReplayServer([{"read": "src/calc.py"}, {"say": "add() subtracts."}]) as srv:
        add_profile(repo, "opencode", srv.base_url("opencode"), name="oc")
        code, res = delegate(cli, repo, task)
        tools = set(srv.requests[-1]["tools"])
    assert res["final_message"] == "add() subtracts.", res
    assert "read" in tools and not tools & {"edit", "write", "bash", "task", "webfetch"}, tools


def test_opencode_edit_of_a_locked_file_is_rejected(cli, repo, task_file, opencode):
    script = [
        {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
        {"edit": "tests/test_calc.py", "old": "assert add(2, 3) == 5", "new": "assert add(2, 3) == 5  # ok"},
        {"say": "Done."},
    ]
    with ReplayServer(script) as srv:
        add_profile(repo, "opencode", srv.base_url("opencode"), name="oc")
        code, res = delegate(cli, repo, task_file, "--auto-approve")
    assert code == 3, res
    assert res["state"] == "rejected"
    assert any(g["code"] == "LOCKED_PATH_CHANGED" and not g["ok"] for g in res["gates"]), res["gates"]
    assert "return a - b  # bug" in (repo / "src" / "calc.py").read_text()  # nothing landed


def test_opencode_rate_limit_is_classified_without_waiting_for_its_retries(cli, repo, task_file, opencode):
    from bosun.store.db import open_store

    with ReplayServer([{"fault": 429, "repeat": 20}]) as srv:
        add_profile(repo, "opencode", srv.base_url("opencode"), name="oc")
        started = time.monotonic()
        code, res = delegate(cli, repo, task_file)
        elapsed = time.monotonic() - started
        refused = len(srv.requests)
    assert res["state"] == "failed", res
    assert res["error"]["code"] == "RATE_LIMITED"
    assert refused < 6 and elapsed < 40  # OpenCode alone retries 5 times over ~70 s
    attempts = open_store().attempts(res["id"])
    assert [a["error_class"] for a in attempts] == ["rate_limited"]
    assert "oc" in open_store().cooldowns(now=0)


def test_opencode_bad_key_blocks_without_fallback(cli, repo, task_file, opencode):
    from bosun.store.db import open_store

    with ReplayServer([{"fault": 401, "repeat": 5}]) as srv:
        add_profile(repo, "opencode", srv.base_url("opencode"), name="oc", fallbacks=["fix"])
        code, res = delegate(cli, repo, task_file)
    assert res["state"] == "blocked", res
    assert res["error"]["code"] == "AUTH"
    assert KEY_ENV in res["error"]["hint"]
    assert [a["profile"] for a in open_store().attempts(res["id"])] == ["oc"]  # no fallback to "fix"


def test_opencode_unknown_model_is_model_unavailable(cli, repo, task_file, opencode):
    with ReplayServer([{"fault": "model_not_found", "repeat": 5}]) as srv:
        add_profile(repo, "opencode", srv.base_url("opencode"), name="oc")
        code, res = delegate(cli, repo, task_file)
    assert res["state"] == "failed", res
    assert res["error"]["code"] == "MODEL_UNAVAILABLE"


def test_opencode_stalled_stream_times_out_and_leaves_no_process(cli, repo, tmp_path, opencode):
    task = task_yaml(tmp_path / "t.json", timeout_s=8)
    with ReplayServer([{"run": "sleep 300"}, {"fault": "stall", "stall_s": 120}]) as srv:
        add_profile(repo, "opencode", srv.base_url("opencode"), name="oc")
        started = time.monotonic()
        code, res = delegate(cli, repo, task)
        elapsed = time.monotonic() - started
    assert code == 4, res
    assert res["error"]["code"] == "TIMEOUT"
    assert elapsed < 30
    # OpenCode starts shell commands in their own session: `sleep 300` outlives the group kill
    # unless bosun reaps it.
    assert processes_of(res["run_dir"]) == []


def test_opencode_resume_continues_the_session(cli, repo, tmp_path, opencode):
    from bosun.store.db import open_store

    task = task_yaml(tmp_path / "t.json")
    script = [
        {"read": "src/calc.py"},
        {"say": "add() subtracts; should I change it?"},
        {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
        {"say": "Done."},
    ]
    with ReplayServer(script) as srv:
        add_profile(repo, "opencode", srv.base_url("opencode"), name="oc")
        code, res = delegate(cli, repo, task)
        assert res["state"] == "rejected", res  # no change yet
        first_session = open_store().get_run(res["id"]).session_id
        code, res = cli("work", res["id"], "--resume", "Yes, fix it.", "--json")
        assert res["state"] == "worked", res
        code, res = cli("verify", res["id"], "--json")
        assert code == 0 and res["state"] == "verified", res
        last = srv.requests[-1]["body"]["messages"]
    assert open_store().get_run(res["id"]).session_id == first_session
    texts = [json.dumps(m.get("content")) for m in last]
    assert any("Yes, fix it." in t for t in texts)
    assert any("should I change it" in t for t in texts)  # the same conversation
