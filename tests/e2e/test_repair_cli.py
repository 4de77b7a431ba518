"""A repair round through a real worker CLI (OpenCode), in its resumed session, against a replay server
with a model name it has never heard of: the first turn's change fails the tests, the repair turn is
shown the failing test and its assertion output, fixes add() in the same session, and the run lands."""

from __future__ import annotations

import json

import pytest

from bosun.replay import ReplayServer
from tests.conftest import git, task_yaml
from tests.e2e.worker_support import API, KEY_ENV, add_profile, binary, events

pytestmark = [pytest.mark.slow, pytest.mark.cli]

MODEL = "qwen3-coder-30b-a3b"
TURNS = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a * b"},
    {"say": "Fixed add() in src/calc.py."},
    # The repair turn, in the same (resumed) session: the evidence says add(2, 3) gave 6.
    {"edit": "src/calc.py", "old": "return a * b", "new": "return a + b"},
    {"say": "add() multiplied; it adds now."},
]


def test_a_real_cli_repairs_in_its_resumed_session(cli, repo, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")
    binary("opencode")
    with ReplayServer({"turns": TURNS, "models": [MODEL], "consume_toolless": False}) as srv:
        add_profile(repo, "opencode", srv.base_url(API.get("opencode", "opencode")), name="worker", model=MODEL)
        task = task_yaml(tmp_path / "task.json", timeout_s=300, repair=1)
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "worker", "--auto-approve", "--json")
        bodies = [json.dumps(r.get("body")) for r in srv.requests if r.get("source") == "turn"]
        errors = list(srv.errors)
    assert not errors, errors
    assert code == 0 and res["verdict"]["outcome"] == "landable", (res.get("verdict"), events(res)[-8:])
    assert "return a + b\n" in git(repo, "show", f"{res['merged_commit']}:src/calc.py")
    sessions = {e["session_id"] for e in events(res) if e["type"] == "session"}
    assert len(sessions) == 1, sessions  # the repair turn resumed the first turn's session
    assert any("tests/test_calc.py::test_add" in b and "assert 6 == 5" in b for b in bodies)  # shown the evidence
    code, shown = cli("show", res["id"], "--json")
    assert [t["kind"] for t in shown["turns"]] == ["work", "repair"] and shown["turns"][1]["resumed"] is True
