"""OpenAI Responses: ``POST /v1/responses`` (Codex).

Stream: ``event:``/``data:`` frames with ``type`` and ``sequence_number``: ``response.created``,
``response.in_progress``, then per output item ``response.output_item.added``, its deltas
(``response.output_text.delta`` inside a content part, ``response.function_call_arguments.delta``, or
``response.custom_tool_call_input.delta`` for freeform tools such as Codex's ``apply_patch``), their
``.done`` events, ``response.output_item.done``, and finally ``response.completed`` carrying the whole
response with ``usage``. There is no ``[DONE]`` sentinel. Codex builds its history from the
``output_item.done`` items and requires ``response.completed``.
"""

from __future__ import annotations

from typing import Any

from bosun.replay.player import ParsedRequest, Reply, TokenUsage
from bosun.replay.protocols.base import WireAPI, now, pieces, text_of
from bosun.replay.protocols.openai_chat import openai_error_body
from bosun.replay.script import Fault
from bosun.replay.toolmap import ToolCall, ToolSpec

RESULT_TYPES = ("function_call_output", "custom_tool_call_output")


def responses_usage(u: TokenUsage) -> dict[str, Any]:
    return {
        "input_tokens": u.input,
        "input_tokens_details": {"cached_tokens": u.cached},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.total,
    }


class OpenAIResponses(WireAPI):
    name = "openai_responses"

    def parse(self, body: dict[str, Any], *, model: str = "", stream: bool | None = None) -> ParsedRequest:
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items or [])
        items = [i for i in items if isinstance(i, dict)]
        system = [text_of(i.get("content")) for i in items if i.get("role") in ("system", "developer")]
        users = [i for i in items if i.get("role") == "user"]
        fmt = (body.get("text") or {}).get("format") or {}
        return ParsedRequest(
            api=self.name,
            model=str(body.get("model") or model),
            stream=bool(body.get("stream")),
            tools=_tools(body.get("tools") or []),
            tool_results=[_result(i) for i in items if i.get("type") in RESULT_TYPES],
            max_tokens=body.get("max_output_tokens"),
            system="\n".join([str(body.get("instructions") or ""), *system]),
            last_user=text_of(users[-1].get("content")) if users else "",
            json_schema=fmt.get("schema") if fmt.get("type") == "json_schema" else None,
            namespaces=tuple(str(t["name"]) for t in body.get("tools") or []
                             if isinstance(t, dict) and t.get("type") == "namespace" and t.get("name")),
        )

    def render_json(self, reply: Reply, req: ParsedRequest) -> dict[str, Any]:
        output = [_done_item(reply, k, item, req) for k, item in enumerate(_items(reply))]
        return _response(reply, req.model, "completed", output, responses_usage(reply.usage))

    def render_events(self, reply: Reply, req: ParsedRequest) -> list[str]:
        events = _Events(self)
        shell = _response(reply, req.model, "in_progress", [], None)
        events.add("response.created", response=shell)
        events.add("response.in_progress", response=shell)
        output = []
        for index, item in enumerate(_items(reply)):
            output.append(_stream_item(events, reply, index, item, req))
        done = _response(reply, req.model, "completed", output, responses_usage(reply.usage))
        events.add("response.completed", response=done)
        return events.frames

    def error_body(self, fault: Fault, model: str) -> tuple[int, dict[str, Any]]:
        return openai_error_body(fault, model)


class _Events:
    def __init__(self, api: WireAPI) -> None:
        self.api = api
        self.frames: list[str] = []
        self.seq = 0

    def add(self, etype: str, **fields: Any) -> None:
        data = {"type": etype, "sequence_number": self.seq, **fields}
        self.seq += 1
        self.frames.append(self.api.frame(data, event=etype))


def _items(reply: Reply) -> list[str | ToolCall]:
    """Output items in order: the text message (if any), then one item per tool call."""
    return ([reply.text] if reply.text else []) + list(reply.calls)


def _item_id(reply: Reply, index: int, item: str | ToolCall) -> str:
    prefix = "msg" if isinstance(item, str) else "ctc" if item.kind == "custom" else "fc"
    return f"{prefix}_replay_{reply.seq}_{index}"


def _done_item(reply: Reply, index: int, item: str | ToolCall, req: ParsedRequest | None = None) -> dict[str, Any]:
    iid = _item_id(reply, index, item)
    if isinstance(item, str):
        part = {"type": "output_text", "text": item, "annotations": []}
        return {"type": "message", "id": iid, "status": "completed", "role": "assistant", "content": [part]}
    if item.kind == "custom":
        return {
            "type": "custom_tool_call",
            "id": iid,
            "call_id": item.call_id,
            "name": item.name,
            "input": item.input,
        }
    namespace, name = _split(item.name, req)
    call = {
        "type": "function_call",
        "id": iid,
        "call_id": item.call_id,
        "name": name,
        "arguments": item.payload(),
        "status": "completed",
    }
    if namespace is not None:
        call["namespace"] = namespace
    return call


def _stream_item(events: _Events, reply: Reply, index: int, item: str | ToolCall, req: ParsedRequest) -> dict[str, Any]:
    done = _done_item(reply, index, item, req)
    iid = done["id"]
    if isinstance(item, str):
        events.add(
            "response.output_item.added",
            output_index=index,
            item={**done, "status": "in_progress", "content": []},
        )
        _stream_text(events, iid, index, item)
    elif item.kind == "custom":
        events.add("response.output_item.added", output_index=index, item={**done, "input": ""})
        for p in pieces(item.input or ""):
            events.add("response.custom_tool_call_input.delta", item_id=iid, output_index=index, delta=p)
        events.add("response.custom_tool_call_input.done", item_id=iid, output_index=index, input=item.input)
    else:
        events.add(
            "response.output_item.added",
            output_index=index,
            item={**done, "arguments": "", "status": "in_progress"},
        )
        for p in pieces(item.payload()):
            events.add("response.function_call_arguments.delta", item_id=iid, output_index=index, delta=p)
        events.add(
            "response.function_call_arguments.done", item_id=iid, output_index=index, arguments=item.payload()
        )
    events.add("response.output_item.done", output_index=index, item=done)
    return done


def _stream_text(events: _Events, iid: str, index: int, text: str) -> None:
    where = {"item_id": iid, "output_index": index, "content_index": 0}
    events.add(
        "response.content_part.added", **where, part={"type": "output_text", "text": "", "annotations": []}
    )
    for p in pieces(text):
        events.add("response.output_text.delta", **where, delta=p, logprobs=[])
    events.add("response.output_text.done", **where, text=text, logprobs=[])
    events.add(
        "response.content_part.done", **where, part={"type": "output_text", "text": text, "annotations": []}
    )


def _response(reply: Reply, model: str, status: str, output: list[Any], usage: Any) -> dict[str, Any]:
    return {
        "id": f"resp_replay_{reply.seq}",
        "object": "response",
        "created_at": now(),
        "status": status,
        "model": model,
        "output": output,
        "usage": usage,
        "error": None,
        "incomplete_details": None,
        "parallel_tool_calls": True,
    }


NAMESPACE_JOIN = "__"  # a namespaced tool is scripted as NAMESPACE__NAME (mcp__bosun + delegate)


def _tools(raw: list[Any], namespace: str = "") -> list[ToolSpec]:
    specs = []
    for tool in raw:
        if isinstance(tool, dict) and tool.get("type") == "namespace" and tool.get("name"):
            # Codex groups MCP tools per server ({"type": "namespace", "name": "mcp__bosun", "tools": [...]});
            # a call names the inner tool and its namespace.
            specs += _tools(tool.get("tools") or [], _joined(namespace, str(tool["name"])))
            continue
        if (
            not isinstance(tool, dict)
            or tool.get("type") not in ("function", "custom")
            or not tool.get("name")
        ):
            continue  # built-ins (web_search, local_shell...): nothing to map onto
        kind = "custom" if tool.get("type") == "custom" else "function"
        schema = tool.get("parameters") if kind == "function" else tool.get("format")
        specs.append(ToolSpec(_joined(namespace, tool["name"]), kind, schema or {}, tool.get("description", "")))
    return specs


def _joined(namespace: str, name: str) -> str:
    if not namespace:
        return name
    return namespace + name if namespace.endswith(NAMESPACE_JOIN) else namespace + NAMESPACE_JOIN + name


def _split(name: str, req: ParsedRequest | None) -> tuple[str | None, str]:
    """(namespace, inner name) of a scripted call to a namespaced tool; (None, name) otherwise."""
    for ns in (req.namespaces if req is not None else ()):
        prefix = _joined(ns, "")
        if name.startswith(prefix):
            return ns, name[len(prefix):]
    return None, name


def _result(item: dict[str, Any]) -> dict[str, Any]:
    return {"id": item.get("call_id"), "name": item.get("name"), "output": text_of(item.get("output"))}
