"""Anthropic Messages: ``POST /v1/messages`` (any query string, e.g. Claude Code's ``?beta=true``).

Stream: ``message_start`` (message with empty content and the input usage), ``ping``, per content
block ``content_block_start`` / ``content_block_delta`` (``text_delta`` or ``input_json_delta`` with
``partial_json``) / ``content_block_stop``, then ``message_delta`` (``stop_reason`` and the output
usage) and ``message_stop``. Anthropic's ``input_tokens`` excludes cache reads, which are reported
apart in ``cache_read_input_tokens``; the script's ``input`` is the total, so it is split here.
"""

from __future__ import annotations

import json
from typing import Any

from bosun.replay.player import ParsedRequest, Reply, TokenUsage
from bosun.replay.protocols.base import WireAPI, pieces, rate_limit_message, text_of
from bosun.replay.script import Fault
from bosun.replay.toolmap import ToolSpec

ANTHROPIC_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", ""),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def anthropic_usage(u: TokenUsage) -> dict[str, Any]:
    return {
        "input_tokens": u.input - u.cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": u.cached,
        "output_tokens": u.output,
    }


class AnthropicMessages(WireAPI):
    name = "anthropic"

    def parse(self, body: dict[str, Any], *, model: str = "", stream: bool | None = None) -> ParsedRequest:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [m for m in messages if m.get("role") == "user"]
        return ParsedRequest(
            api=self.name,
            model=str(body.get("model") or model),
            stream=bool(body.get("stream")),
            tools=_tools(body.get("tools") or []),
            tool_results=_tool_results(messages),
            max_tokens=body.get("max_tokens"),
            system=text_of(body.get("system")),
            last_user=text_of(users[-1].get("content")) if users else "",
        )

    def render_json(self, reply: Reply, req: ParsedRequest) -> dict[str, Any]:
        return {**_message(reply, req.model, _blocks(reply)), "stop_reason": _stop(reply)}

    def render_events(self, reply: Reply, req: ParsedRequest) -> list[str]:
        start = _message(reply, req.model, [])
        start["usage"] = {**anthropic_usage(reply.usage), "output_tokens": 0}
        frames = [self._event("message_start", message=start), self._event("ping")]
        for index, block in enumerate(_blocks(reply)):
            frames += self._block_frames(index, block)
        delta = {"stop_reason": _stop(reply), "stop_sequence": None}
        frames.append(self._event("message_delta", delta=delta, usage={"output_tokens": reply.usage.output}))
        frames.append(self._event("message_stop"))
        return frames

    def error_body(self, fault: Fault, model: str) -> tuple[int, dict[str, Any]]:
        if fault.kind == "model_not_found":
            status, etype, message = 404, "not_found_error", fault.message or f"model: {model}"
        else:
            status = fault.status
            etype, message = ANTHROPIC_ERRORS.get(status, ("api_error", f"replay fault {status}"))
            message = rate_limit_message(model, fault) if status == 429 else fault.message or message
        return status, {"type": "error", "error": {"type": etype, "message": message}}

    def broken_frame(self) -> str:
        return 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_de\n\n'

    def _event(self, etype: str, **fields: Any) -> str:
        return self.frame({"type": etype, **fields}, event=etype)

    def _block_frames(self, index: int, block: dict[str, Any]) -> list[str]:
        start: dict[str, Any]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
        else:
            start = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in pieces(json.dumps(block["input"]))
            ]
        frames = [self._event("content_block_start", index=index, content_block=start)]
        frames += [self._event("content_block_delta", index=index, delta=d) for d in deltas]
        frames.append(self._event("content_block_stop", index=index))
        return frames


def _message(reply: Reply, model: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"msg_replay_{reply.seq}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": anthropic_usage(reply.usage),
    }


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    for call in reply.calls:
        # Anthropic has no freeform tools: a custom call travels as {"input": text}.
        arguments = call.arguments if call.kind == "function" else {"input": call.input}
        blocks.append({"type": "tool_use", "id": call.call_id, "name": call.name, "input": arguments or {}})
    return blocks


def _stop(reply: Reply) -> str:
    return "tool_use" if reply.calls else "end_turn"


def _tools(raw: list[Any]) -> list[ToolSpec]:
    # Server tools (web_search_..., bash_2025...) have a `type` and no input_schema: not mappable.
    return [
        ToolSpec(t["name"], "function", t.get("input_schema") or {}, t.get("description", ""))
        for t in raw
        if isinstance(t, dict) and t.get("name") and "input_schema" in t
    ]


def _tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        content = m.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(
                    {
                        "id": block.get("tool_use_id"),
                        "output": text_of(block.get("content")),
                        "is_error": bool(block.get("is_error")),
                    }
                )
    return out
