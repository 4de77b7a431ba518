"""What a verb says while it waits: for a run slot at the concurrency cap (``--wait``), or for another
landing on the same branch. One line on stderr each time what it waits for changes
(``bosun: waiting for a run slot: runs a, b hold all 2 (max_concurrent_runs)``), so a queued delegate
never looks like a hang. Never on stdout: under ``--json`` stdout stays the one JSON object, and the
line goes to stderr all the same (a parent agent reads why its call takes long). ``--quiet`` silences it.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import IO


@contextlib.contextmanager
def waits_said(args: argparse.Namespace, stream: IO[str] | None = None) -> Iterator[None]:
    """For the duration of a verb: its waits are said on ``stream`` (stderr) unless ``--quiet``."""
    if getattr(args, "quiet", False):
        yield
        return
    from bosun.engine.locks import SAY_WAITING

    out = stream if stream is not None else sys.stderr

    def say(text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # stderr went away: the wait goes on
            out.write(f"bosun: {text}\n")
            out.flush()

    token = SAY_WAITING.set(say)
    try:
        yield
    finally:
        SAY_WAITING.reset(token)


def wait_limit(args: argparse.Namespace) -> float | None:
    """``--wait-limit`` in seconds (None: wait as long as it takes); read before anything is created."""
    text = getattr(args, "wait_limit", None)
    if text is None:
        return None
    from bosun.core.errors import BadInput
    from bosun.engine.gc import parse_age

    try:
        return parse_age(text)
    except BadInput:
        raise BadInput(f"cannot read the wait limit {text!r}",
                       "write it like 90s, 10m or 2h (or plain seconds)") from None
