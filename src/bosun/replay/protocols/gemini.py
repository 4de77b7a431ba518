"""Gemini: ``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent`` (Gemini CLI).

Every streamed record has the non-streamed shape (``candidates[].content.parts[]`` with ``text`` or
``functionCall {id, name, args}``); with ``?alt=sse`` each record is a ``data:`` frame, otherwise the
records form one JSON array. Function calls arrive whole (Gemini does not stream their arguments); the
last record carries ``finishReason`` and ``usageMetadata``. No ``[DONE]`` sentinel.
"""

from __future__ import annotations

from typing import Any

from bosun.replay.player import ParsedRequest, Reply, TokenUsage
from bosun.replay.protocols.base import WireAPI, pieces, rate_limit_message
from bosun.replay.script import Fault
from bosun.replay.toolmap import ToolSpec

GEMINI_ERRORS: dict[int, tuple[str, str]] = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: ("NOT_FOUND", "Requested entity was not found."),
    429: ("RESOURCE_EXHAUSTED", ""),
    500: (
        "INTERNAL",
        "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    ),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
}


def gemini_usage(u: TokenUsage) -> dict[str, Any]:
    return {
        "promptTokenCount": u.input,
        "candidatesTokenCount": u.output,
        "totalTokenCount": u.total,
        "cachedContentTokenCount": u.cached,
    }


class Gemini(WireAPI):
    name = "gemini"
    sse_terminator = "\r\n\r\n"  # what Google's servers send; every SSE parser accepts it

    def parse(self, body: dict[str, Any], *, model: str = "", stream: bool | None = None) -> ParsedRequest:
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        users = [c for c in contents if c.get("role", "user") == "user" and _texts(c)]
        config = body.get("generationConfig") or body.get("generation_config") or {}
        return ParsedRequest(
            api=self.name,
            model=model,
            stream=bool(stream),
            tools=_tools(body.get("tools") or []),
            tool_results=_tool_results(contents),
            max_tokens=config.get("maxOutputTokens"),
            system=_texts(body.get("systemInstruction") or body.get("system_instruction") or {}),
            last_user=_texts(users[-1]) if users else "",
            json_schema=_json_schema(config),
        )

    def render_json(self, reply: Reply, req: ParsedRequest) -> dict[str, Any]:
        parts = _text_parts(reply.text) + _call_parts(reply)
        return self._record(reply, req.model, parts or [{"text": ""}], final=True)

    def render_records(self, reply: Reply, req: ParsedRequest) -> list[dict[str, Any]]:
        records = [self._record(reply, req.model, [{"text": p}]) for p in pieces(reply.text)]
        last = records.pop() if records and not reply.calls else None
        parts = (last["candidates"][0]["content"]["parts"] if last else []) + _call_parts(reply)
        return [*records, self._record(reply, req.model, parts or [{"text": ""}], final=True)]

    def render_events(self, reply: Reply, req: ParsedRequest) -> list[str]:
        return [self.frame(r) for r in self.render_records(reply, req)]

    def error_body(self, fault: Fault, model: str) -> tuple[int, dict[str, Any]]:
        if fault.kind == "model_not_found":
            message = fault.message or (
                f"models/{model} is not found for API version v1beta, or is not supported for generateContent. "
                "Call ListModels to see the list of available models and their supported methods."
            )
            return 404, {"error": {"code": 404, "message": message, "status": "NOT_FOUND"}}
        status = fault.status
        gstatus, message = GEMINI_ERRORS.get(status, ("UNKNOWN", f"replay fault {status}"))
        error: dict[str, Any] = {"code": status, "message": fault.message or message, "status": gstatus}
        if status == 429:
            error["message"] = rate_limit_message(model, fault)
            # Gemini CLI reads the wait from RetryInfo.
            delay = f"{fault.retry_after if fault.retry_after is not None else 1:g}s"
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]
        return status, {"error": error}

    def _record(
        self, reply: Reply, model: str, parts: list[dict[str, Any]], final: bool = False
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        record: dict[str, Any] = {
            "candidates": [candidate],
            "modelVersion": model,
            "responseId": f"replay-{reply.seq}",
        }
        if final:
            candidate["finishReason"] = "STOP"  # Gemini says STOP for function calls too
            record["usageMetadata"] = gemini_usage(reply.usage)
        return record


def _text_parts(text: str) -> list[dict[str, Any]]:
    return [{"text": text}] if text else []


def _call_parts(reply: Reply) -> list[dict[str, Any]]:
    parts = []
    for call in reply.calls:
        args = call.arguments if call.kind == "function" else {"input": call.input}
        parts.append({"functionCall": {"id": call.call_id, "name": call.name, "args": args or {}}})
    return parts


def _texts(content: dict[str, Any]) -> str:
    parts = content.get("parts") if isinstance(content, dict) else None
    return "\n".join(p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str))


def _tools(raw: list[Any]) -> list[ToolSpec]:
    specs = []
    for group in raw:
        decls = (
            (group.get("functionDeclarations") or group.get("function_declarations") or [])
            if isinstance(group, dict)
            else []
        )
        for d in decls:
            # Gemini CLI sends JSON Schema in parametersJsonSchema; older clients use parameters.
            schema = d.get("parametersJsonSchema") or d.get("parameters") or {}
            specs.append(ToolSpec(d.get("name", ""), "function", schema, d.get("description", "")))
    return specs


def _tool_results(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for c in contents:
        for part in c.get("parts") or []:
            fr = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(fr, dict):
                out.append({"id": fr.get("id"), "name": fr.get("name"), "output": fr.get("response")})
    return out


def _json_schema(config: dict[str, Any]) -> dict[str, Any] | None:
    if config.get("responseMimeType") != "application/json":
        return None
    return config.get("responseJsonSchema") or config.get("responseSchema") or {}
