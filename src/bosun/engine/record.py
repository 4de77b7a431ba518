"""The run directory: ``$BOSUN_HOME/runs/<id>/`` and the event log.

Documents are written atomically; ``events.jsonl`` is an append-only log (one JSON object a line,
flushed per event) so a crash loses at most the event being written.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from bosun.core.fileio import read_json, write_json_atomic
from bosun.core.paths import run_dir
from bosun.workers.base import now

TASK = "task.json"
EVENTS = "events.jsonl"
DIFF = "diff.patch"
VERIFICATION = "verification.json"
GATES = "gates.json"
REPORT = "report.md"
METRICS = "metrics.json"
WORKER = "worker.json"
CROSS_REVIEW = "cross_review.json"


class EventLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._seq = sum(1 for _ in path.open("rb")) if path.exists() else 0

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        from bosun.core.redaction import redact

        event = redact(event)  # no key value or recognisable credential is ever written
        with self._lock:
            self._seq += 1
            ev = {"seq": self._seq, "ts": now(), **event}
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(ev, default=str) + "\n")
            return ev


def read_events(run_id: str) -> list[dict[str, Any]]:
    path = run_dir(run_id) / EVENTS
    out = []
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line torn by a crash
    except FileNotFoundError:
        pass
    return out


def write_doc(run_id: str, name: str, doc: Any) -> Path:
    path = run_dir(run_id) / name
    write_json_atomic(path, doc)
    return path


def read_doc(run_id: str, name: str, default: Any = None) -> Any:
    return read_json(run_dir(run_id) / name, default)
