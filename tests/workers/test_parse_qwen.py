"""The Qwen Code adapter: its stream parser on streams recorded from Qwen Code 0.24.4, and its settings."""

from __future__ import annotations

import json

import pytest

from bosun.workers.base import ErrorClass, Usage
from bosun.workers.qwen import MIN_VERSION, build_argv, build_env, new_parser, qwen_settings
from bosun.workers.sdk_stream import SdkStreamParser
from tests.workers.parse_support import FIX_USAGE, feed, make_ctx, result_of, same_tokens, stream, usage_sum


def parse(case: str, baseline: Usage | None = None) -> tuple[SdkStreamParser, list[dict]]:
    parser = new_parser(baseline)
    return parser, feed(parser, stream("qwen", MIN_VERSION, case))


def test_fix_stream():
    parser, events = parse("fix")
    st = parser.state
    assert st.session_id and st.final_text == "Fixed add() in src/calc.py."
    assert st.finished_ok is True and st.steps == 3
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["tool"], r["ok"]) for r in results] == [("read_file", True), ("edit", True)]
    # Qwen's input_tokens already include the cached ones.
    assert same_tokens(st.usage, FIX_USAGE), st.usage
    assert same_tokens(usage_sum(events), FIX_USAGE)
    assert len([e for e in events if e["type"] == "usage"]) == 3  # per message; the result adds nothing


def test_resumed_session_subtracts_what_was_counted_before():
    # A resumed run's result reports the whole session (the e2e resume test shows it with Qwen 0.24.4):
    # bosun saved 1000/10 after the first run, this run's one message used 3000/30.
    parser = new_parser(Usage(input_tokens=1000, output_tokens=10))
    msg = {"id": "m2", "content": [{"type": "text", "text": "Done."}], "usage": {"input_tokens": 3000, "output_tokens": 30}}
    events = parser.feed(json.dumps({"type": "assistant", "session_id": "s1", "message": msg}))
    events += parser.feed(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "Done.",
                                      "session_id": "s1", "usage": {"input_tokens": 4000, "output_tokens": 40}}))
    assert same_tokens(usage_sum(events), Usage(input_tokens=3000, output_tokens=30))
    assert parser.session_total is not None and same_tokens(parser.session_total, Usage(input_tokens=4000, output_tokens=40))


def test_denied_stream():
    parser, events = parse("denied")
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["ok"], r["denied"]) for r in results] == [(False, True)] * 3 + [(False, False)]
    assert "deny rule" in results[0]["output"]
    assert parser.state.finished_ok is True


@pytest.mark.parametrize(
    ("case", "cls"),
    [("auth", ErrorClass.auth), ("rate_limited", ErrorClass.rate_limited),
     ("model_unavailable", ErrorClass.model_unavailable)],
)
def test_failures(case, cls, tmp_path):
    parser, events = parse(case)
    errors = [e for e in events if e["type"] == "error"]
    assert [e["error_class"] for e in errors] == [cls.value]
    assert errors[0]["message"].startswith("[API Error:")
    assert parser.state.steps == 0 and not [e for e in events if e["type"] == "message"]
    res = result_of(parser, 1, tmp_path, "qwen")
    assert res.status == "failed" and res.error_class == cls
    assert res.final_text is None


def test_settings_and_argv(tmp_path):
    ctx = make_ctx(tmp_path, "qwen")
    argv = build_argv(ctx, "qwen")
    env = build_env(ctx)
    written = json.loads((ctx.home / ".qwen" / "settings.json").read_text())
    assert written == qwen_settings(ctx.profile)
    provider = written["modelProviders"]["openai"][0]
    assert provider == {"id": "mock-model", "name": "mock-model", "baseUrl": "http://127.0.0.1:9/v1",
                        "envKey": "BOSUN_TEST_KEY", "generationConfig": {"maxRetries": 0}}
    assert written["telemetry"] == {"enabled": False}
    assert "Bash(git push *)" in written["permissions"]["deny"] and "web_fetch" in written["permissions"]["deny"]
    assert env["QWEN_CODE_SYSTEM_SETTINGS_PATH"] == str(ctx.home / ".qwen" / "settings.json")
    assert "OPENAI_API_KEY" not in env and "sk-test" not in json.dumps(written) + " ".join(argv)
    assert argv[argv.index("--approval-mode") + 1] == "yolo"
    assert argv[argv.index("--output-format") + 1] == "stream-json"


def test_read_only_modes(tmp_path):
    explore = build_argv(make_ctx(tmp_path, "qwen", mode="review"), "qwen")
    assert explore[explore.index("--approval-mode") + 1] == "default" and "--allowed-tools" not in explore
    test = build_argv(make_ctx(tmp_path, "qwen", mode="test", resume="s1"), "qwen")
    assert test[test.index("--allowed-tools") + 1] == "run_shell_command(python -m pytest -q tests)"
    assert test[test.index("--resume") + 1] == "s1"


def test_other_apis(tmp_path):
    s = qwen_settings(make_ctx(tmp_path, "qwen", api="anthropic").profile)
    assert s["security"]["auth"]["selectedType"] == "anthropic" and "anthropic" in s["modelProviders"]
    s = qwen_settings(make_ctx(tmp_path, "qwen", api="responses").profile)
    assert s["modelProviders"]["openai"][0]["wireApi"] == "responses"
