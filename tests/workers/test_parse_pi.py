"""The Pi stream parser and configuration, on streams recorded from @earendil-works/pi-coding-agent 1.6.0.

The fixtures were recorded by running the real CLI through ``PiWorker`` against bosun's replay server
(tests/fixtures/streams/pi-1.6.0-*.jsonl). The recording harness had no git guard, so the `git commit`
in the fix stream really ran (and failed for want of an identity): Pi cannot refuse shell commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bosun import proc
from bosun.core.config import Profile
from bosun.core.contract import TaskContract
from bosun.workers.base import ErrorClass, WorkerContext
from bosun.workers.cli_base import finish_result
from bosun.workers.pi import (
    PiParser,
    PiWorker,
    classify_pi_error,
    pi_models_config,
    pi_tools,
    pi_usage,
    shell_excluded,
)

STREAMS = Path(__file__).resolve().parent.parent / "fixtures" / "streams"


def lines(name: str) -> list[str]:
    return (STREAMS / f"pi-1.6.0-{name}.jsonl").read_text().split("\n")


def parse(name: str) -> tuple[PiParser, list[dict[str, Any]]]:
    parser = PiParser()
    events: list[dict[str, Any]] = []
    for line in lines(name):
        events.extend(parser.feed(line))
    return parser, events


def make_ctx(tmp_path: Path, mode: str = "code", resume: str | None = None, **prof: Any) -> WorkerContext:
    profile = Profile(name="pi", adapter="pi", model="mock-model", base_url="http://127.0.0.1:9/v1",
                      api_key_env="PI_TEST_KEY", **prof)
    task = TaskContract(title="t", prompt="p", mode=mode)
    return WorkerContext(
        run_id="r1", worktree=tmp_path, run_dir=tmp_path, home=tmp_path / "home", tmp=tmp_path / "tmp", task=task,
        task_file=tmp_path / "task.json", profile=profile, prompt="p", env={"HOME": str(tmp_path / "home"), "PI_TEST_KEY": "k"},
        emit=lambda ev: None, timeout_s=60, resume_session=resume, read_only=mode != "code",
    )


def test_fix_stream_gives_session_tools_usage_and_answer():
    parser, events = parse("fix")
    st = parser.state
    assert st.session_id == json.loads(lines("fix")[0])["id"]
    assert st.final_text == "Fixed add() in src/calc.py."
    assert st.steps == 5  # one turn_start per model turn
    assert st.error_class is None and not st.errors
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(e["tool"], e["ok"]) for e in results] == [("bash", False), ("edit", False), ("read", True), ("edit", True)]
    assert not any(e["denied"] for e in results)  # Pi has no permission rules to refuse with
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [c["call_id"] for c in calls] == [r["call_id"] for r in results]
    assert calls[1]["input"]["edits"] == [{"oldText": "return a * b", "newText": "return a + b"}]


def test_usage_counts_each_assistant_message_once_not_every_delta():
    parser, events = parse("fix")
    usage = [e for e in events if e["type"] == "usage"]
    updates = [ln for ln in lines("fix") if '"type":"message_update"' in ln and '"usage"' in ln]
    assert len(updates) > len(usage) == 5
    assert parser.state.usage.input_tokens == sum(e["input_tokens"] for e in usage)
    # The scripted turn said input 900 with 512 cached: Pi reports input 388 + cacheRead 512.
    assert {"input_tokens": 900, "cached_input_tokens": 512, "output_tokens": 40}.items() <= usage[3].items()


def test_usage_adds_back_cache_reads_and_writes():
    u = pi_usage({"input": 100, "output": 30, "cacheRead": 200, "cacheWrite": 10, "reasoning": 7, "cost": {"total": 0.5}})
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.reasoning_tokens, u.cost_usd) == (310, 200, 30, 7, 0.5)


@pytest.mark.parametrize(
    ("name", "cls", "errors", "status"),
    [
        ("auth-401", ErrorClass.auth, 1, "401"),
        ("model-not-found", ErrorClass.model_unavailable, 1, "404"),
        ("rate-limit-429", ErrorClass.rate_limited, 3, "429"),  # the first try and Pi's two retries
    ],
)
def test_error_streams_are_classified(tmp_path, name, cls, errors, status):
    parser, events = parse(name)
    assert parser.state.error_class == cls
    assert len(parser.state.errors) == errors
    assert all(e["error_class"] == cls.value for e in events if e["type"] == "error")
    # Pi exits 0 after a failed turn in JSON mode: the parser's error decides.
    res = finish_result(make_ctx(tmp_path), parser.state, proc.SupervisedResult(["pi"], 0, 1.0))
    assert res.status == "failed" and res.error_class == cls
    assert (res.error_message or "").startswith(status + ":")


def test_rate_limit_keeps_the_retry_hint():
    parser, events = parse("rate-limit-429")
    assert parser.state.retry_after_s == 1.0
    retries = [e for e in events if e["type"] == "error" and e["retryable"]]
    assert [e["message"][:15] for e in retries] == ["retrying (1/2):", "retrying (2/2):"]


def test_a_retry_that_succeeds_clears_the_error(tmp_path):
    parser, events = parse("retry-recovered")
    assert any(e["type"] == "error" for e in events)  # the 429 is still in the event log
    assert parser.state.error_class is None and not parser.state.errors
    assert parser.state.final_text == "All good."
    res = finish_result(make_ctx(tmp_path), parser.state, proc.SupervisedResult(["pi"], 0, 1.0))
    assert res.ok


def test_system_and_user_messages_are_not_answers():
    parser = PiParser()
    for role in ("system", "user"):
        assert parser.feed(json.dumps({"type": "message_end", "message": {"role": role, "content": [{"type": "text", "text": "x"}]}})) == []
    assert parser.state.final_text is None
    assert parser.feed("not json") == [] and parser.other == ["not json"]


def test_aborted_turn_is_an_error():
    parser = PiParser()
    parser.feed(json.dumps({"type": "message_end", "message": {"role": "assistant", "content": [], "stopReason": "aborted"}}))
    assert parser.state.error_class == ErrorClass.permanent


@pytest.mark.parametrize(
    ("message", "cls"),
    [
        ('401: {"message":"Incorrect API key provided"}', ErrorClass.auth),
        ('429: {"message":"Too many requests"}', ErrorClass.rate_limited),
        ('429: {"code":"insufficient_quota"}', ErrorClass.quota),
        ('404: {"message":"Not Found"}', ErrorClass.model_unavailable),
        ('502: Bad Gateway', ErrorClass.transient),
        ("fetch failed: ECONNREFUSED", ErrorClass.transient),
        ("Something odd", ErrorClass.permanent),
    ],
)
def test_pi_errors_are_classified_by_status_then_text(message, cls):
    assert classify_pi_error(message) == cls


def test_models_json_names_the_key_variable_not_the_key():
    cfg = pi_models_config(Profile(name="pi", model="m1", base_url="http://x/v1", api_key_env="MY_KEY", api="anthropic"))
    provider = cfg["providers"]["bosun"]
    assert provider["apiKey"] == "$MY_KEY"
    assert provider["api"] == "anthropic-messages"
    assert provider["models"][0]["id"] == "m1"


def test_tools_per_mode_and_shell_opt_out():
    assert pi_tools(read_only=True) == ["read", "grep", "find", "ls"]
    assert pi_tools(read_only=False) == ["read", "grep", "find", "ls", "edit", "write", "bash"]
    assert "bash" not in pi_tools(read_only=False, shell=False)
    assert shell_excluded(["--exclude-tools", "bash,write"]) and shell_excluded(["-xt", "bash"])
    assert shell_excluded(["--exclude-tools=bash"]) and not shell_excluded(["--thinking", "low"])


def test_argv_env_and_files(tmp_path):
    w = PiWorker()
    ctx = make_ctx(tmp_path, mode="review")
    env = w.build_env(ctx)
    argv = w.build_argv(ctx, "/bin/pi")
    assert argv[argv.index("--tools") + 1] == "read,grep,find,ls"
    assert {"--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files"} <= set(argv)
    assert "--no-session" not in argv and argv[argv.index("--session-dir") + 1].startswith(str(ctx.home))
    assert "k" not in argv and "--api-key" not in argv
    assert env["PI_CODING_AGENT_DIR"] == str(ctx.home / ".pi" / "agent")
    assert env["PI_OFFLINE"] == "1" and env["PI_TELEMETRY"] == "0" and env["PI_SKIP_VERSION_CHECK"] == "1"
    models = json.loads((ctx.home / ".pi" / "agent" / "models.json").read_text())
    assert models["providers"]["bosun"]["apiKey"] == "$PI_TEST_KEY"
    settings = json.loads((ctx.home / ".pi" / "agent" / "settings.json").read_text())
    assert settings["retry"]["maxRetries"] == 2
    resumed = w.build_argv(make_ctx(tmp_path, resume="01abc"), "/bin/pi")
    assert resumed[resumed.index("--session-id") + 1] == "01abc"
