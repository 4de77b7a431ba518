"""The ``claude`` adapter: Claude Code (@anthropic-ai/claude-code) as a worker.

Claude Code runs with its own configuration directory (``CLAUDE_CONFIG_DIR`` inside the run's HOME), so
the user's settings, login, MCP servers, plugins, hooks and history are never read or changed. The
profile's endpoint and key arrive as ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY`` (copied, in the
environment only, from the profile's key variable); with a base_url, the model aliases Claude Code uses
for side requests (haiku, sonnet, opus, subagents) all point at the profile's model.

Permissions are Claude Code's own: ``--tools`` limits the built-in tools, ``--settings`` carries a
``permissions.deny`` list (``Bash(git commit:*)``, ``Bash(curl:*)``, ..., ``WebFetch``, ``WebSearch``) that
no allow rule can override (Claude Code splits ``a && b`` and checks each part), ``--setting-sources user``
ignores the repository's ``.claude/settings*.json`` (hooks and permissions of the repo), and
``--strict-mcp-config`` without ``--mcp-config`` starts no MCP server.

- code: ``--permission-mode acceptEdits`` (edits inside the worktree) and ``--allowedTools Bash`` (the
  shell, minus the deny list);
- explore / review / test: ``--permission-mode dontAsk`` with Read/Glob/Grep/Bash: Claude Code runs
  only commands it classifies as read-only, plus, in test mode, the task's verify commands
  (``Bash(<cmd>:*)``); every edit and every other command is refused.

Retries: Claude Code retries every failed request (401 included) up to ``CLAUDE_CODE_MAX_RETRIES`` times
(default 10, with growing delays: 5 scripted 401s took 18 s). bosun sets 2 unless the profile passes its
own value through ``env = ["CLAUDE_CODE_MAX_RETRIES"]``: a bad key fails in about 2 s, a 5xx still gets
two more tries, and a lasting 429 moves the fallback chain on quickly (bosun cools the profile down).

The prompt goes on stdin (``claude -p`` reads it there). Sessions stay in the run's config dir, so
``bosun work --resume`` continues one with ``--resume ID``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bosun.workers.base import WorkerContext, WorkerInfo, WorkerResult
from bosun.workers.cli_worker import CliSpec, CliWorker, profile_key
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

MIN_VERSION = "2.1.332"
CODE_TOOLS = ("Bash", "Read", "Edit", "Write", "Glob", "Grep", "NotebookEdit")
READ_TOOLS = ("Bash", "Read", "Glob", "Grep")
DEFAULT_MAX_RETRIES = "2"
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
}
MODEL_ALIASES = (
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)

SPEC = CliSpec(
    label="Claude Code",
    default_binary="claude",
    package="@anthropic-ai/claude-code",
    min_version=MIN_VERSION,
    effort_args=lambda level, profile: ["--effort", level],
    enforces=[
        "own config dir (CLAUDE_CONFIG_DIR in the run): user settings, login, MCP servers, plugins and hooks "
        "ignored; the repo's .claude/settings*.json ignored (--setting-sources user); no MCP (--strict-mcp-config)",
        "code mode: edits only inside the worktree (acceptEdits), the shell minus a deny list "
        "(git history/branch/remote commands, network tools, publishing, sudo), no WebFetch/WebSearch",
        "read-only modes: no edit tools; only commands Claude Code classifies as read-only (dontAsk), "
        "plus the task's verify commands in test mode",
        "bounded retries (CLAUDE_CODE_MAX_RETRIES=2): a refused key fails in seconds",
        GUARD_ENV_TIMEOUTS,
    ],
    cannot_enforce=[
        CANNOT_SHELL_TEXT,
        CANNOT_NETWORK,
    ],
    unenforced_when_editing=[SHELL_TEXT_RULES, NO_NETWORK_SANDBOX],
)


def deny_rules() -> list[str]:
    rules = [f"Bash({cmd}:*)" for cmd in denied_commands()]
    rules += ["WebFetch", "WebSearch"]
    return rules


def claude_settings() -> dict[str, object]:
    return {
        "permissions": {"deny": deny_rules(), "disableBypassPermissionsMode": "disable"},
        "includeCoAuthoredBy": False,
        "cleanupPeriodDays": 3650,  # keep the session for `bosun work --resume`; the run dir is removed anyway
    }


def build_argv(ctx: WorkerContext, binary: str) -> list[str]:
    prof = ctx.profile
    argv = [binary, "-p", "--output-format", "stream-json", "--verbose"]
    if prof.model:
        argv += ["--model", prof.model]
    if not ctx.allowed.edit:
        argv += ["--permission-mode", "dontAsk", "--tools", ",".join(READ_TOOLS)]
        allow = [f"Bash({cmd}:*)" for cmd in ctx.allowed.commands]
        if allow:
            argv += ["--allowedTools", *allow]
    else:
        argv += ["--permission-mode", "acceptEdits", "--tools", ",".join(CODE_TOOLS), "--allowedTools", "Bash"]
    argv += [
        "--settings", json.dumps(claude_settings(), separators=(",", ":")),
        "--setting-sources", "user",
        "--strict-mcp-config",
        "--disable-slash-commands",
    ]
    if ctx.resume_session:
        argv += ["--resume", ctx.resume_session]
    argv += list(prof.extra_args)
    return argv


def build_env(ctx: WorkerContext) -> dict[str, str]:
    prof = ctx.profile
    env = dict(ctx.env)
    config_dir = ctx.home / ".claude"
    config_dir.mkdir(parents=True, exist_ok=True)
    env["CLAUDE_CONFIG_DIR"] = str(config_dir)
    env.update(QUIET_ENV)
    env.setdefault("CLAUDE_CODE_MAX_RETRIES", DEFAULT_MAX_RETRIES)
    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"):
        if name not in prof.env:
            env.pop(name, None)
    key = profile_key(ctx)
    if key:
        env["ANTHROPIC_API_KEY"] = key
    if prof.base_url:
        env["ANTHROPIC_BASE_URL"] = prof.base_url
        if prof.model:
            for name in MODEL_ALIASES:
                env[name] = prof.model
    return env


def new_parser() -> SdkStreamParser:
    return SdkStreamParser("Claude Code", input_includes_cache=False)


class ClaudeWorker(CliWorker):
    name = "claude"
    spec = SPEC
    build_argv = staticmethod(build_argv)
    build_env = staticmethod(build_env)

    def make_parser(self, ctx: WorkerContext) -> SdkStreamParser:
        return new_parser()

    def after_run(self, ctx: WorkerContext, parser: JsonLinesParser, result: WorkerResult) -> WorkerResult:
        if not result.ok and "native binary not installed" in result.stderr_tail:
            result.error_message = STUB_HINT
        return result

    def problems(self, profile: Profile) -> list[str]:
        if profile.api and profile.api != "anthropic":
            return [f"Claude Code speaks the Anthropic Messages API only (profile api = {profile.api!r})"]
        return []

    def describe(self, profile: Profile) -> WorkerInfo:
        info = super().describe(profile)
        if info.binary and not info.version and _is_npm_stub(info.binary):
            info.problems = [p for p in info.problems if not p.startswith("could not run") and "launcher" not in p]
            info.problems.insert(0, STUB_HINT)
        return info


STUB_HINT = (
    "the claude npm wrapper has no native binary (its postinstall did not run): run "
    "`node .../@anthropic-ai/claude-code/install.cjs`, or set binary = the platform binary "
    "(node_modules/@anthropic-ai/claude-code-linux-x64/claude)"
)


def _is_npm_stub(binary: str) -> bool:
    from bosun.proc import run_quick

    try:
        res = run_quick([binary, "--version"], timeout=20)
    except Exception:  # noqa: BLE001 - a broken binary is reported, not raised
        return False
    return "native binary not installed" in (res.stderr + res.stdout)

