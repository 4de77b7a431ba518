"""`bosun warm start|stop|status`: the warm process that runs validating commands without their imports.

The parser is argparse only (``bosun --help`` must stay fast); the handler imports what it needs.
"""

from __future__ import annotations

import argparse
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

WARM_DESCRIPTION = """\
A command that validates a task or settings (delegate, check, prepare, work, verify, approve,
integrate, plan, ...) spends ~0.2 s importing pydantic and bosun's models before doing anything.
`bosun warm start` starts a background process with them imported; each such command then runs in
a fork of it, with the command's own arguments, environment, directory and terminal, and exits
with the same code it would have. It serves this bosun home (BOSUN_HOME) only, for this user only,
and only commands that could write bosun's store themselves (never a worker under the sandbox).
It exits after --idle minutes without a command, on `bosun warm stop`, or when bosun changes on
disk. BOSUN_WARM=0 makes a command run the ordinary way. Nothing else changes: without it running,
every command works as before.
"""
START_TIMEOUT_S = 30.0


def add_warm_parser(sub: argparse._SubParsersAction, wanted: str | None = "*") -> None:  # type: ignore[type-arg]
    if wanted not in ("*", None, "warm"):
        return
    p = sub.add_parser("warm", help="a warm background process that starts validating commands ~0.2 s sooner",
                       description=WARM_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("start", "stop", "status"),
                   help="start: start it (if not running); stop: stop it; status: whether it runs")
    p.add_argument("--idle", metavar="MINUTES", type=float, default=60.0,
                   help="with start: exit after this many minutes without a command (default 60)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")


def status() -> dict[str, object]:
    """Whether a warm process serves this bosun home: its pid, socket and start time."""
    import json

    from bosun.core.paths import bosun_home

    home = bosun_home()
    try:
        info = json.loads((home / "warm.json").read_text())
    except (OSError, ValueError):
        info = None
    pid = info.get("pid") if isinstance(info, dict) else None
    running = isinstance(pid, int) and _is_warm_process(pid) and os.path.exists(str(info.get("socket")))  # type: ignore[union-attr]
    out: dict[str, object] = {"running": bool(running), "home": str(home)}
    if running and isinstance(info, dict):
        out.update(pid=pid, socket=info.get("socket"), started=info.get("started"), idle_s=info.get("idle_s"))
    return out


def _is_warm_process(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"bosun.cli.warm_server" in f.read()
    except OSError:
        return False


def start(idle_min: float) -> dict[str, object]:
    import subprocess
    import time

    from bosun.core.errors import BadInput
    from bosun.core.paths import bosun_home
    from bosun.store.db import open_store

    if idle_min <= 0:
        raise BadInput("--idle must be a positive number of minutes", "e.g. `bosun warm start --idle 30`")
    now = status()
    if now["running"]:
        return {**now, "started_now": False}
    home = bosun_home()
    home.mkdir(parents=True, exist_ok=True)
    open_store().close()  # the store must exist: a command proves it may use the warm process with it
    log = open(home / "warm.log", "ab")  # noqa: SIM115 - handed to the child, closed right after
    try:
        child = subprocess.Popen(
            [sys.executable, "-P", "-m", "bosun.cli.warm_server", "--idle", str(idle_min)],
            cwd="/", env={**os.environ, "BOSUN_HOME": str(home)}, stdin=subprocess.DEVNULL, stdout=log,
            stderr=log, start_new_session=True)
    finally:
        log.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        now = status()
        if now["running"] and now.get("pid") == child.pid:
            return {**now, "started_now": True}
        if child.poll() is not None:
            break
        time.sleep(0.05)
    tail = _log_tail(home / "warm.log")
    if child.poll() is None:
        child.terminate()
    from bosun.core.errors import BosunError

    raise BosunError("the warm process did not start" + (f": {tail}" if tail else ""),
                     f"see {home / 'warm.log'}; commands still run the ordinary way")


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def stop() -> dict[str, object]:
    import signal
    import time

    now = status()
    if not now["running"]:
        return {**now, "stopped": False}
    pid = int(now["pid"])  # type: ignore[call-overload]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _is_warm_process(pid):
        time.sleep(0.05)
    return {**status(), "stopped": True}


def cmd_warm(args: argparse.Namespace) -> int:
    from bosun.cli.dispatch import emit_json

    if args.action == "start":
        result = start(args.idle)
        text = ("started" if result.get("started_now") else "already running") + f" (pid {result.get('pid')})"
    elif args.action == "stop":
        result = stop()
        text = "stopped" if result.get("stopped") else "not running"
    else:
        result = status()
        text = f"running (pid {result.get('pid')}, since {_when(result.get('started'))})" if result["running"] \
            else "not running (`bosun warm start` starts it)"
    if args.json:
        emit_json(result)
    else:
        print(f"warm process for {result['home']}: {text}")
    return 0


def _when(started: object) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(started))) if isinstance(started, (int, float)) else "?"
