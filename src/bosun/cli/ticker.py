"""The live line of a long verify command: ``  verifying: pytest -q  3 s`` on stderr, once a second.

A verify command prints nothing bosun shows while it runs (its output is kept for the record), so a
suite of minutes looked like a hang. After ``AFTER_S`` the line appears and is rewritten in place
with ``\\r``; it is cleared when the command ends, so the terminal shows what it showed before. Only
on a terminal: a pipe, a log file or ``--json`` would keep every rewrite.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO

AFTER_S = 2.0  # a command this quick needs no line
EVERY_S = 1.0


class Ticker:
    """``show(label)``: a context manager that ticks while the verify command ``label`` runs."""

    def __init__(self, stream: IO[str], after_s: float = AFTER_S, every_s: float = EVERY_S) -> None:
        self.stream, self.after_s, self.every_s = stream, after_s, every_s
        # Only the thread that installed it ticks: another thread's verification (should a context
        # ever be copied into one) would fight it for the same line.
        self.owner = threading.get_ident()

    @contextlib.contextmanager
    def show(self, label: str) -> Iterator[None]:
        if threading.get_ident() != self.owner:
            yield
            return
        done = threading.Event()
        thread = threading.Thread(target=self._tick, args=(label, done), name="verify-ticker", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join(timeout=2)

    def _tick(self, label: str, done: threading.Event) -> None:
        start = time.monotonic()
        if done.wait(self.after_s):
            return
        # One line only: a line wider than the terminal wraps, and \r then rewrites only its last row.
        width = max(20, _columns(self.stream) - 1)
        shown = False
        try:
            while True:
                elapsed = int(time.monotonic() - start)
                line = f"  verifying: {label}"
                tail = f"  {elapsed} s"
                if len(line) + len(tail) > width:
                    line = line[: max(0, width - len(tail) - 3)] + "..."
                self.stream.write(f"\r{line}{tail}\x1b[K")
                self.stream.flush()
                shown = True
                if done.wait(self.every_s - (time.monotonic() - start) % self.every_s):
                    break
        except (OSError, ValueError):  # the terminal went away: the run goes on without the line
            return
        finally:
            if shown:
                with contextlib.suppress(OSError, ValueError):
                    self.stream.write("\r\x1b[K")
                    self.stream.flush()


@contextlib.contextmanager
def verify_ticker(enabled: bool, stream: IO[str] | None = None) -> Iterator[None]:
    """For the duration of a verb: long verify commands tick on ``stream`` (stderr) when ``enabled``
    (not ``--json``, not ``--quiet``) and the stream is a terminal; otherwise nothing changes."""
    stream = stream if stream is not None else sys.stderr
    if not enabled or not _is_tty(stream):
        yield
        return
    from bosun.isolation.verify_commands import SHOW_PROGRESS

    show: Callable[[str], contextlib.AbstractContextManager[None]] = Ticker(stream).show
    token = SHOW_PROGRESS.set(show)
    try:
        yield
    finally:
        SHOW_PROGRESS.reset(token)


def _columns(stream: IO[str]) -> int:
    """The width of the terminal ``stream`` writes to (stdout may be a pipe while stderr is not)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return 80


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
