"""The scripted model server: stdlib HTTP, one thread per connection, bound to 127.0.0.1.

Routes each request to its wire API, asks the ``Player`` for the reply, injects faults, writes JSON or
SSE (chunked transfer encoding), and records every request in ``server.requests`` (and optionally a
JSON-lines file). Stopping is quick even with a stalled stream open: stalls wait on the stop event,
handler threads are daemons, and open client sockets are shut down.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bosun.replay.player import ParsedRequest, Player, Reply
from bosun.replay.protocols import AnthropicMessages, Gemini, OpenAIChat, OpenAIResponses, WireAPI
from bosun.replay.script import Script, load_script
from bosun.replay.wire import (
    anthropic_models,
    decode_body,
    gemini_model,
    openai_model,
    request_headers,
    strings_in,
)

CHAT, RESPONSES, ANTHROPIC, GEMINI = OpenAIChat(), OpenAIResponses(), AnthropicMessages(), Gemini()
POST_ROUTES: dict[str, WireAPI] = {
    "/v1/chat/completions": CHAT,
    "/chat/completions": CHAT,
    "/v1/responses": RESPONSES,
    "/responses": RESPONSES,
    "/v1/messages": ANTHROPIC,
    "/messages": ANTHROPIC,
}
GEMINI_RE = re.compile(
    r"^/(?:v1beta|v1alpha|v1)/models/([^:]+):(generateContent|streamGenerateContent|countTokens)$"
)
# Base URLs as each CLI wants them: OpenAI-style clients append /chat/completions or /responses to
# .../v1; the Anthropic and Google SDKs add /v1/messages and /v1beta/models/... themselves.
BASE_PATHS = {"openai": "/v1", "anthropic": "", "gemini": ""}
BASE_ALIASES = {
    "chat": "openai",
    "responses": "openai",
    "codex": "openai",
    "opencode": "openai",
    "kilo": "openai",
    "pi": "openai",
    "qwen": "openai",
    "native": "openai",
    "claude": "anthropic",
}
MAX_BODY = 64 * 1024 * 1024


class ReplayServer:
    """A scripted model server. Use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(
        self,
        script: Any,
        *,
        root: str | Path | None = None,
        port: int = 0,
        log_path: str | Path | None = None,
        host: str = "127.0.0.1",
        detect_root: bool = True,
    ) -> None:
        self.script: Script = load_script(script)
        self.root = Path(root).resolve() if root is not None else None
        self.player = Player(self.script, root=self.root, detect_root=detect_root)
        self.log_path = Path(log_path) if log_path is not None else None
        self.errors: list[str] = []
        self.stop_event = threading.Event()
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._httpd = _HTTPServer((host, port), self)

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> ReplayServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="replay-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.stop_event.set()  # releases stalled streams
        if self._thread is not None:
            self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what tests and the CLI read -------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def base_url(self, api: str = "openai") -> str:
        """The base URL to give a client: ``openai`` (.../v1), ``anthropic`` or ``gemini`` (bare)."""
        key = BASE_ALIASES.get(api, api)
        if key not in BASE_PATHS:
            raise ValueError(f"unknown api {api!r}; use one of {sorted(BASE_PATHS)}")
        return self.url + BASE_PATHS[key]

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    @property
    def turns_used(self) -> int:
        return self.player.turns_used

    def tool_results(self) -> dict[str, Any]:
        """Every tool result the CLIs sent back, by call id (later requests win)."""
        results: dict[str, Any] = {}
        for rec in self.requests:
            for r in rec.get("tool_results") or []:
                results[str(r.get("id"))] = r.get("output")
        return results

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= count:
                return True
            time.sleep(0.01)
        return False

    # -- recording -------------------------------------------------------------------------------
    def add_error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)

    def record(self, rec: dict[str, Any]) -> None:
        with self._lock:
            rec["seq"] = len(self._requests) + 1
            self._requests.append(rec)
            if rec.get("error"):
                self.errors.append(str(rec["error"]))
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec, default=str) + "\n")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # never wait for a stalled handler on close
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], replay: ReplayServer) -> None:
        self.replay = replay
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away mid-stream is normal here; _Exchange records real errors


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; streams use chunked transfer encoding
    timeout = 120  # an idle keep-alive connection does not hold a thread forever
    server: _HTTPServer

    def do_POST(self) -> None:
        _Exchange(self, self.server.replay).run()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log is server.requests


class _Exchange:
    """One request and its answer."""

    def __init__(self, handler: _Handler, srv: ReplayServer) -> None:
        self.h, self.srv = handler, srv
        split = urlsplit(handler.path)
        self.path = split.path.rstrip("/") or "/"
        self.query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        self.rec: dict[str, Any] = {
            "time": time.time(),
            "method": handler.command,
            "path": self.path,
            "query": self.query,
            "headers": request_headers(handler),
        }
        self.raw = b""
        self.headers_sent = False

    def run(self) -> None:
        try:
            self._route()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.h.close_connection = True  # the client hung up or timed out: nothing to answer
        except Exception as exc:  # noqa: BLE001 - a bug here must show in the log, not kill the server
            self._internal_error(f"replay server error: {type(exc).__name__}: {exc}")

    def _internal_error(self, message: str) -> None:
        self.rec["error"] = message
        if "seq" in self.rec:
            self.srv.add_error(message)  # already recorded
        else:
            self.srv.record(self.rec)
        if self.headers_sent:
            self.h.close_connection = True
            return
        try:
            self._send_json(500, {"error": {"message": message, "type": "server_error", "code": None}})
        except OSError:
            self.h.close_connection = True

    # -- routing ---------------------------------------------------------------------------------
    def _route(self) -> None:
        method = self.h.command
        if method == "GET":
            return self._route_get()
        if method == "POST":
            body = self._read_json()
            if body is None:
                return None
            if self.path in POST_ROUTES:
                return self._generate(POST_ROUTES[self.path], body)
            if self.path in ("/v1/messages/count_tokens", "/messages/count_tokens"):
                return self._info(200, {"input_tokens": max(1, len(self.raw) // 4)}, "anthropic")
            m = GEMINI_RE.match(self.path)
            if m:
                return self._gemini(m.group(1), m.group(2), body)
        return self._not_found()

    def _route_get(self) -> None:
        models = self.srv.script.models
        if self.path in ("/v1/models", "/models"):
            if self._is_anthropic():
                return self._info(200, anthropic_models(models), "anthropic")
            return self._info(200, {"object": "list", "data": [openai_model(m) for m in models]}, "openai")
        if self.path == "/v1beta/models":
            return self._info(200, {"models": [gemini_model(m) for m in models]}, "gemini")
        if self.path.startswith("/v1beta/models/"):
            return self._info(200, gemini_model(self.path.rsplit("/", 1)[-1]), "gemini")
        if self.path.startswith("/v1/models/"):
            return self._info(200, openai_model(self.path.rsplit("/", 1)[-1]), "openai")
        if self.path in ("/health", "/healthz"):
            return self._info(200, {"ok": True, "turns_used": self.srv.turns_used}, None)
        return self._not_found()

    def _is_anthropic(self) -> bool:
        return "anthropic-version" in self.h.headers or "x-api-key" in self.h.headers

    def _gemini(self, model: str, method: str, body: dict[str, Any]) -> None:
        if method == "countTokens":
            return self._info(200, {"totalTokens": max(1, len(self.raw) // 4)}, "gemini")
        stream = method == "streamGenerateContent"
        return self._generate(GEMINI, body, model=model.removeprefix("models/"), stream=stream)

    # -- generation ------------------------------------------------------------------------------
    def _generate(
        self, api: WireAPI, body: dict[str, Any], model: str = "", stream: bool | None = None
    ) -> None:
        req = api.parse(body, model=model, stream=stream)
        req.raw_len, req.raw_text = len(self.raw), "\n".join(strings_in(body))
        reply = self.srv.player.next_reply(req)
        self._describe(api, body, req, reply)
        if reply.fault is not None:
            return self._fault(api, req, reply)
        self.rec["status"] = 200
        self.srv.record(self.rec)
        if not req.stream:
            return self._send_json(200, api.render_json(reply, req))
        if api is GEMINI and self.query.get("alt") != "sse":
            return self._send_json(200, GEMINI.render_records(reply, req))  # a JSON array of records
        self._start_stream()
        for frame in api.render_events(reply, req):
            self._write_chunk(frame)
        self._end_stream()

    def _describe(self, api: WireAPI, body: dict[str, Any], req: ParsedRequest, reply: Reply) -> None:
        self.rec.update(
            api=api.name,
            model=req.model,
            stream=req.stream,
            body=body,
            tools=[t.name for t in req.tools],
            tool_results=req.tool_results,
            source=reply.source,
            turn=reply.turn,
            fault=reply.fault.label() if reply.fault else None,
            calls=[c.to_log() for c in reply.calls],
            text=reply.text,
            usage={"input": reply.usage.input, "output": reply.usage.output, "cached": reply.usage.cached},
        )
        if reply.note:
            self.rec["side_reason"] = reply.note
        if reply.error:
            self.rec["error"] = reply.error

    # -- faults ----------------------------------------------------------------------------------
    def _fault(self, api: WireAPI, req: ParsedRequest, reply: Reply) -> None:
        fault = reply.fault
        assert fault is not None
        if fault.kind == "stall":
            return self._stall(api, req, reply, fault.stall_s)
        if fault.kind == "malformed_sse":
            return self._malformed(api, req, reply)
        status, body = api.error_body(fault, req.model)
        headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
        self.rec["status"] = status
        self.srv.record(self.rec)
        self._send_json(status, body, headers)

    def _stall(self, api: WireAPI, req: ParsedRequest, reply: Reply, seconds: float) -> None:
        self.rec["status"] = 200
        self.srv.record(self.rec)
        sse = req.stream and (api is not GEMINI or self.query.get("alt") == "sse")
        self._start_stream("text/event-stream" if sse else "application/json")
        if sse:
            self._write_chunk(api.render_events(reply, req)[0])  # one frame, then silence
        self.srv.stop_event.wait(seconds)
        self.h.close_connection = True  # never finish the body: the client sees a dead stream

    def _malformed(self, api: WireAPI, req: ParsedRequest, reply: Reply) -> None:
        self.rec["status"] = 200
        self.srv.record(self.rec)
        sse = req.stream and (api is not GEMINI or self.query.get("alt") == "sse")
        if not sse:
            return self._send_raw(200, b'{"id": "broken', "application/json")
        self._start_stream()
        self._write_chunk(api.render_events(reply, req)[0])
        self._write_chunk(api.broken_frame())
        self._end_stream()

    # -- small answers ---------------------------------------------------------------------------
    def _info(self, status: int, payload: Any, api: str | None) -> None:
        self.rec.update(api=api, status=status, source=None)
        self.srv.record(self.rec)
        self._send_json(status, payload)

    def _not_found(self) -> None:
        message = f"replay: no route for {self.h.command} {self.path}"
        self.rec.update(status=404, error=message, source=None)
        self.srv.record(self.rec)
        self._send_json(404, {"error": {"message": message, "type": "not_found_error", "code": "not_found"}})

    def _bad_request(self, message: str) -> None:
        self.rec.update(status=400, error=message, source=None)
        self.srv.record(self.rec)
        self._send_json(400, {"error": {"message": message, "type": "invalid_request_error", "code": None}})

    # -- HTTP plumbing ---------------------------------------------------------------------------
    def _read_json(self) -> dict[str, Any] | None:
        try:
            self.raw = decode_body(self._read_body(), self.h.headers.get("Content-Encoding", ""))
            body = json.loads(self.raw or b"{}")
        except (ValueError, OSError) as exc:
            self._bad_request(f"replay: unreadable request body: {exc}")
            return None
        if not isinstance(body, dict):
            self._bad_request("replay: request body is not a JSON object")
            return None
        return body

    def _read_body(self) -> bytes:
        if self.h.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        length = int(self.h.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("request body too large")
        return self.h.rfile.read(length)

    def _read_chunked(self) -> bytes:
        data = bytearray()
        while True:
            size = int(self.h.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.h.rfile.readline()
                return bytes(data)
            data += self.h.rfile.read(size)
            self.h.rfile.readline()
            if len(data) > MAX_BODY:
                raise ValueError("request body too large")

    def _common_headers(self) -> None:
        self.headers_sent = True
        self.h.send_header("x-request-id", f"req_replay_{self.rec.get('seq', 0)}")
        self.h.send_header("request-id", f"req_replay_{self.rec.get('seq', 0)}")

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.h.send_response(status)
        self.h.send_header("Content-Type", ctype)
        self.h.send_header("Content-Length", str(len(data)))
        self._common_headers()
        for key, value in (headers or {}).items():
            self.h.send_header(key, value)
        self.h.end_headers()
        self.h.wfile.write(data)

    def _start_stream(self, ctype: str = "text/event-stream") -> None:
        self.h.send_response(200)
        self.h.send_header("Content-Type", ctype)
        self.h.send_header("Cache-Control", "no-cache")
        self.h.send_header("Transfer-Encoding", "chunked")
        self._common_headers()
        self.h.end_headers()
        self.h.wfile.flush()

    def _write_chunk(self, text: str) -> None:
        data = text.encode()
        self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.h.wfile.flush()

    def _end_stream(self) -> None:
        self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()
