"""What every wire-API module provides, and shared SSE helpers.

A wire API turns a request body into a ``ParsedRequest`` and a ``Reply`` into either one JSON body or
a list of SSE frames. Errors before a stream starts are plain JSON with an HTTP status, as the real
services do.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from bosun.replay.player import ParsedRequest, Reply
from bosun.replay.script import Fault

PIECE = 24  # chars per streamed delta: small enough that clients must reassemble


class WireAPI:
    name = "base"
    sse_terminator = "\n\n"

    def parse(self, body: dict[str, Any], *, model: str = "", stream: bool | None = None) -> ParsedRequest:
        raise NotImplementedError

    def render_json(self, reply: Reply, req: ParsedRequest) -> Any:
        raise NotImplementedError

    def render_events(self, reply: Reply, req: ParsedRequest) -> list[str]:
        """Every SSE frame of a streamed reply, in order."""
        raise NotImplementedError

    def error_body(self, fault: Fault, model: str) -> tuple[int, dict[str, Any]]:
        raise NotImplementedError

    def broken_frame(self) -> str:
        """An SSE frame whose data is not valid JSON (fault ``malformed_sse``)."""
        return 'data: {"broken": "unterminated' + self.sse_terminator

    def frame(self, data: Any, event: str | None = None) -> str:
        head = f"event: {event}\n" if event else ""
        return f"{head}data: {json.dumps(data, separators=(',', ':'))}{self.sse_terminator}"


def pieces(text: str, size: int = PIECE) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def now() -> int:
    return int(time.time())


def text_of(content: Any) -> str:
    """Flatten message content (a string or a list of parts/blocks) into text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(p) for p in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output", "input_text"):
            if key in content:
                return text_of(content[key])
        return ""
    return str(content)


def rate_limit_message(model: str, fault: Fault) -> str:
    wait = fault.retry_after if fault.retry_after is not None else 1
    wait_text = f"{wait:g}"
    return fault.message or (
        f"Rate limit reached for {model or 'the model'} on requests per min (RPM): Limit 1, Used 1, "
        f"Requested 1. Please try again in {wait_text}s."
    )
