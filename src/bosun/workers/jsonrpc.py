"""A JSON-RPC 2.0 peer over a child's stdio: one JSON object per line each way.

The peer writes requests, notifications and replies to the child's stdin and sorts what the child
prints into responses (matched to the request that asked, whose callback then runs), requests (the
child asks us something: it needs an answer, a result or an error) and notifications. It does not
read: the supervising process feeds it lines (``bosun.proc`` reads stdout on its own thread), so every
callback runs on that reader thread, and writes are serialized by a lock.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

ResultHandler = Callable[[Any, "RpcError | None"], None]


@dataclass
class RpcError:
    code: int
    message: str
    data: Any = None

    def text(self) -> str:
        detail = self.data if isinstance(self.data, str) else json.dumps(self.data) if self.data else ""
        return f"{self.message} (JSON-RPC {self.code})" + (f": {detail}" if detail else "")


class Peer:
    def __init__(self) -> None:
        self.pipe: IO[bytes] | None = None
        self.closed = False
        self._next_id = 0
        self._pending: dict[int, tuple[str, ResultHandler]] = {}
        self._lock = threading.Lock()

    def attach(self, pipe: IO[bytes]) -> None:
        self.pipe = pipe

    # -- writing --------------------------------------------------------------------------------
    def request(self, method: str, params: dict[str, Any], on_result: ResultHandler) -> int:
        with self._lock:
            rid = self._next_id
            self._next_id += 1
            self._pending[rid] = (method, on_result)
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def reply(self, rid: Any, result: Any) -> None:
        self._write({"jsonrpc": "2.0", "id": rid, "result": result})

    def reply_error(self, rid: Any, code: int, message: str) -> None:
        self._write({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})

    def close(self) -> None:
        """Close the child's stdin: a well-behaved stdio server exits at end of input."""
        with self._lock:
            if self.closed or self.pipe is None:
                self.closed = True
                return
            self.closed = True
            try:
                self.pipe.close()
            except OSError:
                pass  # the child is gone already

    def _write(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            if self.closed or self.pipe is None:
                return
            try:
                self.pipe.write(data)
                self.pipe.flush()
            except (BrokenPipeError, OSError, ValueError):
                self.closed = True  # the child died: its exit code and stderr tell why

    # -- reading --------------------------------------------------------------------------------
    def dispatch(
        self,
        message: dict[str, Any],
        on_request: Callable[[Any, str, dict[str, Any]], None],
        on_notification: Callable[[str, dict[str, Any]], None],
    ) -> None:
        """Route one message from the child. Requests must be answered (``reply``/``reply_error``)."""
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if isinstance(method, str):
            if "id" in message and message["id"] is not None:
                on_request(message["id"], method, params)
            else:
                on_notification(method, params)
            return
        rid = message.get("id")
        with self._lock:
            pending = self._pending.pop(rid, None) if isinstance(rid, int) else None
        if pending is None:
            return  # an answer to nothing we asked: ignored
        _, on_result = pending
        err = message.get("error")
        if isinstance(err, dict):
            code = err.get("code")
            on_result(None, RpcError(code if isinstance(code, int) else INTERNAL_ERROR,
                                     str(err.get("message") or "error"), err.get("data")))
        else:
            on_result(message.get("result"), None)

    def waiting_for(self) -> list[str]:
        """The methods of our requests still unanswered."""
        with self._lock:
            return [method for method, _ in self._pending.values()]
