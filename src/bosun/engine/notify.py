"""``[notify]``: tell the user (or a script) when a run stops.

``command`` is run with the run's ``--json`` result on stdin (no shell; it is the user's own program,
from the user's config): its ``verdict`` object, and ``verdict_line``, the verdict in the words of
``verdict.one_line`` that every text surface uses. ``bell`` rings the terminal when there is one;
``desktop`` calls ``notify-send`` when it is installed, titled with that line. A notifier that fails
never changes the run.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.errors import BosunError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from bosun.engine.context import RunContext
    from bosun.store.run import Run

RUNNING = frozenset({"prepared", "working", "worked"})


def notify_run(ctx: RunContext, run_id: str) -> list[str]:
    """Notify about ``run_id`` if it stopped; returns what was done (for tests and logs)."""
    try:
        run = ctx.store.require_run(run_id)
        cfg = ctx.settings(Path(run.repo)).notify
    except BosunError:
        return []
    if run.state in RUNNING or not (cfg.command or cfg.bell or cfg.desktop):
        return []
    from bosun.engine.results import run_result

    done: list[str] = []
    from bosun.engine.verdict import one_line

    result: dict[str, Any] = {**run_result(run)}
    result["verdict_line"] = one_line(result.get("verdict"))
    if cfg.command:
        done.append(run_command(cfg.command, result, Path(run.repo), cfg.timeout_s))
    if cfg.bell:
        done.append(_bell())
    if cfg.desktop:
        done.append(_desktop(run, result.get("verdict")))
    return done


def run_command(argv: list[str], result: Mapping[str, Any], cwd: Path, timeout_s: float) -> str:
    from bosun.proc import run_quick

    try:
        res = run_quick(argv, cwd=cwd, input=json.dumps(result, default=str) + "\n", timeout=timeout_s)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"bosun: notify command {argv[0]!r} could not start: {exc}\n")
        return "command: not started"
    except Exception as exc:  # noqa: BLE001 - subprocess.TimeoutExpired and friends: never fail the run
        sys.stderr.write(f"bosun: notify command {argv[0]!r} failed: {type(exc).__name__}\n")
        return "command: failed"
    return f"command: exit {res.returncode}"


def _bell() -> str:
    try:
        with open("/dev/tty", "w") as tty:
            tty.write("\a")
    except OSError:
        # No controlling terminal (a fork of the warm process has none): the caller's terminal, if
        # its standard error is one.
        try:
            if not sys.stderr.isatty():
                return "bell: no terminal"
            sys.stderr.write("\a")
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            return "bell: no terminal"
    return "bell"


def headline(run: Run, verdict: Mapping[str, Any] | None) -> str:
    """What a notification says first: the verdict as every surface says it, then the state."""
    from bosun.core.states import shown_label
    from bosun.engine.verdict import one_line

    state = shown_label(run.state, run.merged_commit, run.data.to_dict())
    return f"bosun: {one_line(verdict)}" if verdict else f"bosun: {state}"


def _desktop(run: Run, verdict: Mapping[str, Any] | None) -> str:
    from bosun.proc import run_quick

    exe = shutil.which("notify-send")
    if exe is None:
        return "desktop: notify-send not installed"
    try:
        run_quick([exe, headline(run, verdict), f"{run.id} {run.title} ({run.state})"], timeout=10)
    except Exception:  # noqa: BLE001 - a missing display must not fail the run
        return "desktop: failed"
    return "desktop"
