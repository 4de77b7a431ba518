"""Pi as a worker: the real CLI against bosun's scripted model server, through the real loop.

Pi gets absolute paths under the run's worktree; the replay server finds that root in Pi's system
prompt (``<cwd>...</cwd>``), so the scripts use repo-relative paths.
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
    {"edit": "src/calc.py", "old": "return a * b", "new": "return a + b"},  # a failing tool call
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b", "usage": {"input": 900, "output": 40, "cached": 512}},
    {"say": "Fixed add() in src/calc.py."},
]


@pytest.fixture(scope="module")
def pi() -> str:
    return cli_binary("pi")


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


def delegate(cli, repo: Path, task: Path, *extra: str) -> tuple[int, dict]:
    return cli("delegate", str(task), "--repo", str(repo), "--profile", "pi", "--json", *extra)


@pytest.mark.smoke  # `make test`: one real CLI per wire API
def test_pi_fixes_the_bug(cli, repo, task_file, pi):
    from bosun.store.db import open_store

    with ReplayServer(FIX) as srv:
        add_profile(repo, "pi", srv.base_url("pi"), name="pi")
        code, res = delegate(cli, repo, task_file, "--auto-approve")
        tools = srv.requests[-1]["tools"]
        assert not srv.errors, srv.errors
    assert code == 0, res
    assert res["state"] == "cleaned"
    assert "return a + b" in (repo / "src" / "calc.py").read_text()
    assert res["usage"]["input_tokens"] > 0 and res["usage"]["output_tokens"] > 0
    assert res["usage"]["cached_input_tokens"] == 512
    assert res["final_message"] == "Fixed add() in src/calc.py."
    assert open_store().get_run(res["id"]).session_id
    evs = events(res)
    results = [e for e in evs if e["type"] == "tool_result"]
    assert [(e["tool"], e["ok"]) for e in results] == [("edit", False), ("read", True), ("edit", True)]
    assert sum(1 for e in evs if e["type"] == "usage") == 4  # one per model turn, not per stream delta
    assert sorted(tools) == ["bash", "edit", "find", "grep", "ls", "read", "write"]
    # Pi cannot filter shell commands: the run record says so.
    assert any("shell deny rules" in rule for rule in res["unenforced"])
    attempt = open_store().attempts(res["id"])[0]
    assert "shell deny rules" in json.dumps(attempt)  # recorded as not enforced by Pi


def test_pi_read_only_mode_gets_only_read_tools(cli, repo, tmp_path, pi):
    task = task_yaml(tmp_path / "t.json", mode="review", verify=[], locked=[], prompt="Review add().")
    with ReplayServer([{"read": "src/calc.py"}, {"say": "add() subtracts."}]) as srv:
        add_profile(repo, "pi", srv.base_url("pi"), name="pi")
        code, res = delegate(cli, repo, task)
        tools = srv.requests[-1]["tools"]
    assert res["final_message"] == "add() subtracts.", res
    assert sorted(tools) == ["find", "grep", "ls", "read"]


def test_pi_edit_of_a_locked_file_is_rejected(cli, repo, task_file, pi):
    script = [
        {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
        {"edit": "tests/test_calc.py", "old": "assert add(2, 3) == 5", "new": "assert add(2, 3) == 5  # ok"},
        {"say": "Done."},
    ]
    with ReplayServer(script) as srv:
        add_profile(repo, "pi", srv.base_url("pi"), name="pi")
        code, res = delegate(cli, repo, task_file, "--auto-approve")
    assert code == 3, res
    assert res["state"] == "rejected"
    assert any(g["code"] == "LOCKED_PATH_CHANGED" and not g["ok"] for g in res["gates"]), res["gates"]
    assert "return a - b  # bug" in (repo / "src" / "calc.py").read_text()


def test_pi_rate_limit_is_classified(cli, repo, task_file, pi):
    from bosun.store.db import open_store

    with ReplayServer([{"fault": 429, "repeat": 20}]) as srv:
        add_profile(repo, "pi", srv.base_url("pi"), name="pi")
        started = time.monotonic()
        code, res = delegate(cli, repo, task_file)
        elapsed = time.monotonic() - started
        refused = len(srv.requests)
    assert res["state"] == "failed", res
    assert res["error"]["code"] == "RATE_LIMITED"
    assert refused == 3 and elapsed < 30  # Pi's own retries are capped at 2 by bosun's settings
    assert [a["error_class"] for a in open_store().attempts(res["id"])] == ["rate_limited"]
    assert "pi" in open_store().cooldowns(now=0)


def test_pi_recovers_from_one_rate_limit_by_itself(cli, repo, task_file, pi):
    script = [{"fault": 429, "retry_after": 1}, *FIX[1:]]
    with ReplayServer(script) as srv:
        add_profile(repo, "pi", srv.base_url("pi"), name="pi")
        code, res = delegate(cli, repo, task_file)
    assert code == 0 and res["state"] == "verified", res


def test_pi_bad_key_blocks_without_fallback(cli, repo, task_file, pi):
    from bosun.store.db import open_store

    with ReplayServer([{"fault": 401, "repeat": 5}]) as srv:
        add_profile(repo, "pi", srv.base_url("pi"), name="pi", fallbacks=["fix"])
        code, res = delegate(cli, repo, task_file)
    assert res["state"] == "blocked", res
    assert res["error"]["code"] == "AUTH"
    assert [a["profile"] for a in open_store().attempts(res["id"])] == ["pi"]


def test_pi_unknown_model_is_model_unavailable(cli, repo, task_file, pi):
    with ReplayServer([{"fault": "model_not_found", "repeat": 5}]) as srv:
        add_profile(repo, "pi", srv.base_url("pi"), name="pi")
        code, res = delegate(cli, repo, task_file)
    assert res["state"] == "failed", res
    assert res["error"]["code"] == "MODEL_UNAVAILABLE"


def test_pi_stalled_stream_times_out_and_leaves_no_process(cli, repo, tmp_path, pi):
    task = task_yaml(tmp_path / "t.json", timeout_s=5)
    with ReplayServer([{"run": "sleep 300"}, {"fault": "stall", "stall_s": 120}]) as srv:
        add_profile(repo, "pi", srv.base_url("pi"), name="pi")
        started = time.monotonic()
        code, res = delegate(cli, repo, task)
        elapsed = time.monotonic() - started
    assert code == 4, res
    assert res["error"]["code"] == "TIMEOUT"
    assert elapsed < 25
    assert processes_of(res["run_dir"]) == []


def test_pi_resume_continues_the_session(cli, repo, tmp_path, pi):
    from bosun.store.db import open_store

    task = task_yaml(tmp_path / "t.json")
    script = [
        {"read": "src/calc.py"},
        {"say": "add() subtracts; should I change it?"},
        {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
        {"say": "Done."},
    ]
    with ReplayServer(script) as srv:
        add_profile(repo, "pi", srv.base_url("pi"), name="pi")
        code, res = delegate(cli, repo, task)
        assert res["state"] == "rejected", res
        first_session = open_store().get_run(res["id"]).session_id
        code, res = cli("work", res["id"], "--resume", "Yes, fix it.", "--json")
        assert res["state"] == "worked", res
        code, res = cli("verify", res["id"], "--json")
        assert code == 0 and res["state"] == "verified", res
        last = srv.requests[-1]["body"]["messages"]
    assert open_store().get_run(res["id"]).session_id == first_session
    texts = [json.dumps(m.get("content")) for m in last]
    assert any("Yes, fix it." in t for t in texts)
    assert any("should I change it" in t for t in texts)
