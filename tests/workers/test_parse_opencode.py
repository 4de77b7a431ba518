"""The OpenCode stream parser, config builder and log watch, on streams recorded from opencode-ai 1.18.33.

The fixtures were recorded by running the real CLI through ``OpenCodeWorker`` against bosun's replay
server (tests/fixtures/streams/opencode-1.18.33-*.jsonl; the .log file is OpenCode's own log during
the rate-limit run).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from bosun import proc
from bosun.core.config import Profile
from bosun.core.contract import TaskContract
from bosun.engine.attempts import mode_permissions
from bosun.workers.base import ErrorClass, WorkerContext
from bosun.workers.classify import classify_http
from bosun.workers.cli_base import finish_result
from bosun.workers.opencode import OpenCodeWorker
from bosun.workers.opencode_kit import (
    OpenCodeParser,
    build_opencode_config,
    opencode_env,
    opencode_usage,
    permission_rules,
)
from bosun.workers.opencode_logwatch import LogWatch
from bosun.workers.policy import SHELL_DENY

STREAMS = Path(__file__).resolve().parent.parent / "fixtures" / "streams"


def parse(name: str) -> tuple[OpenCodeParser, list[dict[str, Any]]]:
    parser = OpenCodeParser()
    events: list[dict[str, Any]] = []
    for line in (STREAMS / f"opencode-1.18.33-{name}.jsonl").read_text().split("\n"):
        events.extend(parser.feed(line))
    return parser, events


def result_of(parser: OpenCodeParser, exit_code: int, tmp_path: Path) -> Any:
    emitted: list[dict[str, Any]] = []
    ctx = make_ctx(tmp_path, emit=emitted.append)
    return finish_result(ctx, parser.state, proc.SupervisedResult(["opencode"], exit_code, 1.0))


def make_ctx(tmp_path: Path, mode: str = "code", resume: str | None = None, emit: Any = None, **prof: Any) -> WorkerContext:
    profile = Profile(name="oc", adapter="opencode", model="mock-model", base_url="http://127.0.0.1:9/v1",
                      api_key_env="OC_KEY", **prof)
    task = TaskContract(title="t", prompt="p", mode=mode, verify=["python -m pytest -q tests"])
    return WorkerContext(
        run_id="r1", worktree=tmp_path, run_dir=tmp_path, home=tmp_path / "home", tmp=tmp_path / "tmp", task=task,
        task_file=tmp_path / "task.json", profile=profile, prompt="p", env={"HOME": str(tmp_path / "home"), "OC_KEY": "k"},
        emit=emit or (lambda ev: None), timeout_s=60, resume_session=resume, read_only=mode != "code",
        permissions=mode_permissions(task),
    )


# ---------------------------------------------------------------------------------------------
# recorded streams


def test_fix_stream_gives_session_tools_usage_and_answer():
    parser, events = parse("fix")
    st = parser.state
    assert st.session_id and st.session_id.startswith("ses_")
    assert [e["type"] for e in events].count("session") == 1
    assert st.final_text == "Fixed add() in src/calc.py."
    assert st.steps == 5  # one step_start per model turn
    assert st.error_class is None and not st.errors
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(e["tool"], e["ok"], e["denied"]) for e in results] == [
        ("bash", False, True),  # `git commit` refused by the permission rules
        ("edit", False, False),  # the old text did not match: a tool failure, not a denial
        ("read", True, False),
        ("edit", True, False),
    ]
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls[0]["input"] == {"command": "git commit -am wip"}
    assert [c["call_id"] for c in calls] == [r["call_id"] for r in results]


def test_usage_is_one_event_per_step_and_sums():
    parser, events = parse("fix")
    steps = [e for e in events if e["type"] == "usage"]
    assert len(steps) == 5
    assert parser.state.usage.input_tokens == sum(e["input_tokens"] for e in steps)
    assert parser.state.usage.output_tokens == sum(e["output_tokens"] for e in steps)
    # The scripted turn said input 900 with 512 cached: OpenCode reports 388 + cache.read 512.
    assert {"input_tokens": 900, "cached_input_tokens": 512, "output_tokens": 40}.items() <= steps[3].items()
    assert parser.state.usage.cached_input_tokens == 512


def test_usage_adds_back_cache_and_reasoning():
    u = opencode_usage({"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 300, "write": 50}}, 0.25)
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.reasoning_tokens) == (450, 300, 25, 5)
    assert u.cost_usd == 0.25
    assert opencode_usage({}, 0).cost_usd is None


@pytest.mark.parametrize(
    ("name", "cls", "retryable", "retry_after"),
    [
        ("auth-401", ErrorClass.auth, False, None),
        ("model-not-found", ErrorClass.model_unavailable, False, None),
        ("rate-limit-429", ErrorClass.rate_limited, True, 1.0),
    ],
)
def test_error_streams_are_classified(tmp_path, name, cls, retryable, retry_after):
    parser, events = parse(name)
    errors = [e for e in events if e["type"] == "error"]
    assert len(errors) == 1
    assert errors[0]["error_class"] == cls.value
    assert errors[0]["retryable"] is retryable
    assert parser.state.session_id
    res = result_of(parser, 1, tmp_path)  # OpenCode exits 1 after an error event
    assert res.status == "failed"
    assert res.error_class == cls
    assert res.retry_after_s == retry_after
    assert "HTTP" in (res.error_message or "")


def test_non_json_lines_and_garbage_are_ignored():
    parser = OpenCodeParser()
    assert parser.feed("") == []
    assert parser.feed("some log text") == []
    assert parser.feed("{not json") == []
    assert parser.feed('{"type":"unknown_kind","sessionID":"ses_1"}') == [{"type": "session", "session_id": "ses_1"}]
    assert parser.other == ["some log text", "{not json"]


@pytest.mark.parametrize(
    ("status", "text", "cls"),
    [
        (401, "Incorrect API key provided", ErrorClass.auth),
        (403, "You exceeded your current quota, check your billing", ErrorClass.quota),
        (429, "Too many requests", ErrorClass.rate_limited),
        (429, "You exceeded your current quota (insufficient_quota)", ErrorClass.quota),
        (404, "Not Found", ErrorClass.model_unavailable),
        (404, "The model `x` does not exist", ErrorClass.model_unavailable),
        (503, "upstream unavailable", ErrorClass.transient),
        (400, "bad request: messages too long", ErrorClass.permanent),
        (None, "ECONNREFUSED 127.0.0.1:9", ErrorClass.transient),
    ],
)
def test_api_errors_are_classified_by_status_then_text(status, text, cls):
    assert classify_http(status, text) == cls


# ---------------------------------------------------------------------------------------------
# the provider-error log watch


def test_log_watch_trips_on_the_recorded_retries(tmp_path):
    shutil.copy(STREAMS / "opencode-1.18.33-rate-limit-429.log", tmp_path / "opencode.log")
    watch = LogWatch(tmp_path, limit=3, since=0)
    assert watch.check(force=True) is True
    assert len(watch.errors) == 5
    assert all("Rate limit reached" in e for e in watch.errors)


def test_log_watch_ignores_earlier_runs_and_follows_a_new_file(tmp_path):
    log = tmp_path / "opencode.log"
    shutil.copy(STREAMS / "opencode-1.18.33-rate-limit-429.log", log)
    watch = LogWatch(tmp_path, limit=2)  # since = now: the recorded lines are older
    assert watch.check(force=True) is False and watch.errors == []
    # OpenCode starts a fresh file per run: a shorter file is read from the start.
    line = next(ln for ln in log.read_text().splitlines() if "stream error" in ln)
    now = line.replace(re.match(r"timestamp=(\S+)", line).group(1), "2999-01-01T00:00:00.000Z")
    log.write_text(now + "\n")
    assert watch.check(force=True) is False and len(watch.errors) == 1
    with log.open("a") as fh:  # a half-written line waits for its end
        fh.write(now[:40])
    assert watch.check(force=True) is False and len(watch.errors) == 1
    with log.open("a") as fh:
        fh.write(now[40:] + "\n")
    assert watch.check(force=True) is True and len(watch.errors) == 2


def test_log_watch_does_not_stop_on_auth_errors(tmp_path):
    line = ('timestamp=2999-01-01T00:00:00.000Z level=ERROR run=1 message="stream error" providerID=bosun '
            'error.error="AI_APICallError: Incorrect API key provided"\n')
    (tmp_path / "opencode.log").write_text(line * 4)
    watch = LogWatch(tmp_path, limit=3)
    assert watch.check(force=True) is False  # OpenCode does not retry a 401: its own error event ends the run
    assert len(watch.errors) == 4


# ---------------------------------------------------------------------------------------------
# configuration and permission rules


def wildcard(pattern: str) -> re.Pattern[str]:
    """OpenCode 1.18's Wildcard.match: `*` any text, `?` one char, a trailing " *" also matches nothing."""
    rx = re.sub(r"[.+^${}()|\[\]\\]", lambda m: "\\" + m.group(0), pattern).replace("*", ".*").replace("?", ".")
    if rx.endswith(" .*"):
        rx = rx[:-3] + "( .*)?"
    return re.compile("^" + rx + "$", re.S)


def decide(rules: dict[str, Any], permission: str, value: str) -> str:
    """Evaluate like OpenCode: flatten in order, the last rule matching permission and pattern wins."""
    flat = []
    for perm, action in rules.items():
        if isinstance(action, str):
            flat.append((perm, "*", action))
        else:
            flat.extend((perm, pat, act) for pat, act in action.items())
    hit = [a for p, pat, a in flat if wildcard(p).match(permission) and wildcard(pat).match(value)]
    return hit[-1] if hit else "ask"


@pytest.mark.parametrize(
    ("command", "decision"),
    [
        ("python -m pytest -q tests", "allow"),
        ("git status", "allow"),
        ("git diff HEAD", "allow"),
        ("git log --oneline", "allow"),
        ("git commit -am wip", "deny"),
        ("git commit", "deny"),
        ("/usr/bin/git push origin main", "deny"),
        ("git reset --hard HEAD~1", "deny"),
        ("git branch -D main", "deny"),
        ("git stash", "deny"),
        ("curl https://example.com", "deny"),
        ("wget x", "deny"),
        ("ssh host", "deny"),
        ("npm publish", "deny"),
        ("twine upload dist/*", "deny"),
        ("cargo publish", "deny"),
        ("gh release create v1", "deny"),
        ("sudo rm -rf /", "deny"),
        ("grep -rn curl src", "allow"),  # the word alone is harmless
    ],
)
def test_code_mode_shell_rules(command, decision):
    assert decide(permission_rules(read_only=False), "bash", command) == decision


def test_code_mode_allows_edits_and_denies_everything_unlisted():
    rules = permission_rules(read_only=False)
    assert list(rules)[0] == "*" and rules["*"] == "deny"
    assert decide(rules, "edit", "src/calc.py") == "allow"
    assert decide(rules, "read", "src/calc.py") == "allow"
    assert decide(rules, "read", "/repo/.env") == "deny"
    assert decide(rules, "read", "config/.env.production") == "deny"
    assert decide(rules, "read", ".env.example") == "allow"
    for perm in ("webfetch", "websearch", "task", "skill", "question"):
        assert decide(rules, perm, "*") == "deny"
    assert decide(rules, "external_directory", "/etc/*") == "deny"
    bash = list(rules["bash"].items())
    assert bash[0] == ("*", "allow") and all(action == "deny" for _, action in bash[1:])  # deny rules last


def test_read_only_modes_deny_edit_and_shell():
    rules = permission_rules(read_only=True)
    assert rules["edit"] == "deny" and rules["bash"] == "deny"
    assert decide(rules, "edit", "src/calc.py") == "deny"
    assert decide(rules, "bash", "ls") == "deny"
    assert decide(rules, "grep", "*") == "allow"


def test_test_mode_may_run_only_the_verify_commands():
    rules = permission_rules(read_only=True, allow_commands=["python -m pytest -q tests", "git  commit -m x"])
    assert decide(rules, "bash", "python -m pytest -q tests") == "allow"
    assert decide(rules, "bash", "python -m pytest -q tests -k add") == "allow"
    assert decide(rules, "bash", "rm -rf src") == "deny"
    assert decide(rules, "bash", "git commit -m x") == "deny"  # the deny rules still come last


def test_config_injects_the_profile_endpoint_with_an_env_reference(tmp_path):
    ctx = make_ctx(tmp_path, max_tokens=4096)
    cfg = build_opencode_config(ctx.profile, False)
    provider = cfg["provider"]["bosun"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "{env:OC_KEY}"}
    assert provider["models"]["mock-model"]["limit"]["output"] == 4096
    assert cfg["model"] == cfg["small_model"] == "bosun/mock-model"
    assert cfg["enabled_providers"] == ["bosun"]
    assert cfg["autoupdate"] is False and cfg["share"] == "disabled"
    assert cfg["agent"]["bosun"]["permission"] == cfg["permission"]
    env = opencode_env(ctx.env, cfg)
    assert json.loads(env["OPENCODE_CONFIG_CONTENT"]) == cfg
    assert "k" not in env["OPENCODE_CONFIG_CONTENT"].split('"')  # the key's value is never written
    assert env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1" and env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    assert opencode_env({}, cfg, prefix="KILO")["KILO_DISABLE_SHARE"] == "1"  # reusable by the Kilo adapter


def test_config_without_base_url_uses_the_clis_own_provider():
    cfg = build_opencode_config(Profile(name="x", adapter="opencode", model="anthropic/claude-x"), True)
    assert "provider" not in cfg and cfg["model"] == "anthropic/claude-x"


def test_argv_puts_no_prompt_or_key_on_the_command_line(tmp_path):
    w = OpenCodeWorker()
    argv = w.build_argv(make_ctx(tmp_path, extra_args=["--variant", "high"]), "/bin/opencode")
    assert argv[:4] == ["/bin/opencode", "run", "--format", "json"]
    assert {"--pure", "--agent", "--title"} <= set(argv) and argv[-2:] == ["--variant", "high"]
    assert "-m" in argv and argv[argv.index("-m") + 1] == "bosun/mock-model"
    resumed = w.build_argv(make_ctx(tmp_path, resume="ses_abc"), "/bin/opencode")
    assert resumed[resumed.index("--session") + 1] == "ses_abc" and "--title" not in resumed
    assert all("k" != a for a in argv)


def test_shell_deny_list_covers_the_required_commands():
    required = {"git commit", "git push", "git reset", "git checkout", "git switch", "git rebase", "git merge",
                "git stash", "git clean", "git tag", "git branch", "curl", "wget", "ssh", "scp", "nc",
                "npm publish", "twine", "cargo publish", "gh", "sudo"}
    assert required <= set(SHELL_DENY)
