"""The Kilo adapter: OpenCode's parser on streams recorded from Kilo 7.7.7, and Kilo's config and env."""

from __future__ import annotations

import json

import pytest

from bosun.workers.base import ErrorClass
from bosun.workers.kilo import MIN_VERSION, KiloWorker, kilo_log_dir
from bosun.workers.opencode_kit import OpenCodeParser
from tests.workers.parse_support import FIX_USAGE, feed, make_ctx, result_of, same_tokens, stream, usage_sum


def parse(case: str):
    parser = OpenCodeParser()
    return parser, feed(parser, stream("kilo", MIN_VERSION, case))


def test_fix_stream():
    parser, events = parse("fix")
    st = parser.state
    assert st.session_id and st.session_id.startswith("ses_")
    assert st.final_text == "Fixed add() in src/calc.py." and st.steps == 3
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["tool"], r["ok"]) for r in results] == [("read", True), ("edit", True)]
    assert same_tokens(st.usage, FIX_USAGE) and same_tokens(usage_sum(events), FIX_USAGE)


def test_denied_stream():
    parser, events = parse("denied")
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["ok"], r["denied"]) for r in results] == [(False, True)] * 3 + [(False, False)]


@pytest.mark.parametrize(
    ("case", "cls"),
    [("auth", ErrorClass.auth), ("rate_limited", ErrorClass.rate_limited),
     ("model_unavailable", ErrorClass.model_unavailable)],
)
def test_failures(case, cls, tmp_path):
    parser, events = parse(case)
    assert [e["error_class"] for e in events if e["type"] == "error"] == [cls.value]
    res = result_of(parser, 1, tmp_path, "kilo")
    assert res.status == "failed" and res.error_class == cls


def test_config_env_and_argv(tmp_path):
    ctx = make_ctx(tmp_path, "kilo")
    env = KiloWorker().build_env(ctx)
    cfg = json.loads(env["KILO_CONFIG_CONTENT"])
    assert cfg["disabled_providers"] == ["kilo"] and cfg["enabled_providers"] == ["bosun"]
    assert cfg["provider"]["bosun"]["options"] == {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "{env:BOSUN_TEST_KEY}"}
    assert cfg["agent"]["bosun"]["permission"]["bash"]["git push *"] == "deny"
    assert env["KILO_TELEMETRY_LEVEL"] == "off" and env["KILO_DISABLE_SESSION_INGEST"] == "1"
    assert env["KILO_DISABLE_PROJECT_CONFIG"] == "1" and env["KILO_DISABLE_MODELS_FETCH"] == "1"
    assert not [k for k in env if k.startswith("OPENCODE_")]
    assert "sk-test" not in env["KILO_CONFIG_CONTENT"]
    argv = KiloWorker().build_argv(ctx, "kilo")
    assert argv[:4] == ["kilo", "run", "--format", "json"] and argv[argv.index("-m") + 1] == "bosun/mock-model"
    assert kilo_log_dir(env) == ctx.home / ".local" / "share" / "kilo" / "log"


def test_read_only_and_resume(tmp_path):
    ctx = make_ctx(tmp_path, "kilo", mode="explore", resume="ses_1")
    perms = json.loads(KiloWorker().build_env(ctx)["KILO_CONFIG_CONTENT"])["agent"]["bosun"]["permission"]
    assert perms["edit"] == "deny" and perms["bash"] == "deny"
    assert KiloWorker().build_argv(ctx, "kilo")[-2:] == ["--session", "ses_1"]
