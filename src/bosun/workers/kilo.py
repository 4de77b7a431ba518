"""The ``kilo`` adapter: Kilo Code's CLI (@kilocode/cli) as a worker.

Kilo is a fork of OpenCode with the same configuration shape and the same ``--format json`` events, so
this adapter is a small subclass of the OpenCode frame in ``opencode_kit`` (configuration, parser, the
log watch that stops silent provider retries) and changes what differs:

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

from pathlib import Path
from typing import Any

from bosun.workers.base import WorkerContext
from bosun.workers.cli_worker import CliSpec
from bosun.workers.opencode_kit import (
    CANNOT_ENFORCE,
    UNENFORCED_WHEN_EDITING,
    OpenCodeFamilyWorker,
    variant_args,
)
from bosun.workers.opencode_logwatch import log_dir
from bosun.workers.policy import GUARD_ENV_TIMEOUTS

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
        GUARD_ENV_TIMEOUTS,
    ],
    cannot_enforce=list(CANNOT_ENFORCE),
    unenforced_when_editing=list(UNENFORCED_WHEN_EDITING),
    effort_args=variant_args,
)


class KiloWorker(OpenCodeFamilyWorker):
    name = "kilo"
    spec = SPEC
    env_prefix = "KILO"
    log_name = "kilo"
    serves_itself = True

    def config(self, ctx: WorkerContext) -> dict[str, Any]:
        cfg = super().config(ctx)
        cfg.pop("$schema", None)
        cfg["disabled_providers"] = ["kilo"]
        return cfg

    def extra_env(self) -> dict[str, str]:
        return dict(KILO_ENV)


def kilo_log_dir(env: dict[str, str]) -> Path:
    return log_dir(env, "kilo")
