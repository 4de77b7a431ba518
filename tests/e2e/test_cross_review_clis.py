"""Cross-review through real worker CLIs, with model names they have never heard of.

The worker (OpenCode) and the reviewer (Claude Code, Codex or Pi) each talk to a replay server of their
own, so each plays its own conversation: the worker's first turn and its revise turn, the reviewer's
two rounds. The worker plants a bug the tests miss (``a != 7``); the reviewer reads the file in
``review`` mode (read-only), reports a P1 at src/calc.py:2 as JSON, the worker's revise turn fixes it
and the second round finds nothing. A reviewer that answers prose is a reason for a person.
"""

from __future__ import annotations

import json

import pytest

from bosun.core.paths import run_dir
from bosun.replay import ReplayServer
from tests.conftest import git, task_yaml
from tests.e2e.worker_support import API, KEY_ENV, add_profile, binary, events

pytestmark = [pytest.mark.slow, pytest.mark.cli]

PLANTED = "return a + b if a != 7 else 0"
WORKER_TURNS = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": PLANTED},
    {"say": "Fixed add() in src/calc.py."},
    # The revise turn, in the same (resumed) session: the file was read above.
    {"edit": "src/calc.py", "old": PLANTED, "new": "return a + b"},
    {"say": "Removed the special case for 7."},
]
P1 = {"severity": "P1", "path": "src/calc.py", "line": 2,
      "claim": "add() returns 0 whenever a is 7", "suggested_fix": "return a + b"}
REVIEW_TURNS = [
    {"read": "src/calc.py"},
    # As models often answer: a preface and a fenced report.
    {"say": "One real defect.\n\n```json\n" + json.dumps({"findings": [P1], "summary": "add() is wrong for a == 7."},
                                                          indent=2) + "\n```"},
    {"read": "src/calc.py"},
    {"say": json.dumps({"findings": [], "summary": "add() adds."})},
]
PROSE_TURNS = [
    {"read": "src/calc.py"},
    {"say": "The change looks fine to me; add() now adds its two arguments."},
]
FIX_TURNS = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
    {"say": "Fixed add() in src/calc.py."},
]
WORKER_MODEL = "qwen3-coder-30b-a3b"
FLAVOUR = {**API, "opencode": "opencode", "pi": "pi"}
WRITE_TOOLS = {"edit", "write", "Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "write_file", "replace"}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


def _script(turns: list, model: str) -> dict:
    # Every conversational request of these CLIs advertises tools; a toolless one (a title, a topic)
    # never takes a turn.
    return {"turns": turns, "models": [model], "consume_toolless": False}


def _served(srv: ReplayServer) -> dict:
    turns = [r for r in srv.requests if r.get("source") == "turn"]
    return {"turns": srv.turns_used, "errors": list(srv.errors), "models": {str(r.get("model")) for r in turns},
            "tools": {t for r in turns for t in r.get("tools") or []},
            "results": [str(x.get("output")) for r in turns for x in r.get("tool_results") or []],
            "bodies": [json.dumps(r.get("body")) for r in turns]}


def _delegate(cli, repo, tmp_path, worker_turns, review_adapter, review_model, review_turns, rounds=2):
    binary("opencode")
    binary(review_adapter)
    with ReplayServer(_script(worker_turns, WORKER_MODEL)) as wsrv, \
            ReplayServer(_script(review_turns, review_model)) as rsrv:
        add_profile(repo, "opencode", wsrv.base_url(FLAVOUR["opencode"]), name="worker", model=WORKER_MODEL)
        add_profile(repo, review_adapter, rsrv.base_url(FLAVOUR[review_adapter]), name="reviewer",
                    model=review_model)
        task = task_yaml(tmp_path / "task.json", timeout_s=300, review={"profile": "reviewer", "rounds": rounds})
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "worker", "--auto-approve", "--json")
        servers = {"worker": _served(wsrv), "reviewer": _served(rsrv)}
    for name, served in servers.items():
        assert not served["errors"], (name, served["errors"])
    assert "run_dir" in res, res  # the run started: no preflight problem
    return code, res, servers


def _sessions(res: dict) -> list[tuple[str, str]]:
    """(profile, session id) of each turn, in order."""
    out, profile = [], ""
    for e in events(res):
        text = e.get("text") or ""
        if e["type"] == "message" and e.get("role") == "system" and text.startswith("attempt "):
            profile = text.split("profile ", 1)[1].split(" ", 1)[0]
        elif e["type"] == "session":
            out.append((profile, e["session_id"]))
    return out


def _record(res: dict) -> dict:
    return json.loads((run_dir(res["id"]) / "cross_review.json").read_text())


@pytest.mark.parametrize(("review_adapter", "review_model"), [
    ("claude", "my-org/llama-70b-instruct"),
    ("codex", "deepseek-chat"),
])
def test_a_real_reviewer_finds_the_planted_bug_and_the_real_worker_fixes_it(
        cli, repo, tmp_path, review_adapter, review_model):
    code, res, servers = _delegate(cli, repo, tmp_path, WORKER_TURNS, review_adapter, review_model, REVIEW_TURNS)
    assert code == 0, (res["state"], res.get("error"), res.get("verdict"), events(res)[-8:])
    assert res["verdict"]["outcome"] == "landable", res["verdict"]
    assert res["merged_commit"], res
    landed = git(repo, "show", f"{res['merged_commit']}:src/calc.py")
    assert "return a + b\n" in landed and "a != 7" not in landed, landed
    doc = _record(res)
    first, second = doc["rounds"]
    assert first["adapter"] == review_adapter and first["status"] == "findings", first
    assert [f["severity"] for f in first["findings"]] == ["P1"], first["findings"]
    assert first["findings"][0]["citation"] is None, first["findings"]  # src/calc.py:2 exists
    assert first["revised"]["diff_sha256_before"] != first["revised"]["diff_sha256_after"], first["revised"]
    assert first["revised"]["diff_sha256_after"] == second["diff_sha256"]
    assert second["status"] == "clean" and second["findings"] == [] and second["revised"] is None, second
    assert doc["revise_rounds"] == 1
    # The reviewer's tokens are recorded apart from the worker's (the replay server reports usage).
    assert first["usage"]["input_tokens"] > 0 and second["usage"]["input_tokens"] > 0, doc["rounds"]
    assert doc["usage"]["input_tokens"] == first["usage"]["input_tokens"] + second["usage"]["input_tokens"]
    # Each CLI played its own conversation to the end, with the model name it was given.
    worker, reviewer = servers["worker"], servers["reviewer"]
    assert worker["turns"] == len(WORKER_TURNS) and worker["models"] == {WORKER_MODEL}, worker
    assert reviewer["turns"] == len(REVIEW_TURNS) and reviewer["models"] == {review_model}, reviewer
    # The reviewer read the planted bug in round 1 and the revised file in round 2, with read tools only.
    assert len(reviewer["results"]) == 2, reviewer["results"]
    assert PLANTED in reviewer["results"][0], reviewer["results"]
    assert "return a + b\n" in reviewer["results"][1] and "a != 7" not in reviewer["results"][1], reviewer["results"]
    assert not reviewer["tools"] & WRITE_TOOLS, reviewer["tools"]
    # What each was told: the reviewer bosun's review prompt with the diff, the worker the finding.
    assert "You are reviewing a change" in reviewer["bodies"][0], reviewer["bodies"][0][:2000]
    assert json.dumps(f"+    {PLANTED}")[1:-1] in reviewer["bodies"][0], reviewer["bodies"][0][:4000]
    revise = worker["bodies"][len(WORKER_TURNS) - 2]
    assert "A reviewer read your change" in revise and P1["claim"] in revise and "src/calc.py:2" in revise, revise[-3000:]
    # The revise turn resumed the worker's session; each review round is a fresh session of its own.
    sessions = _sessions(res)
    assert [p for p, _ in sessions] == ["worker", "reviewer", "worker", "reviewer"], sessions
    assert sessions[0][1] == sessions[2][1], sessions
    assert len({sessions[1][1], sessions[3][1], sessions[0][1]}) == 3, sessions


# One reviewer CLI is enough here (the suite's time is bounded): how a prose answer is judged does
# not depend on the CLI that carried it. Pi, which the other test does not drive.
@pytest.mark.parametrize(("review_adapter", "review_model"), [("pi", "deepseek-chat")])
def test_a_real_reviewer_that_answers_prose_needs_a_person(cli, repo, tmp_path, review_adapter, review_model):
    head = git(repo, "rev-parse", "HEAD")
    code, res, servers = _delegate(cli, repo, tmp_path, FIX_TURNS, review_adapter, review_model, PROSE_TURNS)
    assert code == 7 and res["state"] == "verified" and res["merged_commit"] is None, res
    assert res["verdict"]["outcome"] == "needs_review", res["verdict"]
    assert [r["code"] for r in res["verdict"]["reasons"]] == ["CROSS_REVIEW_FAILED"], res["verdict"]
    assert "JSON report" in res["verdict"]["reasons"][0]["sentence"]
    assert git(repo, "rev-parse", "HEAD") == head
    (rnd,) = _record(res)["rounds"]
    assert rnd["status"] == "unparseable" and rnd["adapter"] == review_adapter, rnd
    assert rnd["usage"]["input_tokens"] > 0, rnd
    assert servers["reviewer"]["turns"] == len(PROSE_TURNS), servers
