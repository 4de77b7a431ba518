"""The Codex adapter: its stream parser on streams recorded from Codex 0.171.0, its config and rules."""

from __future__ import annotations

import tomllib

import pytest

from bosun.workers.base import ErrorClass, Usage
from bosun.workers.cli_worker import load_usage_total, save_usage_total
from bosun.workers.codex import (
    MIN_VERSION,
    CodexParser,
    build_argv,
    build_env,
    codex_config,
    exec_rules,
    sandbox_mode,
    stderr_denials,
    unenforced,
)
from tests.workers.parse_support import (
    FIX_USAGE,
    STREAMS,
    feed,
    make_ctx,
    result_of,
    same_tokens,
    stream,
    usage_sum,
)


def parse(case: str, baseline: Usage | None = None) -> tuple[CodexParser, list[dict]]:
    parser = CodexParser(baseline)
    return parser, feed(parser, stream("codex", MIN_VERSION, case))


def test_fix_stream():
    parser, events = parse("fix")
    st = parser.state
    assert st.session_id and events[0]["type"] == "session"  # thread_id
    assert st.final_text == "Fixed add() in src/calc.py."
    assert st.finished_ok is True and st.steps == 2  # one per tool call
    calls = [e for e in events if e["type"] == "tool_call"]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [c["tool"] for c in calls] == ["shell", "apply_patch"]
    assert "cat src/calc.py" in calls[0]["input"]["command"]
    assert [(r["tool"], r["ok"]) for r in results] == [("shell", True), ("apply_patch", True)]
    assert results[1]["output"][0]["kind"] == "update"
    # turn.completed: cached_input_tokens is a subset of input_tokens.
    assert same_tokens(st.usage, FIX_USAGE) and same_tokens(usage_sum(events), FIX_USAGE)


def test_resumed_thread_reports_the_session_total():
    # `codex exec resume` reports the thread's cumulative usage: only the growth is this run's.
    before = Usage(input_tokens=1000, cached_input_tokens=400, output_tokens=20)
    parser, events = parse("fix", baseline=before)
    assert same_tokens(usage_sum(events), Usage(input_tokens=2500, cached_input_tokens=2200, output_tokens=40))
    assert same_tokens(parser.total, FIX_USAGE)


def test_usage_totals_are_saved_per_thread(tmp_path):
    path = tmp_path / "usage.json"
    assert load_usage_total(path, "t1") is None
    save_usage_total(path, "t1", FIX_USAGE)
    save_usage_total(path, "t2", Usage(input_tokens=1))
    loaded = load_usage_total(path, "t1")
    assert loaded is not None and same_tokens(loaded, FIX_USAGE)


def test_denied_commands_show_up_on_stderr_only():
    parser, events = parse("denied")
    assert [e["ok"] for e in events if e["type"] == "tool_result"] == [False]  # the missing file
    denials = stderr_denials((STREAMS / f"codex-{MIN_VERSION}-denied.stderr").read_text())
    assert [d["denied"] for d in denials] == [True, True, True]
    assert "git commit -am wip" in denials[0]["output"] and "git push" in denials[1]["output"]
    assert "curl" in denials[2]["output"]
    sandbox = "2026-11-29T14:44:04Z ERROR codex_core::tools::router: error=patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"
    assert stderr_denials(sandbox)[0]["tool"] == "apply_patch"


@pytest.mark.parametrize(
    ("case", "cls", "retries"),
    [("auth", ErrorClass.auth, 2), ("rate_limited", ErrorClass.rate_limited, 0),
     ("model_unavailable", ErrorClass.model_unavailable, 0)],
)
def test_failures(case, cls, retries, tmp_path):
    parser, events = parse(case)
    errors = [e for e in events if e["type"] == "error"]
    assert len([e for e in errors if e["retryable"]]) == retries  # "Reconnecting... n/2"
    fatal = [e for e in errors if not e["retryable"]]
    assert len(fatal) == 1 and all(e["error_class"] == cls.value for e in errors), errors  # error + turn.failed: once
    res = result_of(parser, 1, tmp_path, "codex")
    assert res.status == "failed" and res.error_class == cls


METADATA_WARNING = ("Model metadata for `deepseek-chat` not found. Defaulting to fallback metadata; this can "
                    "degrade performance and cause issues.")


def test_unknown_model_name_is_a_warning_not_a_failure(tmp_path):
    # Recorded with model = "deepseek-chat": Codex warns (an `error` item), then does the work.
    parser, events = parse("unknown_model")
    warnings = [e for e in events if e["type"] == "warning"]
    assert [w["message"] for w in warnings] == [METADATA_WARNING]
    assert not [e for e in events if e["type"] == "error"]
    assert [e["tool"] for e in events if e["type"] == "tool_result" and e["ok"]] == ["shell", "apply_patch"]
    res = result_of(parser, 0, tmp_path, "codex")
    assert res.ok and res.error_class is None, res
    assert res.final_text == "Fixed add() in src/calc.py."


def test_top_level_error_event_before_a_completed_turn_is_a_warning(tmp_path):
    import json

    parser = CodexParser()
    lines = [{"type": "thread.started", "thread_id": "t"}, {"type": "error", "message": METADATA_WARNING},
             {"type": "turn.started"}, {"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": "done"}},
             {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 2}}]
    events = [ev for line in lines for ev in parser.feed(json.dumps(line))]
    assert [e["type"] for e in events] == ["session", "warning", "message", "usage"]
    assert result_of(parser, 0, tmp_path, "codex").ok


def test_an_error_event_without_a_completed_turn_explains_the_failure(tmp_path):
    import json

    parser = CodexParser()
    events = parser.feed(json.dumps({"type": "error", "message": "unexpected status 401 Unauthorized"}))
    assert [e["type"] for e in events] == ["warning"]
    res = result_of(parser, 1, tmp_path, "codex")
    assert not res.ok and res.error_class == ErrorClass.auth
    assert res.error_message == "unexpected status 401 Unauthorized"
    parser = CodexParser()  # exit 0 but no verdict from Codex: still a failure
    parser.feed(json.dumps({"type": "error", "message": "stream closed before response.completed"}))
    assert not result_of(parser, 0, tmp_path, "codex").ok


def test_config_rules_and_argv(tmp_path):
    ctx = make_ctx(tmp_path, "codex", model="gpt-5.5")
    env = build_env(ctx)
    home = ctx.home / ".codex"
    assert env["CODEX_HOME"] == str(home)
    cfg = tomllib.loads((home / "config.toml").read_text())
    assert cfg["model"] == "gpt-5.5" and cfg["model_provider"] == "bosun"
    assert cfg["approval_policy"] == "never" and cfg["sandbox_mode"] == "workspace-write"
    assert cfg["allow_login_shell"] is False  # a login shell would reset PATH (and drop the git guard)
    prov = cfg["model_providers"]["bosun"]
    assert prov == {"name": "bosun profile codex", "base_url": "http://127.0.0.1:9/v1", "wire_api": "responses",
                    "request_max_retries": 2, "stream_max_retries": 2, "env_key": "BOSUN_TEST_KEY"}
    rules = (home / "rules" / "bosun.rules").read_text()
    assert 'prefix_rule(pattern=["git", "push"], decision="forbidden"' in rules
    assert 'pattern=["python", "-m", "twine"]' in rules
    argv = build_argv(ctx, "codex")
    assert argv[:2] == ["codex", "exec"] and argv[-1] == "-" and "--json" in argv
    assert "--ephemeral" not in argv  # sessions stay in the run's CODEX_HOME for --resume
    for feature in ("plugins", "remote_plugin", "apps", "goals", "multi_agent"):
        assert feature in argv
    assert "sk-test" not in " ".join(argv) + (home / "config.toml").read_text()


def test_sandbox_per_mode_and_resume(tmp_path):
    modes = {m: sandbox_mode(make_ctx(tmp_path, "codex", mode=m)) for m in ("code", "explore", "review", "test")}
    assert modes == {"code": "workspace-write", "explore": "read-only", "review": "read-only", "test": "workspace-write"}
    assert tomllib.loads(codex_config(make_ctx(tmp_path, "codex").profile, "read-only"))["sandbox_mode"] == "read-only"
    assert unenforced(make_ctx(tmp_path, "codex", mode="test")) and not unenforced(make_ctx(tmp_path, "codex"))
    argv = build_argv(make_ctx(tmp_path, "codex", resume="0199-abc"), "codex")
    assert argv[:3] == ["codex", "exec", "resume"] and argv[-2:] == ["0199-abc", "-"]


def test_exec_rules_are_valid_starlark_shaped():
    for line in exec_rules().splitlines()[1:]:
        assert line.startswith("prefix_rule(pattern=[") and line.endswith(")")
