"""The Claude Code adapter: its stream parser on streams recorded from Claude Code 2.1.332, and its argv/env."""

from __future__ import annotations

import json

import pytest

from bosun.workers.base import ErrorClass, Usage
from bosun.workers.classify import classify_http as error_class_for
from bosun.workers.claude import MIN_VERSION, build_argv, build_env, deny_rules, new_parser
from bosun.workers.sdk_stream import SdkStreamParser, sdk_usage
from tests.workers.parse_support import FIX_USAGE, feed, make_ctx, result_of, same_tokens, stream, usage_sum


def parse(case: str) -> tuple[SdkStreamParser, list[dict]]:
    parser = new_parser()
    return parser, feed(parser, stream("claude", MIN_VERSION, case))


def test_fix_stream():
    parser, events = parse("fix")
    st = parser.state
    assert st.session_id and events[0] == {"type": "session", "session_id": st.session_id}
    assert st.final_text == "Fixed add() in src/calc.py."
    assert st.finished_ok is True and st.error_class is None
    assert st.steps == 3  # three distinct assistant message ids
    calls = [e for e in events if e["type"] == "tool_call"]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [c["tool"] for c in calls] == ["Read", "Edit"]
    assert [(r["tool"], r["ok"], r["denied"]) for r in results] == [("Read", True, False), ("Edit", True, False)]
    assert [r["call_id"] for r in results] == [c["call_id"] for c in calls]
    # Anthropic usage leaves cache reads out of input_tokens; bosun's input includes them.
    assert same_tokens(st.usage, FIX_USAGE), st.usage
    assert same_tokens(usage_sum(events), st.usage)  # the events add up to the total
    assert st.usage.cost_usd and st.usage.cost_usd > 0  # Claude's own (list-price) estimate


def test_per_message_usage_is_counted_once_and_the_result_total_wins():
    parser = SdkStreamParser("Claude Code")
    msg = {"id": "m1", "content": [{"type": "text", "text": "a"}],
           "usage": {"input_tokens": 100, "cache_read_input_tokens": 50, "output_tokens": 0}}
    events = parser.feed(json.dumps({"type": "assistant", "message": msg}))
    msg2 = dict(msg, content=[{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
                usage={"input_tokens": 100, "cache_read_input_tokens": 50, "output_tokens": 7})
    events += parser.feed(json.dumps({"type": "assistant", "message": msg2}))  # same id, grown output
    assert parser.state.steps == 1
    assert same_tokens(usage_sum(events), Usage(input_tokens=150, cached_input_tokens=50, output_tokens=7))
    events += parser.feed(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
                                      "usage": {"input_tokens": 100, "cache_read_input_tokens": 50,
                                                "output_tokens": 9}}))
    assert same_tokens(usage_sum(events), Usage(input_tokens=150, cached_input_tokens=50, output_tokens=9))
    assert same_tokens(parser.state.usage, usage_sum(events))
    assert parser.state.final_text == "ok"


def test_denied_stream():
    parser, events = parse("denied")
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["ok"], r["denied"]) for r in results] == [(False, True)] * 3 + [(False, False)]
    denied_cmds = [c["input"]["command"] for c in events if c["type"] == "tool_call" and c["tool"] == "Bash"]
    assert denied_cmds == ["git commit -am wip", "echo ok && git push origin main", "curl -s http://127.0.0.1:9/"]
    assert not [e for e in events if e["type"] == "error"]
    assert parser.state.finished_ok is True  # refusals are not a failed run


@pytest.mark.parametrize(
    ("case", "cls", "retries"),
    [("auth", ErrorClass.auth, 2), ("rate_limited", ErrorClass.rate_limited, 2),
     ("model_unavailable", ErrorClass.model_unavailable, 0)],
)
def test_failures(case, cls, retries, tmp_path):
    parser, events = parse(case)
    errors = [e for e in events if e["type"] == "error"]
    assert len([e for e in errors if e["retryable"]]) == retries  # CLAUDE_CODE_MAX_RETRIES=2
    assert all(e["error_class"] == cls.value for e in errors), errors
    assert parser.state.steps == 0  # the "<synthetic>" error message is not a model step
    assert not [e for e in events if e["type"] == "message"]
    res = result_of(parser, 1, tmp_path, "claude")
    assert res.status == "failed" and res.error_class == cls
    if case == "rate_limited":
        assert res.retry_after_s == pytest.approx(0.1)
    if case == "auth":
        assert "401" in (res.error_message or "")


def test_error_class_for_status_and_text():
    assert error_class_for(401, "Invalid API key") == ErrorClass.auth
    assert error_class_for(403, "credit balance is too low") == ErrorClass.quota
    assert error_class_for(429, "rate_limit") == ErrorClass.rate_limited
    assert error_class_for(429, "insufficient_quota") == ErrorClass.quota
    assert error_class_for(404, "There's an issue with the selected model") == ErrorClass.model_unavailable
    assert error_class_for(529, "Overloaded") == ErrorClass.rate_limited
    assert error_class_for(500, "Internal server error") == ErrorClass.transient
    assert error_class_for(None, "something odd") == ErrorClass.permanent


def test_sdk_usage_cache_accounting():
    raw = {"input_tokens": 10, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 5, "output_tokens": 4,
           "output_tokens_details": {"thinking_tokens": 3}}
    u = sdk_usage(raw, input_includes_cache=False)
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.reasoning_tokens) == (45, 30, 4, 3)


def test_argv_and_env_code_mode(tmp_path):
    ctx = make_ctx(tmp_path, "claude", base_url="http://127.0.0.1:9")
    argv = build_argv(ctx, "claude")
    env = build_env(ctx)
    assert argv[:5] == ["claude", "-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert "WebFetch" not in argv[argv.index("--tools") + 1]
    assert argv[argv.index("--allowedTools") + 1] == "Bash"
    settings = json.loads(argv[argv.index("--settings") + 1])
    assert "Bash(git commit:*)" in settings["permissions"]["deny"] and "WebFetch" in settings["permissions"]["deny"]
    assert {"--strict-mcp-config", "--disable-slash-commands"} <= set(argv)
    assert argv[argv.index("--setting-sources") + 1] == "user"
    assert "sk-test" not in " ".join(argv)  # the key never goes on argv
    assert env["ANTHROPIC_API_KEY"] == "sk-test" and env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert env["CLAUDE_CONFIG_DIR"] == str(ctx.home / ".claude")
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "2"
    assert env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "mock-model"


def test_argv_read_only_modes(tmp_path):
    explore = build_argv(make_ctx(tmp_path, "claude", mode="explore"), "claude")
    assert explore[explore.index("--permission-mode") + 1] == "dontAsk"
    assert explore[explore.index("--tools") + 1] == "Bash,Read,Glob,Grep"
    assert "--allowedTools" not in explore
    test = build_argv(make_ctx(tmp_path, "claude", mode="test"), "claude")
    assert test[test.index("--allowedTools") + 1] == "Bash(python -m pytest -q tests:*)"


def test_resume_and_profile_retries(tmp_path):
    ctx = make_ctx(tmp_path, "claude", resume="abc", env={"CLAUDE_CODE_MAX_RETRIES": "0"})
    assert build_argv(ctx, "claude")[-2:] == ["--resume", "abc"]
    assert build_env(ctx)["CLAUDE_CODE_MAX_RETRIES"] == "0"  # the profile's own value wins


def test_deny_rules_cover_the_shared_list():
    rules = deny_rules()
    for cmd in ("git push", "git reset", "npm publish", "sudo", "wget"):
        assert f"Bash({cmd}:*)" in rules
