"""The Gemini CLI adapter: its stream parser on streams recorded from Gemini CLI 0.61.0, its settings and policy."""

from __future__ import annotations

import json
import tomllib

import pytest

from bosun.workers.base import ErrorClass
from bosun.workers.gemini import MIN_VERSION, GeminiParser, approval_mode, build_argv, build_env
from tests.workers.parse_support import FIX_USAGE, feed, make_ctx, result_of, same_tokens, stream, usage_sum


def parse(case: str) -> tuple[GeminiParser, list[dict]]:
    parser = GeminiParser()
    events = feed(parser, stream("gemini", MIN_VERSION, case))
    return parser, events + parser.finish()


def test_fix_stream():
    parser, events = parse("fix")
    st = parser.state
    assert st.session_id and events[0]["type"] == "session"
    assert st.final_text == "Fixed add() in src/calc.py."  # assistant deltas joined
    assert [e["text"] for e in events if e["type"] == "message"] == ["Fixed add() in src/calc.py."]
    assert st.finished_ok is True and st.steps == 3
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["tool"], r["ok"]) for r in results] == [("read_file", True), ("replace", True)]
    # result.stats: input_tokens counts cached ones ("input" is the uncached rest).
    assert same_tokens(st.usage, FIX_USAGE) and same_tokens(usage_sum(events), FIX_USAGE)


def test_denied_stream():
    parser, events = parse("denied")
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["ok"], r["denied"]) for r in results] == [(False, True)] * 3 + [(False, False)]
    assert "denied by policy" in results[0]["output"]
    assert parser.state.finished_ok is True


@pytest.mark.parametrize(
    ("case", "cls", "code"),
    [("auth", ErrorClass.auth, 145), ("rate_limited", ErrorClass.rate_limited, 173),
     ("model_unavailable", ErrorClass.model_unavailable, 1)],
)
def test_failures(case, cls, code, tmp_path):
    parser, events = parse(case)
    errors = [e for e in events if e["type"] == "error"]
    assert [e["error_class"] for e in errors] == [cls.value]
    res = result_of(parser, code, tmp_path, "gemini")  # exit codes as recorded
    assert res.status == "failed" and res.error_class == cls
    if case == "rate_limited":
        assert res.retry_after_s == pytest.approx(0.1)


def test_settings_policy_and_env(tmp_path):
    ctx = make_ctx(tmp_path, "gemini", base_url="http://127.0.0.1:9/")
    env = build_env(ctx)
    gdir = ctx.home / ".gemini"
    settings = json.loads((gdir / "settings.json").read_text())
    assert settings["general"]["maxAttempts"] == 2 and settings["telemetry"] == {"enabled": False}
    assert env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] == str(gdir / "settings.json")
    assert env["GEMINI_API_KEY"] == "sk-test" and env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"
    assert env["GEMINI_CLI_NO_RELAUNCH"] == "true"
    policy = tomllib.loads((gdir / "policies" / "bosun.toml").read_text())
    shell, web = policy["rule"][:2]
    assert shell["decision"] == "deny" and shell["priority"] == 999
    assert "git push" in shell["commandPrefix"] and "curl" in shell["commandPrefix"]
    assert web["toolName"] == ["web_fetch", "google_web_search"]
    argv = build_argv(ctx, "gemini")
    assert argv[argv.index("--approval-mode") + 1] == "yolo" and "--skip-trust" in argv
    assert "-p" not in argv and "sk-test" not in " ".join(argv)  # the prompt (and key) never on argv


def test_modes(tmp_path):
    assert approval_mode(make_ctx(tmp_path, "gemini", mode="explore")) == "plan"
    assert approval_mode(make_ctx(tmp_path, "gemini", mode="review")) == "plan"
    ctx = make_ctx(tmp_path, "gemini", mode="test", resume="u-1")
    assert approval_mode(ctx) == "default"
    build_env(ctx)
    rules = tomllib.loads((ctx.home / ".gemini" / "policies" / "bosun.toml").read_text())["rule"]
    assert rules[-1] == {"toolName": "run_shell_command", "commandPrefix": ["python -m pytest -q tests"],
                         "decision": "allow", "priority": 900}
    assert build_argv(ctx, "gemini")[-2:] == ["--resume", "u-1"]


def test_an_error_event_before_a_successful_result_does_not_fail_the_run(tmp_path):
    # The CLI's own verdict decides: an error it reported and went on from is not the outcome.
    parser = GeminiParser()
    lines = stream("gemini", MIN_VERSION, "fix").read_text().splitlines()
    lines.insert(1, json.dumps({"type": "error", "severity": "error", "message": "model metadata unavailable"}))
    for line in lines:
        parser.feed(line)
    assert parser.state.finished_ok is True
    assert result_of(parser, 0, tmp_path, "gemini").ok
