"""``bosun replay serve``: run the scripted model server in the foreground until SIGINT/SIGTERM.

The first line on stdout is the server URL alone, so a wrapper can read it and point CLIs at it.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from bosun.replay.script import ScriptError, load_script
from bosun.replay.server import ReplayServer


def serve_forever(
    script: Any,
    port: int = 0,
    root: str | Path | None = None,
    log_path: str | Path | None = None,
    *,
    out: TextIO | None = None,
    stop: threading.Event | None = None,
    as_json: bool = False,
) -> int:
    """Serve ``script`` until SIGINT/SIGTERM (or until ``stop`` is set). Returns an exit code.

    The first stdout line is the URL, or with ``as_json`` one object with the URL and each API's base."""
    out = out or sys.stdout
    stop = stop or threading.Event()
    restore = _install_signal_handlers(stop)
    try:
        with ReplayServer(script, root=root, port=port, log_path=log_path) as srv:
            if as_json:
                import json

                bases = {api: srv.base_url(api) for api in ("openai", "anthropic", "gemini", "codex")}
                print(json.dumps({"url": srv.url, "base_urls": bases, "turns": len(srv.script.turns)}),
                      file=out, flush=True)
            else:
                print(srv.url, file=out, flush=True)
            print(
                f"replay: {len(srv.script.turns)} turns; OpenAI base {srv.base_url('openai')}, "
                f"Anthropic/Gemini base {srv.url}; Ctrl-C stops",
                file=sys.stderr,
                flush=True,
            )
            while not stop.wait(0.2):
                pass
            print(
                f"replay: stopped after {len(srv.requests)} requests, {srv.turns_used} turns", file=sys.stderr
            )
    except KeyboardInterrupt:
        pass
    finally:
        restore()
    return 0


def main_serve(argv: Sequence[str] | None = None) -> int:
    """Entry point for ``bosun replay serve --script S.yaml [--port P] [--root DIR] [--log FILE]``."""
    parser = argparse.ArgumentParser(prog="bosun replay serve", description="Serve a scripted model.")
    parser.add_argument(
        "--script", required=True, help="script file (YAML/JSON) or bundled name, e.g. fix_bug"
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--root", help="directory that repo-relative script paths are made absolute against")
    parser.add_argument("--log", help="append every request as a JSON line to this file")
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script)
    except ScriptError as exc:
        print(f"error: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""), file=sys.stderr)
        return exc.exit_code
    return serve_forever(script, port=args.port, root=args.root, log_path=args.log)


def _install_signal_handlers(stop: threading.Event) -> Any:
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # signals only reach the main thread; the caller stops us via `stop`
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, frame: Any) -> None:
        stop.set()

    for sig in previous:
        signal.signal(sig, handler)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore
