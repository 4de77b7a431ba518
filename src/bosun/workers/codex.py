"""The ``codex`` adapter: OpenAI Codex CLI (@openai/codex) as a worker.

Codex runs with its own ``CODEX_HOME`` inside the run's HOME, so the user's config, login, rules,
plugins, skills and history are never read or changed. bosun writes a ``config.toml`` there with one
model provider (``bosun``): the profile's base_url (default ``https://api.openai.com/v1``),
``wire_api = "responses"`` (the only API Codex speaks) and ``env_key`` = the profile's key variable,
which Codex reads from the environment itself (the key is never written to a file or put on argv).
Retries are bounded (``request_max_retries = 2``, ``stream_max_retries = 2``): Codex retries even a 401
five times by default; with these a refused key fails in about a second.

Permissions are Codex's own:

- the sandbox (Linux: Landlock + seccomp): ``workspace-write`` in code and test modes (commands may write
  only in the worktree and the temp dir, with no network), ``read-only`` in explore/review modes (the
  read-only sandbox forbids temp files too, so test runners cannot run in it; test mode records that
  edits are not blocked);
- ``approval_policy = "never"``: nothing waits for a human; what the sandbox refuses fails;
- execpolicy rules (``$CODEX_HOME/rules/bosun.rules``): ``prefix_rule(..., decision="forbidden")`` for
  git history/branch/remote commands, network tools, publishing and sudo (Codex splits ``a && b``);
- plugins, apps, goals, multi-agent and web search are disabled.

Refusals by the execpolicy or the sandbox do not appear in ``--json`` output; Codex logs them on stderr,
and the adapter turns those lines into ``tool_result`` events with ``denied: true`` after the run.

The prompt goes on stdin (``codex exec -``). Sessions are kept in the run's CODEX_HOME (no
``--ephemeral``) so ``bosun work --resume`` continues one with ``codex exec resume ID -``.

Events (``codex exec --json``): ``thread.started`` (thread_id), ``turn.started``, ``item.started`` /
``item.completed`` (command_execution, file_change, mcp_tool_call, web_search, agent_message,
reasoning, error), ``turn.completed`` (usage of the turn: input_tokens with cached_input_tokens a subset,
output_tokens with reasoning_output_tokens a subset), ``turn.failed`` and ``error``. Only
``turn.failed`` (or a non-zero exit without ``turn.completed``) fails a run: "Reconnecting... n/m"
errors are retries, and other ``error`` events and ``error`` items are warnings unless the turn then
fails (Codex reports "Model metadata for `deepseek-chat` not found. Defaulting to fallback metadata"
as an ``error`` event and then does the work).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.adapters import ADAPTERS
from bosun.core.fileio import write_text_atomic
from bosun.workers.base import (
    ErrorClass,
    Usage,
    WorkerContext,
    WorkerResult,
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
from bosun.workers.cli_base import note_error, note_warning
from bosun.workers.cli_worker import CliSpec, CliWorker, load_usage_total, save_usage_total
from bosun.workers.jsonlines import JsonLinesParser
from bosun.workers.policy import GUARD_ENV_TIMEOUTS, denied_commands

if TYPE_CHECKING:
    from bosun.core.config import Profile

MIN_VERSION = "0.171.0"
PROVIDER_ID = "bosun"
DEFAULT_BASE_URL: str = ADAPTERS["codex"].default_base_url or ""
DISABLED_FEATURES = ("plugins", "remote_plugin", "apps", "goals", "multi_agent")
TOOL_ITEMS = {"command_execution": "shell", "file_change": "apply_patch", "mcp_tool_call": "mcp", "web_search": "web_search"}

SPEC = CliSpec(
    label="Codex",
    default_binary="codex",
    package="@openai/codex",
    min_version=MIN_VERSION,
    effort_args=lambda level, profile: ["-c", f'model_reasoning_effort="{level}"'],
    enforces=[
        "own CODEX_HOME in the run: user config, login, rules, plugins, skills and history ignored",
        "sandbox: code and test modes write only in the worktree and temp dir with no network for commands "
        "(workspace-write); read-only sandbox in explore/review modes",
        "execpolicy rules forbid git history/branch/remote commands, network tools, publishing and sudo",
        "approval never; plugins, apps, goals, multi-agent and web search disabled",
        "bounded retries (request_max_retries = stream_max_retries = 2): a refused key fails in seconds",
        GUARD_ENV_TIMEOUTS,
    ],
    cannot_enforce=[
        "test mode: no edit-free sandbox that still lets test runners write temp files, so the worktree is "
        "writable (workspace-write); bosun discards any write of a test run, which is never landable",
        "the sandbox needs Linux Landlock/seccomp (or macOS Seatbelt); where Codex cannot sandbox, "
        "commands fail rather than run unconfined",
    ],
)


def unenforced(ctx: WorkerContext) -> list[str]:
    if ctx.confine is not None and ctx.confine.connect_ports is None:
        return ["no network block for commands: Codex's own sandbox cannot run inside bosun's kernel "
                "sandbox, which confines writes (the worktree, or nothing in read-only modes) but, with "
                "network = \"any\", not the network"]
    if ctx.confine is not None:
        return []  # bosun's sandbox holds what Codex's would: writes, and TCP to the provider alone
    if _runs_tests_read_only(ctx):
        return ["test mode: Codex runs with the workspace-write sandbox (its read-only sandbox stops test "
                "runners), so edits to the worktree are not blocked by the CLI; bosun discards them "
                "(READ_ONLY_VIOLATION) and the run can never land a change"]
    return []


def _runs_tests_read_only(ctx: WorkerContext) -> bool:
    """Test mode: no edits, but the shell for the verify commands."""
    return not ctx.allowed.edit and ctx.allowed.shell


def toml_str(value: str) -> str:
    return json.dumps(value)  # a TOML basic string is a JSON string for anything bosun writes


def sandbox_mode(ctx: WorkerContext) -> str:
    """read-only for explore and review; workspace-write for code and test.

    Codex's read-only sandbox forbids every write, temp files included, so test runners fail in it
    (pytest cannot even set up output capture). Test mode therefore gets workspace-write: commands can
    write in the worktree and the temp dir (still no network), and the run records that edits are not
    blocked by the CLI in that mode.
    """
    if ctx.confine is not None:
        # Inside bosun's kernel sandbox Codex's own cannot start: its bubblewrap needs a user
        # namespace (bosun's forbids a nested one; under Landlock alone writing /proc/self/uid_map is
        # refused) and its Landlock fallback insists on bubblewrap. bosun's sandbox confines writes
        # instead, read-only modes included, and the network under provider-only.
        return "danger-full-access"
    if not ctx.allowed.edit and not _runs_tests_read_only(ctx):
        return "read-only"
    return "workspace-write"


def codex_config(profile: Profile, sandbox: str) -> str:
    lines = [
        f"model = {toml_str(profile.model or 'gpt-5.5')}",
        f"model_provider = {toml_str(PROVIDER_ID)}",
        'approval_policy = "never"',
        f"sandbox_mode = {toml_str(sandbox)}",
        "check_for_update_on_startup = false",
        # A login shell sources /etc/profile, which on Debian-like systems resets PATH: bosun's git guard
        # (first on PATH) and the user's toolchain would be lost. Commands run in a plain `bash -c`.
        "allow_login_shell = false",
        'web_search = "disabled"',
        "show_raw_agent_reasoning = false",
    ]
    if profile.max_tokens:
        lines.append(f"model_max_output_tokens = {int(profile.max_tokens)}")
    lines += [
        "",
        "[sandbox_workspace_write]",
        "network_access = false",
        "",
        "[history]",
        'persistence = "none"',
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[feedback]",
        "enabled = false",
        "",
        # Codex unpacks its bundled skills (image generation, OpenAI docs, a skill installer that
        # fetches from GitHub) into CODEX_HOME at every start, ~1 MB per run in a fresh HOME, and lists
        # them in every request's instructions: tokens a worker pays for and tools it must not use.
        "[skills.bundled]",
        "enabled = false",
        "",
        f"[model_providers.{PROVIDER_ID}]",
        f"name = {toml_str('bosun profile ' + (profile.name or ''))}",
        f"base_url = {toml_str(profile.base_url or DEFAULT_BASE_URL)}",
        'wire_api = "responses"',
        "request_max_retries = 2",
        "stream_max_retries = 2",
    ]
    if profile.api_key_env:
        lines.append(f"env_key = {toml_str(profile.api_key_env)}")
    return "\n".join(lines) + "\n"


def exec_rules() -> str:
    """Codex execpolicy: every denied command prefix is forbidden."""
    out = ["# bosun: commands a worker may never run (bosun commits, integrates and publishes itself)."]
    for cmd in denied_commands():
        tokens = shlex.split(cmd)
        pattern = "[" + ", ".join(json.dumps(t) for t in tokens) + "]"
        why = json.dumps(f"bosun: `{cmd}` is not allowed for workers")
        out.append(f'prefix_rule(pattern={pattern}, decision="forbidden", justification={why})')
    return "\n".join(out) + "\n"


def write_codex_home(ctx: WorkerContext) -> str:
    home = ctx.home / ".codex"
    (home / "rules").mkdir(parents=True, exist_ok=True)
    write_text_atomic(home / "config.toml", codex_config(ctx.profile, sandbox_mode(ctx)))
    write_text_atomic(home / "rules" / "bosun.rules", exec_rules())
    return str(home)


def build_argv(ctx: WorkerContext, binary: str) -> list[str]:
    argv = [binary, "exec"]
    if ctx.resume_session:
        argv.append("resume")
    argv += ["--json", "--skip-git-repo-check"]
    for feature in DISABLED_FEATURES:
        argv += ["--disable", feature]
    argv += ["-c", 'web_search="disabled"']
    argv += list(ctx.profile.extra_args)
    if ctx.resume_session:
        argv.append(ctx.resume_session)
    argv.append("-")  # the prompt on stdin
    return argv


def build_env(ctx: WorkerContext) -> dict[str, str]:
    env = dict(ctx.env)
    env["CODEX_HOME"] = write_codex_home(ctx)
    for name in ("OPENAI_BASE_URL", "CODEX_API_KEY"):
        if name not in ctx.profile.key_env_names():
            env.pop(name, None)
    return env


# ---------------------------------------------------------------------------------------------
# the stream


def codex_usage(raw: dict[str, Any]) -> Usage:
    return subset_usage(raw.get("input_tokens"), raw.get("cached_input_tokens"), raw.get("output_tokens"),
                        raw.get("reasoning_output_tokens"))


_RECONNECT_RE = re.compile(r"^\s*(Reconnecting|Retrying)\b", re.I)


def codex_error_class(message: str) -> ErrorClass:
    return classify_http(status_in_text(message), message)


class CodexParser(JsonLinesParser):
    """Maps ``codex exec --json`` lines to normalized events.

    ``turn.completed`` carries the session's *cumulative* usage: after ``codex exec resume`` it includes
    the earlier runs of the session. ``baseline`` is the total already counted for the session (saved by
    the adapter after each run); each usage event is the growth over the last total seen.
    """

    def __init__(self, baseline: Usage | None = None) -> None:
        super().__init__()
        self.started: set[str] = set()
        self.noted: list[str] = []
        self.total = baseline or Usage()

    def on_object(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        kind = obj.get("type")
        if kind == "thread.started" and obj.get("thread_id"):
            self.state.session_id = str(obj["thread_id"])
            return [ev_session(self.state.session_id)]
        if kind in ("item.started", "item.updated", "item.completed"):
            item = as_dict(obj.get("item"))
            return self._item(item, done=kind == "item.completed")
        if kind == "turn.completed":
            total = codex_usage(obj.get("usage") or {})
            usage = Usage(
                input_tokens=max(0, total.input_tokens - self.total.input_tokens),
                cached_input_tokens=max(0, total.cached_input_tokens - self.total.cached_input_tokens),
                output_tokens=max(0, total.output_tokens - self.total.output_tokens),
                reasoning_tokens=max(0, total.reasoning_tokens - self.total.reasoning_tokens),
            )
            self.total = total
            self.state.usage.add(usage)
            if self.state.finished_ok is None:
                self.state.finished_ok = True
            return [ev_usage(usage)]
        if kind == "turn.failed":
            err = as_dict(obj.get("error"))
            msg = str(err.get("message") or "turn failed")
            self.state.finished_ok = False
            return self._note(msg)
        if kind == "error":
            msg = str(obj.get("message") or "error")
            if _RECONNECT_RE.match(msg):
                inner = msg[msg.find("(") + 1 : msg.rfind(")")] if "(" in msg else msg
                return [ev_error(msg, codex_error_class(inner), retryable=True, retry_after_s=parse_retry_after(msg))]
            # Not fatal by itself: Codex reports warnings this way too ("Model metadata for `x` not found.
            # Defaulting to fallback metadata"). turn.failed or the exit code decides; this explains it.
            return self._warn(msg)
        return []

    def _warn(self, msg: str) -> list[dict[str, Any]]:
        if msg in self.state.warnings:
            return []
        return [note_warning(self.state, msg)]

    def _note(self, msg: str) -> list[dict[str, Any]]:
        if msg in self.noted:  # an `error` event followed by turn.failed with the same message
            return []
        self.noted.append(msg)
        return [note_error(self.state, msg, codex_error_class(msg))]

    def _item(self, item: dict[str, Any], done: bool) -> list[dict[str, Any]]:
        itype = str(item.get("type") or "")
        iid = str(item.get("id") or "")
        out: list[dict[str, Any]] = []
        if itype == "agent_message":
            if done:
                text = str(item.get("text") or "")
                if text.strip():
                    self.state.final_text = text
                    out.append(ev_message(text))
            return out
        if itype == "error":  # Codex's warnings are items of type "error"
            if done:
                out.extend(self._warn(str(item.get("message") or "error")))
            return out
        if itype not in TOOL_ITEMS:
            return out  # reasoning, todo_list: nothing to record
        tool = TOOL_ITEMS[itype]
        if itype == "mcp_tool_call":
            tool = f"{item.get('server') or 'mcp'}/{item.get('tool') or '?'}"
        if iid not in self.started:
            self.started.add(iid)
            self.state.steps += 1
            out.append(ev_tool_call(tool, _tool_input(itype, item), iid or None))
        if done:
            status = str(item.get("status") or "")
            ok = status == "completed"
            if itype == "command_execution":
                ok = ok and item.get("exit_code") in (0, None)
                output: Any = item.get("aggregated_output")
            elif itype == "file_change":
                output = item.get("changes")
            elif itype == "mcp_tool_call":
                output = item.get("result") if ok else item.get("error")
            else:
                output = item.get("query")
            out.append(ev_tool_result(tool, ok, output, iid or None, denied=status == "declined"))
        return out


def _tool_input(itype: str, item: dict[str, Any]) -> Any:
    if itype == "command_execution":
        return {"command": item.get("command")}
    if itype == "file_change":
        return {"changes": item.get("changes")}
    if itype == "mcp_tool_call":
        return item.get("arguments")
    return {"query": item.get("query")}


_REJECTED_RE = re.compile(r"Rejected\(\\?\"`(?P<cmd>.*?)` rejected: (?P<why>.*?)\\?\"\)")
_SANDBOX_RE = re.compile(r"error=(?P<what>patch rejected|exec_command failed)?:? ?(?P<why>[^\n]*blocked by [^\n]*sandbox[^\n]*)")


def stderr_denials(stderr: str) -> list[dict[str, Any]]:
    """Refusals Codex logs on stderr only: execpolicy rejections and sandbox blocks."""
    events = []
    for line in stderr.splitlines():
        if "codex_core::tools" not in line and "rejected" not in line:
            continue
        m = _REJECTED_RE.search(line)
        if m:
            cmd = m.group("cmd").replace('\\"', '"')
            events.append(ev_tool_result("shell", False, f"{cmd}: rejected: {m.group('why')}", None, denied=True))
            continue
        m = _SANDBOX_RE.search(line)
        if m:
            tool = "apply_patch" if (m.group("what") or "").startswith("patch") else "shell"
            events.append(ev_tool_result(tool, False, m.group("why").strip(), None, denied=True))
    return events


# ---------------------------------------------------------------------------------------------
# the adapter


USAGE_FILE = "bosun-usage.json"  # in CODEX_HOME: the cumulative usage bosun has counted per thread


class CodexWorker(CliWorker):
    name = "codex"
    spec = SPEC

    build_argv = staticmethod(build_argv)
    build_env = staticmethod(build_env)

    def make_parser(self, ctx: WorkerContext) -> CodexParser:
        return CodexParser(load_usage_total(usage_file(ctx), ctx.resume_session))

    def after_run(self, ctx: WorkerContext, parser: JsonLinesParser, result: WorkerResult) -> WorkerResult:
        assert isinstance(parser, CodexParser)
        save_usage_total(usage_file(ctx), parser.state.session_id, parser.total)
        for ev in stderr_denials(result.stderr_tail):
            ctx.emit(ev)
        return result

    def unenforced(self, ctx: WorkerContext) -> list[str]:
        return unenforced(ctx)

    def problems(self, profile: Profile) -> list[str]:
        if profile.api not in (None, "responses"):
            return [f"Codex speaks the OpenAI Responses API only (profile api = {profile.api!r}); "
                    "use api = \"responses\" or leave it unset"]
        return []


def usage_file(ctx: WorkerContext) -> Path:
    return ctx.home / ".codex" / USAGE_FILE
