"""The ``qwen`` adapter: Qwen Code (@qwen-code/qwen-code) as a worker.

Qwen Code reads ``$HOME/.qwen/settings.json``; HOME is the run's own directory, so bosun writes a fresh
one there and the user's settings, credentials, MCP servers and extensions are never seen. The provider
is declared in ``modelProviders`` (OpenAI-compatible by default; ``api = "responses" | "anthropic" |
"gemini"`` selects Qwen's other protocols): the profile's model id, base_url, and ``envKey`` = the profile's
key variable, which Qwen reads from the environment itself (the key is never written to a file or put
on argv). Telemetry, usage statistics and update checks are off.

Permissions are Qwen Code's own rules (``permissions.deny`` in settings.json, evaluated deny > ask >
allow; ``Bash(git push *)`` also matches the second half of ``echo x && git push``):

- code: ``--approval-mode yolo`` with the deny list (git history/branch/remote commands, network tools,
  publishing, sudo; ``web_fetch``, worktree and scheduling tools);
- explore / review / test: ``--approval-mode default``. Headless Qwen removes every tool that would need
  approval (edits, writes, the shell), so only read/search tools remain; test mode adds the task's
  verify commands with ``--allowed-tools run_shell_command(<cmd>)`` (Qwen still refuses commands it
  classifies as writes).

Retries: Qwen retries 429 and 5xx itself, 7 attempts with backoff from 1.5 s to 30 s (about 80 s in all
without a Retry-After header; it honours Retry-After). This is hard-coded in Qwen Code 0.24 (the
``generationConfig.maxRetries`` setting only caps the OpenAI SDK's own retries, set to 0 here), so a
lasting rate limit takes up to that long to surface; 401 and 404 fail at once.

The prompt goes on stdin. Sessions are recorded in the run's HOME; ``bosun work --resume`` continues one
with ``--resume ID``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.fileio import write_text_atomic
from bosun.workers.base import Usage, WorkerContext, WorkerResult
from bosun.workers.cli_worker import CliSpec, CliWorker, load_usage_total, save_usage_total
from bosun.workers.jsonlines import JsonLinesParser
from bosun.workers.policy import (
    CANNOT_NETWORK,
    CANNOT_SHELL_TEXT,
    GUARD_ENV_TIMEOUTS,
    NO_NETWORK_SANDBOX,
    SHELL_TEXT_RULES,
    denied_commands,
)
from bosun.workers.sdk_stream import SdkStreamParser

if TYPE_CHECKING:
    from bosun.core.config import Profile

MIN_VERSION = "0.24.4"
USAGE_FILE = "bosun-usage.json"  # in ~/.qwen: the session usage bosun has counted, for resumed sessions
# profile.api -> (modelProviders key, selectedType / --auth-type, wireApi)
QWEN_API: dict[str | None, tuple[str, str, str | None]] = {
    None: ("openai", "openai", None),
    "openai": ("openai", "openai", None),
    "responses": ("openai", "openai", "responses"),
    "anthropic": ("anthropic", "anthropic", None),
    "gemini": ("gemini", "gemini", None),
}
# Tools no worker needs: the web, git worktrees of its own, background schedules, cross-agent messages.
DENIED_TOOLS = (
    "web_fetch", "web_search", "enter_worktree", "exit_worktree", "cron_create", "cron_delete", "cron_list",
    "loop_wakeup", "monitor", "send_message",
)
QWEN_ENV = {
    "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    "QWEN_CODE_NO_RELAUNCH": "1",
    "QWEN_CODE_DISABLE_PRECONNECT": "1",
    "QWEN_CODE_DISABLE_CRON": "1",
    "QWEN_DISABLE_AUTO_TITLE": "1",
}

SPEC = CliSpec(
    label="Qwen Code",
    default_binary="qwen",
    package="@qwen-code/qwen-code",
    min_version=MIN_VERSION,
    enforces=[
        "own HOME and settings.json, also loaded as system settings (QWEN_CODE_SYSTEM_SETTINGS_PATH) so the "
        "repo's .qwen/settings.json cannot override it; user settings, credentials, MCP servers and "
        "extensions ignored; provider from modelProviders with the key read from the profile's variable",
        "code mode: shell and tool deny rules (git history/branch/remote commands, network tools, publishing, "
        "sudo, web_fetch, worktree and scheduling tools)",
        "read-only modes: edit, write and shell tools removed (approval mode default, headless); "
        "test mode: only the task's verify commands",
        "telemetry, usage statistics and update checks off",
        GUARD_ENV_TIMEOUTS,
    ],
    cannot_enforce=[
        CANNOT_SHELL_TEXT,
        CANNOT_NETWORK,
        "retries of 429/5xx are Qwen's own (7 attempts, up to ~80 s); only the run timeout bounds them",
    ],
    unenforced_when_editing=[SHELL_TEXT_RULES, NO_NETWORK_SANDBOX],
)


def deny_rules() -> list[str]:
    rules = [f"Bash({cmd} *)" for cmd in denied_commands()]
    rules += [f"Bash({cmd})" for cmd in denied_commands()]
    rules += list(DENIED_TOOLS)
    return rules


def qwen_settings(profile: Profile) -> dict[str, Any]:
    key, auth, wire = QWEN_API.get(profile.api, QWEN_API[None])
    model_id = profile.model or "default"
    entry: dict[str, Any] = {"id": model_id, "name": model_id}
    if profile.base_url:
        entry["baseUrl"] = profile.base_url
    if profile.api_key_env:
        entry["envKey"] = profile.api_key_env
    if wire:
        entry["wireApi"] = wire
    gen: dict[str, Any] = {"maxRetries": 0}
    if profile.max_tokens:
        gen["samplingParams"] = {"max_tokens": profile.max_tokens}
    entry["generationConfig"] = gen
    return {
        "security": {"auth": {"selectedType": auth}},
        "model": {"name": model_id},
        "modelProviders": {key: [entry]},
        "permissions": {"deny": deny_rules()},
        "mcpServers": {},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }


def build_argv(ctx: WorkerContext, binary: str) -> list[str]:
    prof = ctx.profile
    _, auth, _ = QWEN_API.get(prof.api, QWEN_API[None])
    argv = [binary, "--auth-type", auth, "--output-format", "stream-json"]
    if prof.model:
        argv += ["-m", prof.model]
    if not ctx.allowed.edit:
        argv += ["--approval-mode", "default"]
        for cmd in ctx.allowed.commands:
            argv += ["--allowed-tools", f"run_shell_command({cmd})"]
    else:
        argv += ["--approval-mode", "yolo"]
    if ctx.resume_session:
        argv += ["--resume", ctx.resume_session]
    argv += list(prof.extra_args)
    return argv


def build_env(ctx: WorkerContext) -> dict[str, str]:
    env = dict(ctx.env)
    env.update(QWEN_ENV)
    # Qwen falls back to these when modelProviders lacks a key or URL: never let bosun's own leak in.
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "QWEN_MODEL", "DASHSCOPE_API_KEY"):
        if name not in ctx.profile.key_env_names():
            env.pop(name, None)
    settings_dir = ctx.home / ".qwen"
    settings_dir.mkdir(parents=True, exist_ok=True)
    path = settings_dir / "settings.json"
    write_text_atomic(path, json.dumps(qwen_settings(ctx.profile), indent=2))
    # The same file as *system* settings, which Qwen merges over user and project settings: a repo's
    # .qwen/settings.json cannot redirect the provider or switch the deny rules off.
    env["QWEN_CODE_SYSTEM_SETTINGS_PATH"] = str(path)
    return env


def new_parser(baseline: Usage | None = None) -> SdkStreamParser:
    return SdkStreamParser("Qwen Code", input_includes_cache=True, baseline=baseline)


def usage_file(ctx: WorkerContext) -> Path:
    return ctx.home / ".qwen" / USAGE_FILE


class QwenWorker(CliWorker):
    name = "qwen"
    spec = SPEC
    build_argv = staticmethod(build_argv)
    build_env = staticmethod(build_env)

    def make_parser(self, ctx: WorkerContext) -> SdkStreamParser:
        # A resumed session's result usage includes the earlier runs: subtract what was counted then.
        baseline = load_usage_total(usage_file(ctx), ctx.resume_session)
        return new_parser(baseline or (Usage() if ctx.resume_session else None))

    def after_run(self, ctx: WorkerContext, parser: JsonLinesParser, result: WorkerResult) -> WorkerResult:
        assert isinstance(parser, SdkStreamParser)
        if parser.session_total is not None:
            save_usage_total(usage_file(ctx), parser.state.session_id, parser.session_total)
        return result

