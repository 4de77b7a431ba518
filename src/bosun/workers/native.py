"""The ``native`` adapter: bosun's own small agent loop against any OpenAI-compatible chat endpoint.

DeepSeek, OpenRouter, Ollama, vLLM and llama.cpp all speak Chat Completions. The loop streams each
response, runs the tool calls itself and feeds the results back, until the model answers without a
tool call, or a cap (steps, tokens, wall time) is reached. Tools: list_dir, read_file, grep,
write_file, edit_file (exact old/new replacement). There is no shell. Every path is resolved
(symlinks included) and must stay inside the worktree. Read-only modes get only the read tools.

The conversation is saved in the run directory after every step, so ``bosun work --resume`` can
continue it (the session id names that file).

Each response is read by a helper thread while the worker's own thread watches for a cancellation
and the wall deadline; either one shuts the connection's socket down, which ends a read blocked on a
stalled stream at once (an idle read timeout alone would take minutes).
"""

from __future__ import annotations

import json
import queue
import re
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bosun.core.config import Profile
from bosun.core.fileio import read_json, write_json_atomic
from bosun.workers.base import (
    ErrorClass,
    Usage,
    WorkerContext,
    WorkerInfo,
    WorkerResult,
    ev_error,
    ev_message,
    ev_session,
    ev_tool_call,
    ev_tool_result,
    ev_usage,
)
from bosun.workers.classify import classify_http, classify_text, parse_retry_after

DEFAULT_MAX_STEPS = 30
MAX_READ_BYTES = 200_000
MAX_GREP_HITS = 200
SYSTEM_PROMPT = """You are a careful software engineer working in a git repository at {root}.
Use the tools to inspect and change files. Paths are relative to the repository root.
Make the smallest change that fulfils the task. When you are done, reply with a short summary and no tool call.
{mode_rule}"""


def _schema(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


_S = {"type": "string"}
READ_TOOLS = [
    _schema("list_dir", "List a directory (relative path; '.' is the repository root).", {"path": _S}, ["path"]),
    _schema(
        "read_file",
        "Read a text file (relative path). Optional 1-based start line and line count.",
        {"path": _S, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
        ["path"],
    ),
    _schema("grep", "Search files for a regular expression (relative directory).", {"pattern": _S, "path": _S}, ["pattern"]),
]
WRITE_TOOLS = [
    _schema("write_file", "Create or overwrite a file (relative path) with the given content.", {"path": _S, "content": _S}, ["path", "content"]),
    _schema(
        "edit_file",
        "Replace exactly one occurrence of `old` with `new` in a file (relative path).",
        {"path": _S, "old": _S, "new": _S},
        ["path", "old", "new"],
    ),
]


class ToolError(Exception):
    """A tool call the model got wrong; reported back to the model, not fatal."""


class Sandbox:
    """File tools confined to the worktree."""

    def __init__(self, root: Path, read_only: bool) -> None:
        self.root = root.resolve()
        self.read_only = read_only

    def resolve(self, rel: str) -> Path:
        if not isinstance(rel, str) or not rel.strip():
            raise ToolError("path is required")
        candidate = Path(rel)
        target = (candidate if candidate.is_absolute() else self.root / candidate).resolve()
        if target != self.root and self.root not in target.parents:
            raise ToolError(f"path {rel!r} is outside the repository; access denied")
        if ".git" in target.relative_to(self.root).parts:
            raise ToolError("the .git directory is off limits")
        return target

    def rel(self, p: Path) -> str:
        return p.relative_to(self.root).as_posix() or "."

    def call(self, name: str, args: dict[str, Any]) -> str:
        if name in ("write_file", "edit_file") and self.read_only:
            raise ToolError(f"{name} is not allowed in this mode (read-only)")
        fn = getattr(self, "t_" + name, None)
        if fn is None:
            raise ToolError(f"unknown tool {name!r}")
        try:
            return str(fn(**args))
        except TypeError as exc:
            raise ToolError(f"bad arguments for {name}: {exc}") from None

    def t_list_dir(self, path: str = ".") -> str:
        d = self.resolve(path or ".")
        if not d.is_dir():
            raise ToolError(f"{path} is not a directory")
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in d.iterdir() if p.name != ".git")
        return "\n".join(names) or "(empty)"

    def t_read_file(self, path: str, offset: int | None = None, limit: int | None = None) -> str:
        f = self.resolve(path)
        if not f.is_file():
            raise ToolError(f"{path} does not exist or is not a file")
        data = f.read_bytes()[:MAX_READ_BYTES]
        if b"\0" in data[:4096]:
            raise ToolError(f"{path} is binary")
        lines = data.decode("utf-8", "replace").splitlines(keepends=True)
        start = max(1, int(offset or 1))
        end = start - 1 + int(limit) if limit else len(lines)
        return "".join(lines[start - 1 : end])

    def t_grep(self, pattern: str, path: str = ".") -> str:
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"invalid regular expression: {exc}") from None
        base = self.resolve(path or ".")
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file() and ".git" not in p.parts)
        hits: list[str] = []
        for f in files:
            try:
                text = f.read_text("utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            for no, line in enumerate(text.splitlines(), 1):
                if rx.search(line):
                    hits.append(f"{self.rel(f)}:{no}: {line[:300]}")
                    if len(hits) >= MAX_GREP_HITS:
                        return "\n".join(hits) + "\n(more matches cut)"
        return "\n".join(hits) or "no matches"

    def t_write_file(self, path: str, content: str) -> str:
        f = self.resolve(path)
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(content, encoding="utf-8")
        return f"wrote {self.rel(f)} ({len(content)} chars)"

    def t_edit_file(self, path: str, old: str, new: str) -> str:
        f = self.resolve(path)
        if not f.is_file():
            raise ToolError(f"{path} does not exist")
        text = f.read_text("utf-8")
        count = text.count(old) if old else 0
        if count != 1:
            raise ToolError(f"`old` must occur exactly once in {path}; it occurs {count} times")
        f.write_text(text.replace(old, new, 1), encoding="utf-8")
        return f"edited {self.rel(f)}"


class ApiError(Exception):
    def __init__(self, message: str, error_class: ErrorClass, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.retry_after = retry_after


def _classify_http(status: int, body: str, headers: Any) -> ApiError:
    retry_after = None
    if headers is not None and headers.get("retry-after"):
        try:
            retry_after = float(headers["retry-after"])
        except ValueError:
            retry_after = None
    text = f"HTTP {status}: {body[:500]}"
    cls = classify_http(status, body)  # the one classifier every adapter uses
    return ApiError(text, cls, retry_after or parse_retry_after(body))


def stream_chat(
    client: Any, url: str, headers: dict[str, str], body: dict[str, Any], should_stop: Any, on_response: Any = None
) -> dict[str, Any]:
    """POST one streamed chat completion; returns {content, tool_calls, usage, finish_reason}."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    finish = None
    with client.stream("POST", url, headers=headers, json=body) as res:
        if on_response is not None:
            on_response(res)
        if res.status_code >= 400:
            res.read()
            raise _classify_http(res.status_code, res.text, res.headers)
        for line in res.iter_lines():
            if should_stop and should_stop():
                raise ApiError("cancelled", ErrorClass.permanent)
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            try:
                chunk = json.loads(payload)
            except json.JSONDecodeError:
                raise ApiError(f"malformed stream frame: {payload[:200]}", ErrorClass.transient) from None
            if chunk.get("error"):
                err = chunk["error"]
                msg = err.get("message", str(err)) if isinstance(err, dict) else str(err)
                raise ApiError(msg, classify_text(msg) or ErrorClass.permanent)
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    content.append(delta["content"])
                for tc in delta.get("tool_calls") or []:
                    slot = calls.setdefault(tc.get("index", 0), {"id": None, "name": "", "arguments": ""})
                    if tc.get("id"):
                        slot["id"] = tc["id"]
                    fn = tc.get("function") or {}
                    if fn.get("name"):
                        slot["name"] += fn["name"]
                    if fn.get("arguments"):
                        slot["arguments"] += fn["arguments"]
                finish = choice.get("finish_reason") or finish
    return {"content": "".join(content), "tool_calls": [calls[i] for i in sorted(calls)], "usage": usage, "finish": finish}


STOP_POLL_S = 0.1  # how often the worker's thread looks for a cancellation while a response streams
ABORT_JOIN_S = 1.0  # how long an aborted read may take to notice its socket is gone


class StreamAborted(Exception):
    """The stream was cut by bosun: ``reason`` is "cancelled" or "timeout"."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _socket_of(response: Any) -> socket.socket | None:
    stream = (getattr(response, "extensions", None) or {}).get("network_stream")
    try:
        sock = stream.get_extra_info("socket") if stream is not None else None
    except Exception:  # noqa: BLE001 - a transport without a socket cannot be cut, only timed out
        return None
    return sock if isinstance(sock, socket.socket) else None


def stream_interruptible(
    client: Any, url: str, headers: dict[str, str], body: dict[str, Any], should_stop: Any, deadline: float
) -> dict[str, Any]:
    """:func:`stream_chat`, read in a helper thread so that this thread can stop it.

    This thread polls ``should_stop`` (it may use the caller's store connection) and the wall
    ``deadline``; on either it shuts the response's socket down, which wakes the blocked read, and
    raises :class:`StreamAborted` without waiting for the server.
    """
    box: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=1)
    sockets: list[socket.socket] = []

    def on_response(res: Any) -> None:
        sock = _socket_of(res)
        if sock is not None:
            sockets.append(sock)

    def read() -> None:
        try:
            box.put(("ok", stream_chat(client, url, headers, body, None, on_response)))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread as is
            box.put(("error", exc))

    reader = threading.Thread(target=read, name="bosun-native-stream", daemon=True)
    reader.start()
    while True:
        try:
            kind, value = box.get(timeout=STOP_POLL_S)
        except queue.Empty:
            reason = "cancelled" if should_stop and should_stop() else "timeout" if time.monotonic() >= deadline else None
            if reason is None:
                continue
            for sock in sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed: the read is over anyway
            reader.join(ABORT_JOIN_S)
            raise StreamAborted(reason) from None
        if kind == "error":
            raise value
        return value  # type: ignore[no-any-return]


def _usage_from(u: dict[str, Any]) -> Usage:
    details = u.get("prompt_tokens_details") or {}
    out_details = u.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=int(u.get("prompt_tokens") or 0),
        cached_input_tokens=int(details.get("cached_tokens") or u.get("prompt_cache_hit_tokens") or 0),
        output_tokens=int(u.get("completion_tokens") or 0),
        reasoning_tokens=int(out_details.get("reasoning_tokens") or 0),
    )


class NativeWorker:
    """Not a ``CliWorker``: no external CLI; bosun itself speaks to the model endpoint (the agent loop here)."""

    name = "native"

    def describe(self, profile: Profile) -> WorkerInfo:
        info = WorkerInfo(
            enforces=["paths confined to the worktree (symlinks resolved)", "no shell", "read-only modes",
                      "step, token and wall-time caps", "env allowlist"],
        )
        if not profile.base_url:
            info.problems.append("native profiles need base_url (an OpenAI-compatible endpoint, ending in /v1)")
        if not profile.model:
            info.problems.append("native profiles need model")
        return info

    def run(self, ctx: WorkerContext) -> WorkerResult:
        import httpx

        prof = ctx.profile
        if not prof.base_url or not prof.model:
            msg = "native profile needs base_url and model"
            ctx.emit(ev_error(msg, ErrorClass.permanent))
            return WorkerResult(status="failed", error_class=ErrorClass.permanent, error_message=msg)
        sandbox = Sandbox(ctx.worktree, ctx.read_only)
        session_id, messages = self._start_session(ctx)
        ctx.emit(ev_session(session_id))
        tools = READ_TOOLS + ([] if ctx.read_only else WRITE_TOOLS)
        headers = {"Content-Type": "application/json"}
        key = ctx.env.get(prof.api_key_env) if prof.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = prof.base_url.rstrip("/") + "/chat/completions"
        deadline = time.monotonic() + ctx.timeout_s
        max_steps = ctx.max_steps or prof.max_steps or DEFAULT_MAX_STEPS
        result = WorkerResult(status="ok", session_id=session_id)
        read_timeout = ctx.idle_timeout_s or min(ctx.timeout_s, 300.0)
        with httpx.Client(timeout=httpx.Timeout(10.0, read=read_timeout), trust_env=True) as client:
            for step in range(1, max_steps + 1):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return self._fail(ctx, result, ErrorClass.timeout, f"wall timeout ({ctx.timeout_s:g}s) reached", "timeout")
                body = {
                    "model": prof.model,
                    "messages": messages,
                    "tools": tools,
                    "stream": True,
                    "stream_options": {"include_usage": True},
                }
                try:
                    client.timeout = httpx.Timeout(10.0, read=read_timeout)  # the wall deadline is cut by stream_interruptible
                    reply = stream_interruptible(client, url, headers, body, ctx.should_stop, deadline)
                except StreamAborted as exc:
                    if exc.reason == "cancelled":
                        result.status = "cancelled"
                        return result
                    return self._fail(ctx, result, ErrorClass.timeout, f"wall timeout ({ctx.timeout_s:g}s) reached", "timeout")
                except ApiError as exc:
                    if str(exc) == "cancelled":
                        result.status = "cancelled"
                        return result
                    result.retry_after_s = exc.retry_after
                    return self._fail(ctx, result, exc.error_class, str(exc))
                except httpx.TimeoutException:
                    status = "timeout"
                    msg = f"the model stream stalled (no data for {client.timeout.read:g}s)"
                    return self._fail(ctx, result, ErrorClass.timeout, msg, status)
                except httpx.HTTPError as exc:
                    from bosun.workers.endpoint import reason

                    return self._fail(ctx, result, ErrorClass.transient, f"cannot reach {prof.base_url}: {reason(exc)}")
                step_usage = _usage_from(reply["usage"])
                result.usage.add(step_usage)
                result.steps = step
                ctx.emit(ev_usage(step_usage))
                assistant: dict[str, Any] = {"role": "assistant", "content": reply["content"] or None}
                if reply["tool_calls"]:
                    assistant["tool_calls"] = [
                        {"id": c["id"] or f"call_{step}_{i}", "type": "function",
                         "function": {"name": c["name"], "arguments": c["arguments"] or "{}"}}
                        for i, c in enumerate(reply["tool_calls"])
                    ]
                messages.append(assistant)
                if reply["content"]:
                    ctx.emit(ev_message(reply["content"]))
                    result.final_text = reply["content"]
                if not reply["tool_calls"]:
                    self._save_session(ctx, session_id, messages)
                    return result
                for call in assistant["tool_calls"]:
                    messages.append(self._run_tool(ctx, sandbox, call))
                self._save_session(ctx, session_id, messages)
                if prof.max_tokens and result.usage.total_tokens > prof.max_tokens:
                    return self._fail(ctx, result, ErrorClass.permanent, f"token cap ({prof.max_tokens}) reached")
        return self._fail(ctx, result, ErrorClass.permanent, f"step cap ({max_steps}) reached without a final answer")

    def _run_tool(self, ctx: WorkerContext, sandbox: Sandbox, call: dict[str, Any]) -> dict[str, Any]:
        name = call["function"]["name"]
        try:
            args = json.loads(call["function"]["arguments"] or "{}")
            if not isinstance(args, dict):
                raise ToolError("arguments must be a JSON object")
        except json.JSONDecodeError as exc:
            args, output, ok = {}, f"error: arguments are not valid JSON: {exc}", False
        else:
            ctx.emit(ev_tool_call(name, args, call["id"]))
            try:
                output, ok = sandbox.call(name, args), True
            except ToolError as exc:
                output, ok = f"error: {exc}", False
            except OSError as exc:
                output, ok = f"error: {exc.strerror or exc}", False
        denied = not ok and ("denied" in output or "not allowed" in output or "off limits" in output)
        ctx.emit(ev_tool_result(name, ok, output, call["id"], denied=denied))
        return {"role": "tool", "tool_call_id": call["id"], "content": output}

    def _fail(self, ctx: WorkerContext, result: WorkerResult, cls: ErrorClass, msg: str, status: str = "failed") -> WorkerResult:
        result.status = status
        result.error_class = cls
        result.error_message = msg
        ctx.emit(ev_error(msg, cls, retry_after_s=result.retry_after_s))
        return result

    def _session_path(self, ctx: WorkerContext, session_id: str) -> Path:
        return ctx.run_dir / "sessions" / f"{session_id}.json"

    def _start_session(self, ctx: WorkerContext) -> tuple[str, list[dict[str, Any]]]:
        if ctx.resume_session:
            doc = read_json(self._session_path(ctx, ctx.resume_session))
            if doc and isinstance(doc.get("messages"), list):
                messages = doc["messages"] + [{"role": "user", "content": ctx.prompt}]
                return ctx.resume_session, messages
        session_id = "native-" + uuid.uuid4().hex[:12]
        rule = "You must not change any file in this task." if ctx.read_only else ""
        system = SYSTEM_PROMPT.format(root=ctx.worktree, mode_rule=rule).strip()
        return session_id, [{"role": "system", "content": system}, {"role": "user", "content": ctx.prompt}]

    def _save_session(self, ctx: WorkerContext, session_id: str, messages: list[dict[str, Any]]) -> None:
        write_json_atomic(self._session_path(ctx, session_id), {"session_id": session_id, "messages": messages})
