"""The ``opencode`` adapter: OpenCode (opencode-ai) as a worker.

Everything but the spec lives in ``opencode_kit`` (shared with Kilo, an OpenCode fork): the
configuration in ``OPENCODE_CONFIG_CONTENT`` with one provider and one agent whose permission rules
encode what the run's mode allows, the ``--format json`` parser, and the log watch that stops OpenCode's
silent provider retries.
"""

from __future__ import annotations

from bosun.workers.cli_worker import CliSpec
from bosun.workers.opencode_kit import (
    CANNOT_ENFORCE,
    UNENFORCED_WHEN_EDITING,
    OpenCodeFamilyWorker,
    variant_args,
)

MIN_VERSION = "1.18.0"

SPEC = CliSpec(
    label="OpenCode",
    default_binary="opencode",
    package="opencode-ai",
    min_version=MIN_VERSION,
    needs_key=False,  # without base_url, the model names one of OpenCode's own providers
    enforces=[
        "own HOME and config (OPENCODE_CONFIG_CONTENT; user and project config ignored)",
        "read-only modes: edit and write tools removed, shell denied (test mode: only the verify commands)",
        "shell deny rules for git history/branch/remote commands, network tools, publishing and sudo",
        "no paths outside the worktree (external_directory denied), no .env reads",
        "no web fetch/search, subagents, skills, MCP or plugins",
        "git guard, env allowlist, timeouts (process group kill)",
    ],
    cannot_enforce=list(CANNOT_ENFORCE),
    unenforced_when_editing=list(UNENFORCED_WHEN_EDITING),
    effort_args=variant_args,
)


class OpenCodeWorker(OpenCodeFamilyWorker):
    name = "opencode"
    spec = SPEC

