"""The ``acp`` worker's client against a tiny fake agent (a real subprocess, tests/fixtures/acp_agent.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bosun.engine.attempts import mode_permissions
from bosun.workers.acp import AcpWorker
from bosun.workers.acp_policy import answer, decide
from bosun.workers.base import ErrorClass, Permissions, WorkerResult
from bosun.workers.registry import get_worker
from tests.workers.parse_support import make_ctx

AGENT = Path(__file__).resolve().parent.parent / "fixtures" / "acp_agent.py"


def run(tmp_path: Path, scenario: str, mode: str = "code", **kw: Any) -> tuple[WorkerResult, list[dict], list[dict]]:
    log = tmp_path / "agent.log"
    events: list[dict[str, Any]] = []
    should_stop, max_steps = kw.pop("should_stop", None), kw.pop("max_steps", None)
    ctx = make_ctx(tmp_path, "acp", mode=mode, emit=events.append,
                   command=[sys.executable, str(AGENT), scenario, str(log)], **kw)
    ctx.should_stop, ctx.max_steps = should_stop, max_steps
    result = AcpWorker().run(ctx)
    received = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return result, events, received


def decisions(received: list[dict]) -> dict[str, str]:
    return next(m["decisions"] for m in received if "decisions" in m)


def test_a_turn_end_to_end(tmp_path):
    result, events, received = run(tmp_path, "work")
    assert result.ok, result
    assert result.session_id == "sess-1" and result.final_text == "done"
    assert result.usage.input_tokens == 120 and result.usage.cached_input_tokens == 20
    assert result.usage.output_tokens == 7
    init = received[0]
    assert init["method"] == "initialize"
    caps = init["params"]["clientCapabilities"]
    assert caps == {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    new = next(m for m in received if m.get("method") == "session/new")
    assert new["params"] == {"cwd": str(tmp_path), "mcpServers": []}
    kinds = [e["type"] for e in events]
    assert "session" in kinds and ("message", "done") in [(e["type"], e.get("text")) for e in events]
    edited = [e for e in events if e["type"] == "tool_result" and e["call_id"] == "c1"]
    assert edited and edited[0]["ok"] and not edited[0]["denied"]


def test_requests_bosun_does_not_offer_get_method_not_found(tmp_path):
    _, events, received = run(tmp_path, "work")
    # The first answer the agent got is to fs/read_text_file (id 100).
    reply = next(m for m in received if m.get("id") == 100)
    assert reply["error"]["code"] == -32601 and "result" not in reply
    assert any(e["type"] == "warning" and "fs/read_text_file" in e["message"] for e in events)


def test_code_mode_permissions(tmp_path):
    _, events, received = run(tmp_path, "work")
    assert decisions(received) == {
        "edit-inside": "once",  # never "always"
        "edit-outside": "no",
        "commit": "no",
        "verify": "once",
        "fetch": "no",
    }
    denied = {e["call_id"]: e["output"] for e in events if e["type"] == "tool_result" and e["denied"]}
    assert set(denied) == {"c2", "c3", "c5"}
    assert "outside the worktree" in denied["c2"] and "git commit" in denied["c3"]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("explore", {"edit-inside": "no", "edit-outside": "no", "commit": "no", "verify": "no", "fetch": "no"}),
        ("test", {"edit-inside": "no", "edit-outside": "no", "commit": "no", "verify": "once", "fetch": "no"}),
    ],
)
def test_read_only_modes_permissions(tmp_path, mode, expected):
    result, _, received = run(tmp_path, "work", mode=mode)
    assert result.ok
    assert decisions(received) == expected


def test_an_agent_that_dies_is_quoted(tmp_path):
    result, events, _ = run(tmp_path, "die")
    assert result.status == "failed" and result.exit_code == 3
    assert "before its turn ended" in (result.error_message or "")
    assert "session/prompt" in (result.error_message or "")
    assert "the model config is broken (boom)" in (result.error_message or "")
    assert any(e["type"] == "error" for e in events)


def test_cancel_is_sent_as_session_cancel(tmp_path):
    log = tmp_path / "agent.log"

    def prompted() -> bool:
        return log.exists() and "session/prompt" in log.read_text()

    result, events, received = run(tmp_path, "hang", should_stop=prompted)
    assert result.status == "cancelled", result
    cancel = [m for m in received if m.get("method") == "session/cancel"]
    assert cancel and cancel[0]["params"] == {"sessionId": "sess-1"} and "id" not in cancel[0]
    assert ("message", "working") in [(e["type"], e.get("text")) for e in events]


def test_resume_loads_the_session_without_replaying_it(tmp_path):
    result, events, received = run(tmp_path, "load", resume="sess-old")
    assert result.ok and result.final_text == "resumed"
    load = next(m for m in received if m.get("method") == "session/load")
    assert load["params"]["sessionId"] == "sess-old"
    assert not any(m.get("method") == "session/new" for m in received)
    texts = [e.get("text") for e in events if e["type"] == "message"]
    assert "from the last run" not in texts and "resumed" in texts


def test_an_agent_that_cannot_load_gets_a_new_session(tmp_path):
    result, events, received = run(tmp_path, "work", resume="sess-old")
    assert result.ok
    assert any(m.get("method") == "session/new" for m in received)
    assert any(e["type"] == "message" and e["role"] == "system" and "cannot load" in e["text"] for e in events)


def test_an_agent_that_wants_a_login_is_an_auth_failure(tmp_path):
    result, events, _ = run(tmp_path, "auth")
    assert result.status == "failed" and result.error_class == ErrorClass.auth
    assert "Authentication required" in (result.error_message or "")
    assert not any(m for m in events if m["type"] == "session")


def test_a_turn_that_ends_without_end_turn_fails(tmp_path):
    result, _, _ = run(tmp_path, "max_tokens")
    assert result.status == "failed" and result.error_class == ErrorClass.permanent
    assert "max_tokens" in (result.error_message or "")


def test_an_agent_lingering_after_its_turn_is_stopped_and_the_turn_stands(tmp_path, monkeypatch):
    import bosun.workers.acp as acp

    monkeypatch.setattr(acp, "EXIT_GRACE_S", 0.2)
    result, events, _ = run(tmp_path, "linger")
    assert result.ok and result.final_text == "finished", result


def test_the_peer_ignores_answers_to_nothing_and_routes_string_ids():
    from bosun.workers.jsonrpc import Peer

    peer, seen = Peer(), []
    peer.dispatch({"jsonrpc": "2.0", "id": 7, "result": {}}, lambda *a: seen.append(a), lambda *a: seen.append(a))
    assert seen == []
    peer.dispatch({"jsonrpc": "2.0", "id": "x", "method": "m", "params": {"a": 1}},
                  lambda *a: seen.append(("request", *a)), lambda *a: seen.append(("note", *a)))
    peer.dispatch({"jsonrpc": "2.0", "method": "n"}, lambda *a: seen.append(("request", *a)),
                  lambda *a: seen.append(("note", *a)))
    assert seen == [("request", "x", "m", {"a": 1}), ("note", "n", {})]


def test_the_step_cap_stops_the_agent_and_says_so(tmp_path):
    result, _, _ = run(tmp_path, "work", max_steps=1)
    assert result.status == "failed" and "step cap" in (result.error_message or ""), result


def test_an_agent_that_never_answers_times_out(tmp_path):
    log = tmp_path / "agent.log"
    events: list[dict] = []
    ctx = make_ctx(tmp_path, "acp", emit=events.append, command=[sys.executable, str(AGENT), "hang", str(log)])
    ctx.timeout_s = 1
    result = AcpWorker().run(ctx)
    assert result.status == "timeout" and result.error_class == ErrorClass.timeout, result


def test_a_missing_agent_fails_cleanly(tmp_path):
    events: list[dict] = []
    ctx = make_ctx(tmp_path, "acp", emit=events.append, command=[str(tmp_path / "no-such-agent"), "acp"])
    result = AcpWorker().run(ctx)
    assert result.status == "failed" and result.error_class == ErrorClass.permanent
    assert "not found" in (result.error_message or "")


# ---------------------------------------------------------------------------------------------
# the policy alone


def test_never_allow_always_even_when_it_is_the_only_allow(tmp_path):
    call = {"kind": "edit", "locations": [{"path": str(tmp_path / "a.py")}]}
    decision = decide(call, Permissions(), tmp_path)
    assert decision.allow
    only_always = [{"optionId": "a", "kind": "allow_always"}, {"optionId": "r", "kind": "reject_always"}]
    assert answer(only_always, decision) == {"outcome": {"outcome": "cancelled"}}


def test_paths_through_symlinks_and_dotdot_are_outside(tmp_path):
    (tmp_path / "link").symlink_to("/etc")
    for path in (str(tmp_path / "link" / "passwd"), str(tmp_path / ".." / "x"), "../x"):
        assert not decide({"kind": "read", "rawInput": {"path": path}}, Permissions(), tmp_path).allow, path


def test_denied_commands_inside_chains_and_by_path(tmp_path):
    code = Permissions()
    for cmd in ("echo hi && git push", "ls; /usr/bin/curl x", "sudo ls", "true | nc host 1"):
        assert not decide({"kind": "execute", "rawInput": {"command": cmd}}, code, tmp_path).allow, cmd
    assert decide({"kind": "execute", "rawInput": {"command": "python -m pytest -q"}}, code, tmp_path).allow


def test_the_engine_hands_the_mode_over():
    from bosun.core.contract import TaskContract

    test = mode_permissions(TaskContract(title="t", prompt="p", mode="test", verify=["make check"]))
    assert (test.edit, test.shell, test.commands, test.mode) == (False, True, ("make check",), "test")
    review = mode_permissions(TaskContract(title="t", prompt="p", mode="review"))
    assert (review.edit, review.shell, review.commands) == (False, False, ())


def test_the_registry_knows_acp():
    assert isinstance(get_worker("acp"), AcpWorker)


def test_tool_updates_become_one_call_and_one_result(tmp_path):
    from bosun.workers.acp import AcpParser

    parser = AcpParser(make_ctx(tmp_path, "acp", command=["agent"]))

    def update(**fields: Any) -> list[dict]:
        line = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": fields}}
        return parser.feed(json.dumps(line))

    events = update(sessionUpdate="tool_call", toolCallId="t1", title="bash", kind="execute", status="pending",
                    rawInput={})
    events += update(sessionUpdate="tool_call_update", toolCallId="t1", status="in_progress", kind="execute",
                     rawInput={"command": "git push"})
    events += update(sessionUpdate="tool_call_update", toolCallId="t1", status="failed", kind="execute",
                     content=[{"type": "content", "content": {"type": "text", "text":
                               "The user has specified a rule which prevents you from using this specific tool call"}}])
    assert [e["type"] for e in events] == ["tool_call", "tool_result"]
    assert events[0]["tool"] == "execute" and events[0]["input"] == {"command": "git push"}
    assert events[1]["denied"] and not events[1]["ok"] and parser.state.steps == 1
