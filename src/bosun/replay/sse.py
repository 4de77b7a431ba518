"""A small SSE reader for tests and harnesses that talk to the replay server directly."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SSEEvent:
    event: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


def parse_sse(text: str) -> list[SSEEvent]:
    """Split an SSE body into events (``event:`` and joined ``data:`` lines; comments skipped)."""
    events = []
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    for block in normalized.split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if name is not None or data:
            events.append(SSEEvent(name, "\n".join(data)))
    return events
