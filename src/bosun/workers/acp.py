"""The ``acp`` adapter: any agent that speaks the Agent Client Protocol over stdio, as a worker.

A profile names the agent's command (``adapter = "acp"``, ``command = ["opencode", "acp"]``); bosun
starts it in the worktree, with the run's HOME, allowlisted environment and kernel sandbox like every
CLI, and is the ACP client (JSON-RPC 2.0, one JSON object per line each way):

1. ``initialize`` with protocol version 1 and no client capabilities: no ``fs`` reads or writes and
   no ``terminal``. The agent uses its own tools; whatever it asks that bosun does not implement is
   answered with JSON-RPC error -32601 (method not found).
2. One session per run: ``session/new`` in the worktree with no MCP servers, or, for
   ``bosun work --resume``, ``session/load`` of the run's session when the agent can load sessions
   (the history it replays is not recorded again).
3. ``session/prompt`` with the task prompt; ``session/update`` notifications become bosun's events
   (message chunks, tool calls and their updates); the prompt's answer (``stopReason``, ``usage``)
   ends the turn, and bosun closes the agent's stdin so it exits.
4. ``session/request_permission`` is answered by the run's mode (``acp_policy``): ``allow_once`` or a
   rejection, never "allow always".
5. ``bosun cancel`` (or a spending cap) sends ``session/cancel`` and gives the agent a few seconds to
   end its turn before its process group is killed. When the agent dies first, the failure quotes the
   end of its stderr (drained into a bounded buffer while it ran).

bosun configures agents it knows: for OpenCode (``opencode acp``) the same ``OPENCODE_CONFIG_CONTENT`` as
the ``opencode`` adapter (provider, model, permission rules for the mode). Any other agent brings its
own configuration (its HOME is the run's, so it starts unconfigured unless the profile passes what it
needs through ``env``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from bosun import __version__
from bosun.workers.acp_policy import answer, decide
from bosun.workers.base import (
    ErrorClass,
    WorkerContext,
    WorkerInfo,
    WorkerResult,
    ev_error,
    ev_message,
    ev_session,
    ev_tool_call,
    ev_tool_result,
    ev_usage,
    ev_warning,
    subset_usage,
)
from bosun.workers.classify import classify_http, classify_text, status_in_text
from bosun.workers.cli_base import cli_version, note_error, resolve_binary
from bosun.workers.cli_worker import CliSpec, CliWorker, either, missing_binary
from bosun.workers.jsonlines import JsonLinesParser
from bosun.workers.jsonrpc import METHOD_NOT_FOUND, Peer, RpcError
from bosun.workers.opencode_kit import DENIED_RE as OPENCODE_DENIED_RE
from bosun.workers.opencode_kit import build_opencode_config, opencode_env
from bosun.workers.opencode_logwatch import LogWatch, finish_after_watch, log_dir
from bosun.workers.policy import SHELL_TEXT_RULES
from bosun.workers.sdk_stream import DENIED_RE

if TYPE_CHECKING:
    from collections.abc import Callable

    from bosun.core.config import Profile

PROTOCOL_VERSION = 1
CANCEL_GRACE_S = 5.0  # after session/cancel, before the process group is killed
EXIT_GRACE_S = 5.0  # after the turn ended and stdin closed, before a lingering agent is killed
AUTH_REQUIRED = -32000  # ACP's "authentication required"
CONFIGURED_AGENTS = ("opencode",)  # agents bosun writes a configuration for
SERVES_ITSELF = ("opencode", "kilo")  # agents that run a loopback server of their own (``--port``)

SPEC = CliSpec(
    label="ACP agent",
    default_binary="",
    package="an Agent Client Protocol agent (e.g. opencode-ai: `opencode acp`)",
    min_version="",
    needs_key=False,
    enforces=[
        "permission requests answered by the run's mode, once at a time (never \"allow always\"): no writes in "
        "read-only modes, no paths outside the worktree, no web fetches, no denied shell commands; test mode: "
        "only the verify commands",
        "no client file-system or terminal capabilities (anything else the agent asks is refused: -32601)",
        "one session per run; bosun cancel sends session/cancel, then kills the process group",
        "OpenCode (opencode acp): bosun's own configuration, as for the opencode adapter",
        "git guard, env allowlist, timeouts (process group kill, stray processes reaped)",
    ],
    cannot_enforce=[
        "tools an agent runs without asking: bosun decides only the permission requests the agent sends "
        "(for OpenCode, its injected rules decide first); the kernel sandbox and bosun's gates still apply",
    ],
)


class AcpWorker(CliWorker):
    """A ``CliWorker`` whose program is the profile's ``command`` (any ACP agent), spoken to over JSON-RPC."""

    name = "acp"
    spec = SPEC

    def serves_on_loopback(self, profile: Profile) -> bool:
        """Whether its runs need a port of their own (``WorkerContext.own_port``)."""
        return agent_name(profile) in SERVES_ITSELF

    def build_argv(self, ctx: WorkerContext, binary: str) -> list[str]:
        argv = [binary, *ctx.profile.command[1:]]
        if ctx.own_port and agent_name(ctx.profile) in SERVES_ITSELF and "--port" not in argv:
            # `opencode acp` serves its session over HTTP on loopback and talks to that: the port the
            # sandbox lets it reach (a random one would be refused under network = "provider-only").
            argv += ["--port", str(ctx.own_port)]
        return [*argv, *ctx.profile.extra_args]

    def build_env(self, ctx: WorkerContext) -> dict[str, str]:
        if agent_name(ctx.profile) == "opencode":
            allowed = ctx.allowed
            config = build_opencode_config(ctx.profile, not allowed.edit, allow_commands=allowed.commands)
            return opencode_env(ctx.env, config)
        return dict(ctx.env)

    def make_parser(self, ctx: WorkerContext) -> AcpParser:
        return AcpParser(ctx)

    def stop_condition(self, ctx: WorkerContext, env: dict[str, str], parser: JsonLinesParser) -> Callable[[], bool]:
        assert isinstance(parser, AcpParser)
        if agent_name(ctx.profile) == "opencode":
            # OpenCode retries a refusing provider silently for over a minute: its log tells.
            parser.watch = LogWatch(log_dir(env))
            return either(parser.watch.check, parser.should_stop)
        return parser.should_stop

    def after_run(self, ctx: WorkerContext, parser: JsonLinesParser, result: WorkerResult) -> WorkerResult:
        assert isinstance(parser, AcpParser)
        result = settle(ctx, parser, result)
        return finish_after_watch(ctx, result, parser.watch, cli="OpenCode") if parser.watch else result

    def unenforced(self, ctx: WorkerContext) -> list[str]:
        if agent_name(ctx.profile) not in CONFIGURED_AGENTS:
            return ["the agent's own tool rules: bosun answers only the permission requests it sends"]
        return [SHELL_TEXT_RULES] if ctx.allowed.edit else []

    def run(self, ctx: WorkerContext) -> WorkerResult:
        if not ctx.profile.command:
            return missing_binary(ctx, SPEC)
        return super().run(ctx)

    def binary(self, profile: Profile) -> str | None:
        return resolve_binary(profile.command[0], profile.command[0]) if profile.command else None

    def describe(self, profile: Profile) -> WorkerInfo:
        info = WorkerInfo(enforces=list(SPEC.enforces), cannot_enforce=list(SPEC.cannot_enforce))
        if not profile.command:
            info.problems.append('set command = [...]: the agent\'s ACP command, e.g. ["opencode", "acp"]')
            return info
        info.binary = self.binary(profile)
        if not info.binary:
            info.problems.append(f"program not found: {profile.command[0]}")
        elif agent_name(profile) in CONFIGURED_AGENTS:
            info.version = cli_version(info.binary)
        return info


def agent_name(profile: Profile) -> str:
    return Path(profile.command[0]).name if profile.command else ""


# ---------------------------------------------------------------------------------------------
# the client


class AcpParser(JsonLinesParser):
    """The ACP client of one run: drives the conversation and maps what the agent says to events."""

    interactive = True

    def __init__(self, ctx: WorkerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.peer = Peer()
        self.out: list[dict[str, Any]] = []
        self.capabilities: dict[str, Any] = {}
        self.loading = False  # session/load replays the history: not this run's events
        self.done_at: float | None = None  # the turn ended (or the conversation failed)
        self.stop_reason: str | None = None
        self.cancel_at: float | None = None
        self.calls: dict[str, dict[str, Any]] = {}
        self.text: list[str] = []
        self.message_id: Any = None
        self.watch: LogWatch | None = None  # OpenCode's provider-error watch, when the agent is OpenCode

    # -- the conversation -------------------------------------------------------------------------
    def attach_stdin(self, pipe: IO[bytes]) -> None:
        self.peer.attach(pipe)
        self.peer.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
            "clientInfo": {"name": "bosun", "version": __version__},
        }, self._initialized)

    def _initialized(self, result: Any, err: RpcError | None) -> None:
        if err or not isinstance(result, dict):
            return self._fail("initialize", err)
        caps = result.get("agentCapabilities")
        self.capabilities = caps if isinstance(caps, dict) else {}
        where = {"cwd": str(self.ctx.worktree), "mcpServers": []}
        resume = self.ctx.resume_session
        if resume and self.capabilities.get("loadSession"):
            self.loading = True
            self.peer.request("session/load", {"sessionId": resume, **where}, self._loaded)
            return None
        if resume:
            self.out.append(ev_message(f"the agent cannot load session {resume}; starting a new one", role="system"))
        self.peer.request("session/new", where, self._started)
        return None

    def _loaded(self, result: Any, err: RpcError | None) -> None:
        self.loading = False
        if err:
            return self._fail("session/load", err)
        self._session(str(self.ctx.resume_session))
        return None

    def _started(self, result: Any, err: RpcError | None) -> None:
        sid = result.get("sessionId") if isinstance(result, dict) else None
        if err or not sid:
            return self._fail("session/new", err)
        self._session(str(sid))
        return None

    def _session(self, sid: str) -> None:
        self.state.session_id = sid
        self.out.append(ev_session(sid))
        prompt = [{"type": "text", "text": self.ctx.prompt}]
        self.peer.request("session/prompt", {"sessionId": sid, "prompt": prompt}, self._answered)

    def _answered(self, result: Any, err: RpcError | None) -> None:
        self._flush()
        if err or not isinstance(result, dict):
            return self._fail("session/prompt", err)
        usage = result.get("usage")
        if isinstance(usage, dict):
            u = subset_usage(usage.get("inputTokens"), usage.get("cachedReadTokens"), usage.get("outputTokens"),
                             usage.get("thoughtTokens"))
            self.state.usage.add(u)
            self.out.append(ev_usage(u))
        self.stop_reason = str(result.get("stopReason") or "end_turn")
        if self.stop_reason == "end_turn":
            self.state.finished_ok = True
        elif self.stop_reason != "cancelled":
            self.state.finished_ok = False
            self.out.append(note_error(self.state, f"the agent stopped its turn: {self.stop_reason}",
                                       ErrorClass.permanent))
        self._end()
        return None

    def _fail(self, method: str, err: RpcError | None) -> None:
        text = f"{method} failed: {err.text()}" if err else f"{method}: the agent's answer has no result"
        cls = ErrorClass.auth if err and err.code == AUTH_REQUIRED else classify_http(status_in_text(text), text)
        self.state.finished_ok = False
        self.out.append(note_error(self.state, text, cls))
        self._end()

    def _end(self) -> None:
        self.done_at = time.monotonic()
        self.peer.close()

    def should_stop(self) -> bool:
        """Polled by the supervisor: a lingering agent, or a cancel (after ``session/cancel`` and a grace)."""
        now = time.monotonic()
        if self.done_at is not None and now - self.done_at > EXIT_GRACE_S:
            return True
        ctx_stop = self.ctx.should_stop
        if self.cancel_at is None and ctx_stop is not None and ctx_stop():
            self.cancel_at = now
            if self.state.session_id and self.done_at is None:
                self.peer.notify("session/cancel", {"sessionId": self.state.session_id})
        if self.cancel_at is not None:
            return self.done_at is not None or now - self.cancel_at > CANCEL_GRACE_S
        return False

    # -- what the agent says ------------------------------------------------------------------------
    def on_object(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        self.peer.dispatch(obj, self._request, self._notification)
        out, self.out = self.out, []
        return out

    def _request(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        if method != "session/request_permission":
            self.peer.reply_error(rid, METHOD_NOT_FOUND, f"bosun does not offer {method}")
            self.out.append(ev_warning(f"the agent asked for {method}, which bosun does not offer (-32601)"))
            return
        call = params.get("toolCall")
        call = call if isinstance(call, dict) else {}
        decision = decide(call, self.ctx.allowed, self.ctx.worktree)
        options = params.get("options")
        self.peer.reply(rid, answer(options if isinstance(options, list) else [], decision))
        if not decision.allow:
            entry = self._track(call)
            self._emit_call(entry)
            entry["denied"] = True
            self.out.append(ev_tool_result(entry["tool"], False, decision.reason, entry["id"], denied=True))

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        update = params.get("update")
        if method != "session/update" or self.loading or not isinstance(update, dict):
            return
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            content = update.get("content")
            if update.get("messageId") != self.message_id:
                self._flush()
                self.message_id = update.get("messageId")
            if isinstance(content, dict) and content.get("type") == "text":
                self.text.append(str(content.get("text") or ""))
        elif kind in ("tool_call", "tool_call_update"):
            self._flush()
            self._tool(update)

    def _track(self, update: dict[str, Any]) -> dict[str, Any]:
        cid = str(update.get("toolCallId") or f"call-{len(self.calls)}")
        entry = self.calls.get(cid)
        if entry is None:
            entry = self.calls[cid] = {"id": cid, "tool": None, "input": None, "emitted": False, "denied": False}
            self.state.steps += 1
        kind = update.get("kind")
        if entry["tool"] is None or (kind and kind != "other" and entry["tool"] != kind):
            entry["tool"] = str(kind) if kind and kind != "other" else str(update.get("title") or "tool")
        if update.get("rawInput"):
            entry["input"] = update["rawInput"]
        return entry

    def _emit_call(self, entry: dict[str, Any]) -> None:
        if not entry["emitted"]:
            entry["emitted"] = True
            self.out.append(ev_tool_call(entry["tool"], entry["input"], entry["id"]))

    def _tool(self, update: dict[str, Any]) -> None:
        entry = self._track(update)
        status = update.get("status")
        if status not in ("in_progress", "completed", "failed"):
            return
        self._emit_call(entry)
        if status == "in_progress" or entry["denied"]:
            return
        output = tool_output(update)
        denied = status == "failed" and bool(DENIED_RE.search(output[:600]) or OPENCODE_DENIED_RE.search(output[:600]))
        self.out.append(ev_tool_result(entry["tool"], status == "completed", output, entry["id"], denied=denied))

    def _flush(self) -> None:
        text = "".join(self.text)
        self.text = []
        if text.strip():
            self.state.steps += 1
            self.state.final_text = text
            self.out.append(ev_message(text))

    def finish(self) -> list[dict[str, Any]]:
        self._flush()
        out, self.out = self.out, []
        return out


def tool_output(update: dict[str, Any]) -> str:
    parts: list[str] = []
    for item in update.get("content") or []:
        if not isinstance(item, dict):
            continue
        inner = item.get("content")
        if item.get("type") == "content" and isinstance(inner, dict) and inner.get("type") == "text":
            parts.append(str(inner.get("text") or ""))
        elif item.get("type") == "diff":
            parts.append(f"diff {item.get('path')}")
    raw = update.get("rawOutput")
    if not parts and isinstance(raw, dict) and raw.get("output"):
        parts.append(str(raw["output"]))
    return "\n".join(parts)


def settle(ctx: WorkerContext, parser: AcpParser, result: WorkerResult) -> WorkerResult:
    """The run's verdict from the conversation: a cancel, a lingering agent, or an agent that died."""
    st = parser.state
    if parser.cancel_at is not None or parser.stop_reason == "cancelled":
        if result.status != "timeout":
            result.status, result.error_class, result.error_message = "cancelled", None, "cancelled"
        return result
    if result.status == "cancelled" and parser.done_at is not None:
        # Killed for lingering after its turn: the turn's own verdict stands.
        result.status = "ok" if st.finished_ok else "failed"
        if not result.ok:
            result.error_class = st.error_class or ErrorClass.permanent
            result.error_message = (st.errors or ["the agent's turn failed"])[0][:1000]
        return result
    ran = result.exit_code is not None  # not refused before it started (missing program, sandbox, key on argv)
    over_cap = bool(ctx.max_steps and st.steps > ctx.max_steps)
    if ran and not over_cap and parser.done_at is None and result.status in ("ok", "failed") and not st.errors:
        quote = " ".join(result.stderr_tail.strip().split())[-700:]
        waiting = ", ".join(parser.peer.waiting_for()) or "nothing"
        msg = (f"the ACP agent exited (code {result.exit_code}) before its turn ended (waiting for {waiting}); "
               + (f"its stderr ends: {quote}" if quote else "it wrote nothing on stderr"))
        was_ok = result.ok
        result.status = "failed"
        result.error_class = classify_text(quote) or ErrorClass.permanent
        result.error_message = msg[:1000]
        if was_ok:
            ctx.emit(ev_error(result.error_message, result.error_class))
    return result
