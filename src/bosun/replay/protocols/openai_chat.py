"""OpenAI Chat Completions: ``POST /v1/chat/completions`` (OpenCode, Kilo, Pi, Qwen, bosun native).

Stream: ``chat.completion.chunk`` objects as ``data:`` lines, tool calls as indexed ``tool_calls``
deltas (id and name first, then argument pieces), a chunk with ``finish_reason``, then ``[DONE]``.
With ``stream_options.include_usage`` the usage comes in a last chunk with empty ``choices``, as the
real API sends it; without it the finish chunk carries the usage so it is always usable.
"""

from __future__ import annotations

from typing import Any

from bosun.replay.player import ParsedRequest, Reply, TokenUsage
from bosun.replay.protocols.base import WireAPI, now, pieces, rate_limit_message, text_of
from bosun.replay.script import Fault
from bosun.replay.toolmap import ToolCall, ToolSpec

OPENAI_ERRORS: dict[int, tuple[str, str | None, str]] = {
    401: (
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
    ),
    403: ("permission_error", None, "You are not allowed to access this resource."),
    429: ("requests", "rate_limit_exceeded", ""),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


def openai_error_body(fault: Fault, model: str) -> tuple[int, dict[str, Any]]:
    """The error shape shared by Chat Completions and Responses."""
    if fault.kind == "model_not_found":
        message = fault.message or f"The model `{model}` does not exist or you do not have access to it."
        return 404, _error(message, "invalid_request_error", "model_not_found")
    etype, code, message = OPENAI_ERRORS.get(
        fault.status, ("api_error", None, f"replay fault {fault.status}")
    )
    if fault.status == 429:
        message = rate_limit_message(model, fault)
    return fault.status, _error(fault.message or message, etype, code)


def _error(message: str, etype: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": etype, "param": None, "code": code}}


def openai_usage(u: TokenUsage) -> dict[str, Any]:
    return {
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.total,
        "prompt_tokens_details": {"cached_tokens": u.cached},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


class OpenAIChat(WireAPI):
    name = "openai_chat"

    def parse(self, body: dict[str, Any], *, model: str = "", stream: bool | None = None) -> ParsedRequest:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [m for m in messages if m.get("role") == "user"]
        fmt = body.get("response_format") or {}
        return ParsedRequest(
            api=self.name,
            model=str(body.get("model") or model),
            stream=bool(body.get("stream")),
            tools=_tools(body),
            tool_results=[_tool_result(m) for m in messages if m.get("role") == "tool"],
            max_tokens=body.get("max_completion_tokens") or body.get("max_tokens"),
            system="\n".join(
                text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
            ),
            last_user=text_of(users[-1].get("content")) if users else "",
            include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
            json_schema=(fmt.get("json_schema") or {}).get("schema")
            if fmt.get("type") == "json_schema"
            else None,
        )

    def render_json(self, reply: Reply, req: ParsedRequest) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.calls:
            message["tool_calls"] = [_call_json(c) for c in reply.calls]
        return {
            "id": f"chatcmpl-replay-{reply.seq}",
            "object": "chat.completion",
            "created": now(),
            "model": req.model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply), "logprobs": None}],
            "usage": openai_usage(reply.usage),
        }

    def render_events(self, reply: Reply, req: ParsedRequest) -> list[str]:
        include_usage = req.include_usage
        chunk = _Chunker(f"chatcmpl-replay-{reply.seq}", req.model)
        frames = [self.frame(chunk.make({"role": "assistant", "content": ""}))]
        frames += [self.frame(chunk.make({"content": p})) for p in pieces(reply.text)]
        for index, call in enumerate(reply.calls):
            frames += [self.frame(chunk.make(d)) for d in _call_deltas(index, call)]
        finish = chunk.make({}, _finish(reply))
        if not include_usage:
            finish["usage"] = openai_usage(reply.usage)
        frames.append(self.frame(finish))
        if include_usage:
            frames.append(self.frame({**chunk.make({}), "choices": [], "usage": openai_usage(reply.usage)}))
        frames.append("data: [DONE]\n\n")
        return frames

    def error_body(self, fault: Fault, model: str) -> tuple[int, dict[str, Any]]:
        return openai_error_body(fault, model)


class _Chunker:
    def __init__(self, cid: str, model: str) -> None:
        self.cid, self.model, self.created = cid, model, now()

    def make(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {
            "id": self.cid,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.calls else "stop"


def _call_json(call: ToolCall) -> dict[str, Any]:
    if call.kind == "custom":
        return {"id": call.call_id, "type": "custom", "custom": {"name": call.name, "input": call.input}}
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.payload()},
    }


def _call_deltas(index: int, call: ToolCall) -> list[dict[str, Any]]:
    if call.kind == "custom":
        return [{"tool_calls": [{"index": index, **_call_json(call)}]}]
    head = {
        "index": index,
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": ""},
    }
    rest = [{"index": index, "function": {"arguments": p}} for p in pieces(call.payload())]
    return [{"tool_calls": [d]} for d in [head, *rest]]


def _tools(body: dict[str, Any]) -> list[ToolSpec]:
    specs = []
    for tool in body.get("tools") or []:
        if tool.get("type") == "custom" and isinstance(tool.get("custom"), dict):
            c = tool["custom"]
            specs.append(
                ToolSpec(c.get("name", ""), "custom", c.get("format") or {}, c.get("description", ""))
            )
        elif isinstance(tool.get("function"), dict):
            f = tool["function"]
            specs.append(
                ToolSpec(f.get("name", ""), "function", f.get("parameters") or {}, f.get("description", ""))
            )
    for f in body.get("functions") or []:  # the legacy form
        specs.append(
            ToolSpec(f.get("name", ""), "function", f.get("parameters") or {}, f.get("description", ""))
        )
    return specs


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": message.get("tool_call_id"),
        "name": message.get("name"),
        "output": text_of(message.get("content")),
    }
