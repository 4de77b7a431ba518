"""The ``gemini`` adapter: Gemini CLI (@google/gemini-cli) as a worker.

Gemini CLI reads ``$HOME/.gemini/settings.json`` and the policy files in ``$HOME/.gemini/policies/``;
HOME is the run's own directory, so the user's settings, login, MCP servers, extensions and policies are
never seen. The same settings file is also given as *system* settings
(``GEMINI_CLI_SYSTEM_SETTINGS_PATH``), which Gemini merges over user and workspace settings, so a repo's
``.gemini/settings.json`` cannot change them. The key is copied, in the environment only, from the
profile's key variable to ``GEMINI_API_KEY``; ``GOOGLE_GEMINI_BASE_URL`` carries the profile's base_url
(without ``/v1beta``: the SDK adds it). Telemetry, usage statistics and update checks are off;
``--skip-trust`` trusts the worktree for this run only and ``GEMINI_CLI_NO_RELAUNCH`` keeps it one process.

Permissions are Gemini's policy engine (``policies/bosun.toml``, user tier, priority 999, which also
beats the yolo allow-all): ``run_shell_command`` with a ``commandPrefix`` from the deny list (git
history/branch/remote commands, network tools, publishing, sudo; Gemini checks each part of ``a && b``)
and ``web_fetch`` / ``google_web_search`` are denied in every mode.

- code: ``--approval-mode yolo`` (everything else is allowed);
- explore / review: ``--approval-mode plan`` (read-only tools; edits refused, no shell);
- test: ``--approval-mode default``: headless, anything that would ask is refused, so edits are refused;
  an allow rule lets exactly the task's verify commands run.

Retries: Gemini CLI retries 429/5xx up to ``general.maxAttempts`` times (default 10, from 5 s up to 30 s
apart: minutes). bosun sets 2: one retry, then the failure is classified and the fallback chain moves on.

The prompt goes on stdin (headless when stdin is not a terminal). Sessions stay in the run's HOME, so
``bosun work --resume`` continues one with ``--resume ID``.

Events (``--output-format stream-json``): ``init`` (session_id, model), ``message`` (role, content,
``delta``: assistant text comes in pieces), ``tool_use`` (tool_name, tool_id, parameters),
``tool_result`` (tool_id, status success|error, output, error {type, message}; ``policy_violation`` is a
refusal), ``error`` (severity, message) and ``result`` (status, error, stats {input_tokens,
output_tokens, cached, ...}: the run's usage).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from bosun.core.fileio import write_text_atomic
from bosun.workers.base import (
    Usage,
    WorkerContext,
    as_dict,
    ev_error,
    ev_message,
    ev_session,
    ev_tool_call,
    ev_tool_result,
    ev_usage,
    subset_usage,
)
from bosun.workers.classify import classify_http, parse_retry_after, status_in_text
from bosun.workers.cli_base import note_error
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
from bosun.workers.sdk_stream import DENIED_RE

if TYPE_CHECKING:
    from bosun.core.config import Profile

MIN_VERSION = "0.61.0"
MAX_ATTEMPTS = 2
DENIED_TOOLS = ("web_fetch", "google_web_search")
GEMINI_ENV = {
    "GEMINI_CLI_NO_RELAUNCH": "true",
    "GEMINI_TELEMETRY_ENABLED": "false",
}

SPEC = CliSpec(
    label="Gemini CLI",
    default_binary="gemini",
    package="@google/gemini-cli",
    min_version=MIN_VERSION,
    enforces=[
        "own HOME, settings.json (also as system settings, over the repo's .gemini/settings.json) and policies: "
        "user settings, login, MCP servers, extensions and policies ignored",
        "policy engine: shell deny rules (git history/branch/remote commands, network tools, publishing, sudo) "
        "and no web_fetch/google_web_search, in every approval mode",
        "explore/review: plan mode (no edits, no shell); test: default mode, edits refused, only the task's "
        "verify commands may run",
        "bounded retries (general.maxAttempts = 2)",
        GUARD_ENV_TIMEOUTS,
    ],
    cannot_enforce=[
        CANNOT_SHELL_TEXT,
        CANNOT_NETWORK,
    ],
    unenforced_when_editing=[SHELL_TEXT_RULES, NO_NETWORK_SANDBOX],
)


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def policy_toml(ctx: WorkerContext) -> str:
    rules = [
        "# bosun: what a worker may never do, whatever the approval mode (user tier, top priority).",
        "[[rule]]",
        'toolName = "run_shell_command"',
        f"commandPrefix = {_toml_list(denied_commands())}",
        'decision = "deny"',
        "priority = 999",
        'denyMessage = "bosun: this command is not allowed for workers (bosun commits, integrates and publishes itself)"',
        "",
        "[[rule]]",
        f"toolName = {_toml_list(list(DENIED_TOOLS))}",
        'decision = "deny"',
        "priority = 999",
        'denyMessage = "bosun: workers have no web access"',
    ]
    allow = list(ctx.allowed.commands) if not ctx.allowed.edit else []
    if allow:
        rules += [
            "",
            "[[rule]]",
            'toolName = "run_shell_command"',
            f"commandPrefix = {_toml_list(allow)}",
            'decision = "allow"',
            "priority = 900",
        ]
    return "\n".join(rules) + "\n"


def gemini_settings() -> dict[str, Any]:
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": MAX_ATTEMPTS},
        "mcpServers": {},
    }


def approval_mode(ctx: WorkerContext) -> str:
    if ctx.allowed.edit:
        return "yolo"
    return "default" if ctx.allowed.shell else "plan"  # test mode runs the verify commands


def build_argv(ctx: WorkerContext, binary: str) -> list[str]:
    prof = ctx.profile
    argv = [binary, "--output-format", "stream-json", "--skip-trust", "--approval-mode", approval_mode(ctx)]
    if prof.model:
        argv += ["-m", prof.model]
    if ctx.resume_session:
        argv += ["--resume", ctx.resume_session]
    argv += list(prof.extra_args)
    return argv


def build_env(ctx: WorkerContext) -> dict[str, str]:
    env = dict(ctx.env)
    env.update(GEMINI_ENV)
    for name in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS"):
        if name not in ctx.profile.key_env_names():
            env.pop(name, None)
    key = profile_key(ctx)
    if key:
        env["GEMINI_API_KEY"] = key
    if ctx.profile.base_url:
        env["GOOGLE_GEMINI_BASE_URL"] = ctx.profile.base_url.rstrip("/")
    gdir = ctx.home / ".gemini"
    (gdir / "policies").mkdir(parents=True, exist_ok=True)
    settings = gdir / "settings.json"
    write_text_atomic(settings, json.dumps(gemini_settings(), indent=2))
    write_text_atomic(gdir / "policies" / "bosun.toml", policy_toml(ctx))
    env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = str(settings)
    return env


# ---------------------------------------------------------------------------------------------
# the stream


def gemini_usage(stats: dict[str, Any]) -> Usage:
    """``result.stats``: input_tokens counts every prompt token (``cached`` is a subset of it)."""
    return subset_usage(stats.get("input_tokens"), stats.get("cached"), stats.get("output_tokens"),
                        stats.get("thoughts") or stats.get("thoughts_tokens"))


class GeminiParser(JsonLinesParser):
    """Maps ``gemini --output-format stream-json`` lines to normalized events."""

    def __init__(self) -> None:
        super().__init__()
        self.tool_names: dict[str, str] = {}
        self.text: list[str] = []
        self.in_step = False

    def on_object(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        kind = obj.get("type")
        out: list[dict[str, Any]] = []
        if kind == "message" and obj.get("role") == "assistant":
            self._step()
            self.text.append(str(obj.get("content") or ""))
            return out
        out.extend(self._flush())
        if kind == "init" and obj.get("session_id"):
            self.state.session_id = str(obj["session_id"])
            out.append(ev_session(self.state.session_id))
        elif kind == "tool_use":
            self._step()
            call_id = str(obj.get("tool_id") or "")
            name = str(obj.get("tool_name") or "?")
            self.tool_names[call_id] = name
            out.append(ev_tool_call(name, obj.get("parameters"), call_id or None))
        elif kind == "tool_result":
            self.in_step = False
            out.append(self._tool_result(obj))
        elif kind == "error":
            msg = str(obj.get("message") or "error")
            if str(obj.get("severity") or "error") == "error":
                out.append(note_error(self.state, msg, classify_http(status_in_text(msg), msg)))
            else:
                out.append(ev_error(msg, retryable=True))
        elif kind == "result":
            out.extend(self._result(obj))
        return out

    def _step(self) -> None:
        if not self.in_step:
            self.in_step = True
            self.state.steps += 1

    def _flush(self) -> list[dict[str, Any]]:
        if not self.text:
            return []
        text = "".join(self.text)
        self.text = []
        if not text.strip():
            return []
        self.state.final_text = text
        return [ev_message(text)]

    def _tool_result(self, obj: dict[str, Any]) -> dict[str, Any]:
        call_id = str(obj.get("tool_id") or "")
        ok = obj.get("status") == "success"
        err = as_dict(obj.get("error"))
        output = obj.get("output")
        if not ok and not output:
            output = err.get("message")
        denied = err.get("type") == "policy_violation" or (not ok and bool(DENIED_RE.search(str(output or "")[:600])))
        return ev_tool_result(self.tool_names.get(call_id), ok, output, call_id or None, denied=denied)

    def _result(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        stats = as_dict(obj.get("stats"))
        usage = gemini_usage(stats)
        if usage.input_tokens or usage.output_tokens:
            self.state.usage.add(usage)
            out.append(ev_usage(usage))
        if obj.get("status") == "success":
            self.state.finished_ok = True
            return out
        self.state.finished_ok = False
        err = as_dict(obj.get("error"))
        msg = str(err.get("message") or obj.get("status") or "error")
        ev = note_error(self.state, msg, classify_http(status_in_text(msg), msg))
        retry = parse_retry_after(msg)
        if retry:
            ev["retry_after_s"] = retry
        out.append(ev)
        return out

    def finish(self) -> list[dict[str, Any]]:
        return self._flush()


# ---------------------------------------------------------------------------------------------
# the adapter


class GeminiWorker(CliWorker):
    name = "gemini"
    spec = SPEC
    build_argv = staticmethod(build_argv)
    build_env = staticmethod(build_env)

    def make_parser(self, ctx: WorkerContext) -> GeminiParser:
        return GeminiParser()

    def problems(self, profile: Profile) -> list[str]:
        if profile.api and profile.api != "gemini":
            return [f"Gemini CLI speaks the Gemini API only (profile api = {profile.api!r})"]
        return []

