"""Atomic writes: every file bosun persists is written to a temp file, fsynced, then renamed."""

from __future__ import annotations

import json
import os
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from typing import Any

# Bumped when the layout of a persisted JSON document changes incompatibly.
FORMAT_VERSION = 1


def write_bytes_atomic(path: Path, data: bytes) -> None:
    import tempfile  # lazily: it pulls in `random`, and read-only CLI paths never write

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path, doc: Any) -> None:
    if isinstance(doc, dict) and "format_version" not in doc:
        doc = {"format_version": FORMAT_VERSION, **doc}
    write_text_atomic(path, json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n")


def read_json(path: Path, default: Any = None) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return default
