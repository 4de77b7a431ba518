"""What the replay server reads from a request and says about its models, apart from the server:
a request body decoded as the client compressed it, its headers, the strings in a JSON body (what a
script's ``expect`` matches), and the model listings of each wire API (OpenAI, Anthropic, Gemini)."""

from __future__ import annotations

import gzip
import zlib
from http.server import BaseHTTPRequestHandler
from typing import Any

LOGGED_HEADERS = (
    "content-type",
    "user-agent",
    "accept",
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
)


def decode_body(data: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return data
    if encoding == "gzip":
        return gzip.decompress(data)
    if encoding == "deflate":
        return zlib.decompress(data)
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


def request_headers(handler: BaseHTTPRequestHandler) -> dict[str, str]:
    out = {k: handler.headers[k] for k in LOGGED_HEADERS if k in handler.headers}
    # Which credential the client sent, never its value.
    for key in ("authorization", "x-api-key", "x-goog-api-key"):
        if key in handler.headers:
            out["auth"] = key
    return out


def strings_in(value: Any, limit: int = 200_000) -> list[str]:
    """Every string in a JSON value, in order (for finding the working directory in prompts)."""
    out: list[str] = []
    stack = [value]
    total = 0
    while stack and total < limit:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return out


def openai_model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "replay"}


def anthropic_models(models: tuple[str, ...]) -> dict[str, Any]:
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in models
    ]
    return {
        "data": data,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }


def gemini_model(name: str) -> dict[str, Any]:
    name = name.removeprefix("models/")
    return {
        "name": f"models/{name}",
        "version": "001",
        "displayName": name,
        "inputTokenLimit": 1_048_576,
        "outputTokenLimit": 65_536,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
    }
