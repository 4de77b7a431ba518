"""The base of every parser for a CLI that prints one JSON object per line.

A subclass implements ``on_object`` (one decoded object to zero or more normalized events) and may
override ``finish`` (events owed once the process has ended, e.g. buffered text). Lines that are not
JSON objects (a CLI's banners, a crash trace) are kept, short, in ``other``: an adapter quotes the
last one when the run failed without any error report.
"""

from __future__ import annotations

import json
from typing import IO, Any

from bosun.workers.cli_base import ParseState

OTHER_LINES_KEPT = 20
OTHER_LINE_CHARS = 500


class JsonLinesParser:
    # True for a protocol spoken both ways over stdio: the worker hands the parser the child's stdin
    # (``attach_stdin``) instead of writing the prompt there.
    interactive = False

    def __init__(self) -> None:
        self.state = ParseState()
        self.other: list[str] = []

    def feed(self, line: str) -> list[dict[str, Any]]:
        line = line.strip()
        if not line:
            return []
        obj: Any = None
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = None
        if not isinstance(obj, dict):
            self.other = (self.other + [line[:OTHER_LINE_CHARS]])[-OTHER_LINES_KEPT:]
            return []
        return self.on_object(obj)

    def on_object(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def attach_stdin(self, pipe: IO[bytes]) -> None:
        """The child's stdin, for an ``interactive`` parser (the default ignores it)."""

    def finish(self) -> list[dict[str, Any]]:
        """Events owed after the process ended (the default: none)."""
        return []
