"""The ``pi`` adapter: Pi (@earendil-works/pi-coding-agent) as a worker.

Pi reads its providers from ``models.json`` in its agent directory. bosun points ``PI_CODING_AGENT_DIR``
at a directory inside the run's HOME and writes there a ``models.json`` with one provider (``bosun``):
the profile's endpoint, API and model, and ``"apiKey": "$VAR"`` naming the profile's key variable (Pi
resolves it from the environment; the key is never written to a file or put on argv), plus a
``settings.json`` with bounded retries and no telemetry. Extensions, skills, prompt templates, themes,
context files (AGENTS.md), MCP and project-local ``.pi`` resources are all switched off by flags.

Pi has no permission rules, only a tool allowlist (``--tools``): read-only modes get
``read,grep,find,ls``; code mode adds ``edit,write`` and ``bash``. Pi cannot filter shell commands, so in
code mode the shell deny rules are not enforced by the CLI (``WorkerResult.unenforced`` says so);
bosun's git guard still refuses history changes and the gates still judge the diff. Add
``--exclude-tools bash`` to the profile's ``extra_args`` for a code worker without a shell.

The prompt goes on stdin (Pi reads piped stdin as the first message). Sessions are kept in the run's
HOME (``--session-dir``) so ``bosun work --resume`` continues one with ``--session-id``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.fileio import write_text_atomic
from bosun.workers.base import (
    ErrorClass,
    Usage,
    WorkerContext,
    WorkerInfo,
    as_count,
    as_dict,
    ev_error,
    ev_message,
    ev_session,
    ev_tool_call,
    ev_tool_result,
    ev_usage,
)
from bosun.workers.classify import classify_http, parse_retry_after
from bosun.workers.cli_base import note_error
from bosun.workers.cli_worker import CliSpec, CliWorker, describe_cli
from bosun.workers.jsonlines import JsonLinesParser

if TYPE_CHECKING:
    from bosun.core.config import Profile

MIN_VERSION = "1.6.0"
PROVIDER_ID = "bosun"
READ_TOOLS = ("read", "grep", "find", "ls")
WRITE_TOOLS = ("edit", "write")
SHELL_TOOL = "bash"
PI_API = {
    None: "openai-completions",
    "openai": "openai-completions",
    "responses": "openai-responses",
    "anthropic": "anthropic-messages",
    "gemini": "google-generative-ai",
}
PI_FLAGS = (
    "--no-extensions",
    "--no-skills",
    "--no-prompt-templates",
    "--no-themes",
    "--no-context-files",
    "--no-mcp",
    "--no-approve",  # ignore project-local .pi/ resources
    "--offline",
)
PI_ENV = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
# Pi retries failed turns itself (default 3 times from 2 s, up to a minute apart). bosun has fallbacks
# and cooldowns, so a short, bounded retry is enough.
PI_SETTINGS: dict[str, Any] = {
    "retry": {"enabled": True, "maxRetries": 2, "baseDelayMs": 1000, "maxAgentDelayMs": 10000,
              "provider": {"maxRetries": 0, "maxRetryDelayMs": 10000}},
    "enableInstallTelemetry": False,
    "enableAnalytics": False,
    "quietStartup": True,
    "defaultProjectTrust": "never",
    "packages": [],
    "extensions": [],
    "skills": [],
    "prompts": [],
    "themes": [],
}
_STATUS_RE = re.compile(r"^\s*(\d{3})\b")


# ---------------------------------------------------------------------------------------------
# configuration


def pi_models_config(profile: Profile, provider_id: str = PROVIDER_ID) -> dict[str, Any]:
    model = profile.model or "default"
    entry: dict[str, Any] = {"id": model, "name": model, "contextWindow": 128000, "maxTokens": profile.max_tokens or 8192}
    if profile.effort:
        entry["reasoning"] = True  # Pi sends --thinking's level only for a model marked as reasoning
    provider: dict[str, Any] = {
        "baseUrl": profile.base_url,
        "api": PI_API.get(profile.api, PI_API[None]),
        # "$NAME" is resolved from the environment by Pi; without a key variable the endpoint gets none.
        "apiKey": f"${profile.api_key_env}" if profile.api_key_env else "none",
        "models": [entry],
    }
    return {"providers": {provider_id: provider}}


def pi_tools(read_only: bool, shell: bool = True) -> list[str]:
    if read_only:
        return list(READ_TOOLS)
    return [*READ_TOOLS, *WRITE_TOOLS, *([SHELL_TOOL] if shell else [])]


def shell_excluded(extra_args: list[str]) -> bool:
    """True when the profile's extra_args take the shell away (``--exclude-tools bash`` or ``-xt bash``)."""
    for i, arg in enumerate(extra_args):
        value = None
        if arg in ("--exclude-tools", "-xt") and i + 1 < len(extra_args):
            value = extra_args[i + 1]
        elif arg.startswith("--exclude-tools="):
            value = arg.split("=", 1)[1]
        if value and SHELL_TOOL in [v.strip() for v in value.split(",")]:
            return True
    return False


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(doc, indent=2) + "\n")


# ---------------------------------------------------------------------------------------------
# the stream


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def pi_usage(u: dict[str, Any]) -> Usage:
    """Pi's ``input`` excludes cache reads and writes; its ``output`` already includes reasoning."""
    read, write = as_count(u.get("cacheRead")), as_count(u.get("cacheWrite"))
    cost = u.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else cost
    return Usage(
        input_tokens=as_count(u.get("input")) + read + write,
        cached_input_tokens=read,
        output_tokens=as_count(u.get("output")),
        reasoning_tokens=as_count(u.get("reasoning")),
        cost_usd=float(total) if isinstance(total, int | float) and total else None,
    )


def classify_pi_error(message: str) -> ErrorClass:
    """Pi's error messages start with the HTTP status ("429: {...}") when the provider answered."""
    m = _STATUS_RE.match(message or "")
    return classify_http(int(m.group(1)) if m else None, message or "")


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text") or "") for c in content if isinstance(c, dict) and c.get("type") == "text").strip()
    return ""


class PiParser(JsonLinesParser):
    """Maps ``pi --mode json`` lines to normalized events.

    Usage is counted once per assistant ``message_end`` (``message_update`` repeats the running usage on
    every delta). A turn that ends with ``stopReason: "error"`` records a classified error; when Pi's own
    retry then succeeds (``auto_retry_end`` with ``success: true``) the error is cleared again.
    """

    def on_object(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        kind = obj.get("type")
        if kind == "session":
            sid = obj.get("id")
            if sid and self.state.session_id is None:
                self.state.session_id = str(sid)
                return [ev_session(str(sid))]
            return []
        if kind == "turn_start":
            self.state.steps += 1
            return []
        if kind == "message_end":
            return self._message_end(obj.get("message") or {})
        if kind == "tool_execution_end":
            result = as_dict(obj.get("result"))
            output = _content_text(result.get("content")) or result
            return [ev_tool_result(obj.get("toolName"), not obj.get("isError"), output, obj.get("toolCallId"))]
        if kind == "auto_retry_start":
            msg = str(obj.get("errorMessage") or "error")
            return [ev_error(f"retrying ({obj.get('attempt')}/{obj.get('maxAttempts')}): {msg}", classify_pi_error(msg),
                             retryable=True, retry_after_s=parse_retry_after(msg))]
        if kind == "auto_retry_end":
            if obj.get("success"):
                # Pi recovered: the failed attempt says nothing about the outcome.
                self.state.errors.clear()
                self.state.error_class = None
                self.state.retry_after_s = None
                return []
            final = str(obj.get("finalError") or "")
            if final and final not in self.state.errors:
                return [note_error(self.state, final, classify_pi_error(final))]
            return []
        if kind == "agent_settled" and obj.get("aborted") and not self.state.errors:
            return [note_error(self.state, "Pi aborted the run", ErrorClass.permanent)]
        return []

    def _message_end(self, msg: dict[str, Any]) -> list[dict[str, Any]]:
        if msg.get("role") != "assistant":
            return []
        out: list[dict[str, Any]] = []
        content = _list(msg.get("content"))
        for part in content:
            if isinstance(part, dict) and part.get("type") == "toolCall":
                out.append(ev_tool_call(str(part.get("name") or "?"), part.get("arguments"), part.get("id")))
        text = _content_text(content)
        if text:
            self.state.final_text = text
            out.insert(0, ev_message(text))
        usage = pi_usage(msg.get("usage") or {})
        if usage.input_tokens or usage.output_tokens:
            self.state.usage.add(usage)
            out.append(ev_usage(usage))
        stop = msg.get("stopReason")
        if stop == "error":
            err = str(msg.get("errorMessage") or "the model call failed")
            out.append(note_error(self.state, err, classify_pi_error(err)))
        elif stop == "aborted":
            out.append(note_error(self.state, str(msg.get("errorMessage") or "aborted"), ErrorClass.permanent))
        return out


# ---------------------------------------------------------------------------------------------
# the adapter


ENFORCES = [
    "own HOME and agent dir (models.json, settings.json); no extensions, skills, MCP, context files or project .pi",
    "read-only modes: only read, grep, find, ls (no edit, write or shell)",
    "git guard, env allowlist, timeouts (process group kill, detached shell commands reaped)",
]
CANNOT_ENFORCE = [
    "shell deny rules (git history, network, publishing, sudo): Pi cannot filter bash commands; code mode "
    "has the shell unless extra_args has --exclude-tools bash (bosun's git guard still refuses history changes)",
    "paths outside the worktree: Pi's file tools accept absolute paths",
    "test mode cannot run the verify commands (read-only modes have no shell)",
]


SPEC = CliSpec(
    label="Pi",
    default_binary="pi",
    package="@earendil-works/pi-coding-agent",
    min_version=MIN_VERSION,
    enforces=ENFORCES,
    cannot_enforce=CANNOT_ENFORCE,
    needs_key=False,  # without base_url, the model names one of Pi's own providers
    install_note=", needs Node >= 22",
    # Its models.json marks the model as reasoning whenever the profile asks for effort (or Pi would
    # not send --thinking's level on).
    effort_args=lambda level, profile: ["--thinking", "off" if level == "none" else level],
    old_note=" (under Node 20 npm installs 0.x)",
)


def agent_dir(ctx: WorkerContext) -> Path:
    return ctx.home / ".pi" / "agent"


def session_dir(ctx: WorkerContext) -> Path:
    return ctx.home / ".pi" / "sessions"


class PiWorker(CliWorker):
    name = "pi"
    spec = SPEC

    def build_env(self, ctx: WorkerContext) -> dict[str, str]:
        """Write Pi's models.json and settings.json into the run's agent dir; return the env."""
        agent = agent_dir(ctx)
        agent.mkdir(parents=True, exist_ok=True)
        session_dir(ctx).mkdir(parents=True, exist_ok=True)
        if ctx.profile.base_url:
            _write_json(agent / "models.json", pi_models_config(ctx.profile))
        _write_json(agent / "settings.json", PI_SETTINGS)
        env = dict(ctx.env)
        env.update(PI_ENV)
        env["PI_CODING_AGENT_DIR"] = str(agent)
        env.pop("PI_CODING_AGENT_SESSION_DIR", None)
        return env

    def build_argv(self, ctx: WorkerContext, binary: str) -> list[str]:
        prof = ctx.profile
        shell = not shell_excluded(list(prof.extra_args))
        argv = [binary, "--mode", "json"]
        if prof.base_url:
            argv += ["--provider", PROVIDER_ID, "--model", prof.model or "default"]
        elif prof.model:
            argv += ["--model", prof.model]
        argv += ["--tools", ",".join(pi_tools(not ctx.allowed.edit, shell)), *PI_FLAGS]
        argv += ["--session-dir", str(session_dir(ctx))]
        if ctx.resume_session:
            argv += ["--session-id", ctx.resume_session]
        argv += list(prof.extra_args)
        return argv

    def make_parser(self, ctx: WorkerContext) -> PiParser:
        if ctx.resume_session and not any(session_dir(ctx).glob(f"*{ctx.resume_session}*.jsonl")):
            # Pi would silently start a new session under that id.
            ctx.emit(ev_message(f"Pi session {ctx.resume_session} not found; Pi starts a new one", role="system"))
        return PiParser()

    def unenforced(self, ctx: WorkerContext) -> list[str]:
        return unenforced(not ctx.allowed.edit, not shell_excluded(list(ctx.profile.extra_args)))

    def problems(self, profile: Profile) -> list[str]:
        return [p for p in profile_problems(profile) if not p.startswith("set model")]

    def describe(self, profile: Profile) -> WorkerInfo:
        info = describe_cli(self.spec, profile, self.problems(profile))
        if shell_excluded(list(profile.extra_args)):
            info.cannot_enforce = [c for c in info.cannot_enforce if not c.startswith("shell")]
        return info


def profile_problems(profile: Profile) -> list[str]:
    if profile.model and not profile.base_url and "/" not in profile.model:
        return ["without base_url, model must name one of the CLI's own providers: \"provider/model\""]
    return []


def unenforced(read_only: bool, shell: bool) -> list[str]:
    if read_only or not shell:
        return []
    return ["shell deny rules (Pi cannot filter bash commands; bosun's git guard still applies)"]
