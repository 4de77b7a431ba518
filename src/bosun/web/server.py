"""Running the dashboard: pick the port, print the launch URL (it carries the per-launch token),
open a browser, serve with uvicorn on 127.0.0.1 only, or detach into the background."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bosun.core.errors import EXIT_OK, BosunError, Busy

HOST = "127.0.0.1"  # never another interface: the dashboard has no login, only the launch token
TOKEN_ENV = "BOSUN_DASH_TOKEN"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex((HOST, port)) == 0


def _wait_listening(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _port_in_use(port):
            return True
        time.sleep(0.1)
    return False


def serve(port: int, open_browser: bool, detach: bool, repo: Path) -> int:
    from bosun.core.fileio import write_json_atomic
    from bosun.core.paths import bosun_home, ensure_home

    ensure_home()
    port = port or free_port()
    if _port_in_use(port):
        raise Busy(f"port {port} on {HOST} is already in use", "pass --port N (or --port 0 for any free port)",
                   code="PORT_IN_USE")
    token = os.environ.get(TOKEN_ENV) or os.urandom(16).hex()
    url = f"http://{HOST}:{port}/?token={token}"
    info = bosun_home() / "dash.json"
    if detach:
        from bosun.proc import spawn_detached

        argv = [sys.executable, "-m", "bosun", "dash", "--port", str(port), "--no-open", "--repo", str(repo)]
        log = bosun_home() / "dash.log"
        log.touch(mode=0o600)
        os.chmod(log, 0o600)  # the server prints its URL, which carries the token
        pid = spawn_detached(argv, {**os.environ, TOKEN_ENV: token}, log)
        if not _wait_listening(port, 20):
            raise BosunError(f"the dashboard did not start (see {bosun_home() / 'dash.log'})", "run `bosun dash` "
                             "in the foreground to see why", code="DASH_FAILED")
        sys.stdout.write(f"bosun dash: {url}\n  running in the background as pid {pid}; stop it with: kill {pid}\n")
        if open_browser:
            _open(url)
        return EXIT_OK
    write_json_atomic(info, {"pid": os.getpid(), "port": port, "url": url})
    os.chmod(info, 0o600)  # the URL carries the token
    sys.stdout.write(f"bosun dash: {url}\n  (Ctrl-C stops it)\n")
    sys.stdout.flush()
    if open_browser:
        threading.Thread(target=lambda: _wait_listening(port, 20) and _open(url), daemon=True).start()
    import uvicorn

    from bosun.web.app import create_app

    stopping = threading.Event()

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            stopping.set()  # end the event streams, or they would hold the shutdown up
            super().handle_exit(sig, frame)

    config = uvicorn.Config(create_app(token, port, repo, stopping), host=HOST, port=port, log_level="warning",
                            lifespan="off", access_log=False, server_header=False, timeout_graceful_shutdown=5)
    try:
        Server(config).run()
    finally:
        info.unlink(missing_ok=True)
    return EXIT_OK


def _open(url: str) -> bool:
    import webbrowser

    try:
        return webbrowser.open(url)
    except Exception:  # noqa: BLE001 - no browser: the printed URL is enough
        return False
