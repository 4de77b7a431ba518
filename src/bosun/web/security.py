"""The dashboard's guard: only local hosts, the per-launch token on every request, no cross-origin writes.

* Every request must name the dashboard's own host (``127.0.0.1:PORT`` or ``localhost:PORT``) in
  its Host header, so a DNS-rebinding page on another name cannot read the dashboard.
* Every request, pages and assets included, must carry the launch token, in the ``bosun_dash``
  cookie or an ``X-Bosun-Token`` header. Anything on the machine can connect to 127.0.0.1 (a
  worker, another user): a page shows what a run verified, held-out assertions included, so reading
  one needs the token as much as approving one does. The cookie is set, HttpOnly and
  SameSite=Strict, when the browser opens the URL ``bosun dash`` printed (``/?token=...``, on any
  path), which then drops the token from the address.
* A request that changes state (anything but GET and HEAD) must also come from the dashboard's own
  origin (``Origin`` and ``Sec-Fetch-Site`` when the browser sends them).
* Every response carries a strict Content-Security-Policy: scripts and styles from the dashboard
  itself only, nothing inline, no frames.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "bosun_dash"
TOKEN_HEADER = "x-bosun-token"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
# The savings card is a standalone SVG document with its own <style>; it has no script.
CARD_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'"
SAFE_METHODS = ("GET", "HEAD")


def allowed_hosts(port: int) -> frozenset[str]:
    return frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})


class Guard:
    """ASGI middleware enforcing the rules in the module docstring."""

    def __init__(self, app: ASGIApp, token: str, hosts: frozenset[str]) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if host not in self.hosts:
            await _plain(send, 421, "this dashboard answers only to " + " or ".join(sorted(self.hosts)))
            return
        method = scope["method"]
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if method in SAFE_METHODS and "token" in query:
            await self._exchange_token(scope, send, query)
            return
        problem = self._check_token(headers) or (self._check_write(headers, host) if method not in SAFE_METHODS else None)
        if problem:
            await _plain(send, 403, problem)
            return
        path = scope.get("path", "")
        csp = CARD_CSP if path.endswith(".svg") else CSP

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [
                    (b"content-security-policy", csp.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"cross-origin-resource-policy", b"same-origin"),
                ]
                message["headers"] = list(message.get("headers", [])) + extra
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _check_write(self, headers: dict[str, str], host: str) -> str | None:
        origin = headers.get("origin")
        if origin is not None and origin != f"http://{host}":
            return "cross-origin request refused"
        site = headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return "cross-site request refused"
        return None

    def _check_token(self, headers: dict[str, str]) -> str | None:
        offered = headers.get(TOKEN_HEADER) or _cookie(headers.get("cookie", ""), COOKIE) or ""
        if not offered or not hmac.compare_digest(offered, self.token):
            return "missing or wrong dashboard token: open the URL `bosun dash` printed (it carries the token)"
        return None

    async def _exchange_token(self, scope: Scope, send: Send, query: dict[str, str]) -> None:
        """``?token=`` from the launch URL: a right token becomes the cookie; the URL loses it."""
        if not hmac.compare_digest(query["token"], self.token):
            await _plain(send, 403, "wrong dashboard token: open the URL `bosun dash` printed")
            return
        rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
        location = scope.get("path", "/") + ("?" + rest if rest else "")
        cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
        await send({"type": "http.response.start", "status": 303, "headers": [
            (b"location", location.encode()), (b"set-cookie", cookie.encode()),
            (b"content-security-policy", CSP.encode()), (b"referrer-policy", b"no-referrer"),
            (b"content-length", b"0"),
        ]})
        await send({"type": "http.response.body", "body": b""})


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        (b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
    ]})
    await send({"type": "http.response.body", "body": body})
