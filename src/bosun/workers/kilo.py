"""The ``kilo`` adapter: Kilo Code's CLI (@kilocode/cli) as a worker.

Kilo is a fork of OpenCode with the same configuration shape and the same ``--format json`` events, so
this adapter reuses the OpenCode adapter's pieces (``build_opencode_config``, ``OpenCodeParser``, the
log watch that stops silent provider retries, the stray-process reaper) and changes what differs:

- the configuration arrives in ``KILO_CONFIG_CONTENT`` (never a file of the user's), with Kilo's own
  gateway switched off (``"disabled_providers": ["kilo"]``) besides OpenCode's ``enabled_providers``;
- its environment switches are ``KILO_*``: no telemetry (``KILO_TELEMETRY_LEVEL=off``), no session ingest,
  presence, codebase indexing, models fetch, auto-update, default plugins, LSP downloads, sharing,
  project config (the repo's kilo.json/.kilo/) or Claude Code prompts and skills;
- its log directory is ``$HOME/.local/share/kilo/log``.

Permissions are OpenCode's rules in the injected agent (last matching rule wins): code mode may read,
search, edit and use the shell minus the deny list (git history/branch/remote commands, network tools,
publishing, sudo); read-only modes get no edit tool and no shell (test mode: only the verify commands);
the web, subagents, skills and paths outside the worktree are denied.

Kilo takes 10-15 s to start. The prompt goes on stdin; ``bosun work --resume`` continues a session with
``--session ID``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.workers.base import WorkerContext, WorkerInfo, WorkerResult
from bosun.workers.cli_base import resolve_binary, run_cli
from bosun.workers.opencode import (
    AGENT_NAME,
    CANNOT_ENFORCE,
    LogWatch,
    OpenCodeParser,
    build_opencode_config,
    finish_after_watch,
    opencode_env,
    opencode_model,
    profile_problems,
    stop_on_provider_errors,
    unenforced,
)
from bosun.workers.sdk_stream import (
    CliSpec,
    describe_cli,
    missing_binary,
    verify_commands,
)

if TYPE_CHECKING:
    from bosun.config import Profile

MIN_VERSION = "7.7.7"
KILO_ENV = {
    "KILO_TELEMETRY_LEVEL": "off",
    "KILO_DISABLE_SESSION_INGEST": "1",
    "KILO_DISABLE_CODEBASE_INDEXING": "1",
    "KILO_DISABLE_PRESENCE": "1",
    "KILO_DISABLE_CLAUDE_CODE_PROMPT": "1",
    "KILO_DISABLE_CLAUDE_CODE_SKILLS": "1",
    "KILO_DISABLE_SKILL_SHELL": "1",
    "KILO_DISABLE_TERMINAL_TITLE": "1",
    "KILO_AUTO_SHARE": "0",
}

SPEC = CliSpec(
    label="Kilo",
    default_binary="kilo",
    package="@kilocode/cli",
    min_version=MIN_VERSION,
    enforces=[
        "own HOME and config (KILO_CONFIG_CONTENT; user and project config ignored; Kilo's gateway disabled)",
        "no telemetry, session ingest, presence or codebase indexing",
        "read-only modes: edit and write tools removed, shell denied (test mode: only the verify commands)",
        "shell deny rules for git history/branch/remote commands, network tools, publishing and sudo",
        "no paths outside the worktree (external_directory denied), no .env reads",
        "no web fetch/search, subagents, skills, MCP or plugins",
        "silent provider retries stopped after 3 refusals (log watch), so failures are classified in seconds",
        "git guard, env allowlist, timeouts (process group kill, stray shell commands reaped)",
    ],
    cannot_enforce=list(CANNOT_ENFORCE),
)


def kilo_config(ctx: WorkerContext) -> dict[str, Any]:
    allow = verify_commands(ctx) if ctx.read_only and ctx.task.mode.value == "test" else []
    cfg = build_opencode_config(ctx.profile, ctx.read_only, allow_commands=allow)
    cfg.pop("$schema", None)
    cfg["disabled_providers"] = ["kilo"]
    return cfg


def kilo_log_dir(env: dict[str, str]) -> Path:
    data = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")) / ".local" / "share")
    return Path(data) / "kilo" / "log"


def build_argv(ctx: WorkerContext, binary: str) -> list[str]:
    prof = ctx.profile
    argv = [binary, "run", "--format", "json", "--pure", "--agent", AGENT_NAME]
    model = opencode_model(prof)
    if model:
        argv += ["-m", model]
    if ctx.resume_session:
        argv += ["--session", ctx.resume_session]
    else:
        argv += ["--title", f"bosun {ctx.run_id}"]  # no title-generation request
    argv += list(prof.extra_args)
    return argv


def build_env(ctx: WorkerContext) -> dict[str, str]:
    env = opencode_env(ctx.env, kilo_config(ctx), prefix="KILO")
    env.update(KILO_ENV)
    return env


def _with_should_stop(ctx: WorkerContext, should_stop: Callable[[], bool]) -> WorkerContext:
    return dataclasses.replace(ctx, should_stop=should_stop)


class KiloWorker:
    name = "kilo"

    def prepare(self, ctx: WorkerContext, binary: str) -> tuple[list[str], dict[str, str], bytes]:
        return build_argv(ctx, binary), build_env(ctx), ctx.prompt.encode("utf-8")

    def parser(self) -> OpenCodeParser:
        return OpenCodeParser()

    def run(self, ctx: WorkerContext) -> WorkerResult:
        binary = resolve_binary(ctx.profile.binary, SPEC.default_binary)
        if not binary:
            return missing_binary(ctx, SPEC)
        argv, env, stdin = self.prepare(ctx, binary)
        watch = LogWatch(kilo_log_dir(env))
        wrapped = _with_should_stop(ctx, stop_on_provider_errors(ctx, watch))
        parser = self.parser()
        result = run_cli(wrapped, argv, env, parser, stdin_data=stdin)
        result = finish_after_watch(ctx, result, watch, cli="Kilo")
        if not result.ok and not result.error_message and parser.other:
            result.error_message = parser.other[-1]
        result.unenforced = unenforced(ctx.read_only)
        return result

    def describe(self, profile: Profile) -> WorkerInfo:
        # describe_cli already asks for a model when there is none.
        extra = [p for p in profile_problems(profile) if not p.startswith("set model")]
        return describe_cli(SPEC, profile, extra)
