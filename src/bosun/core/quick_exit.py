"""Exit without the interpreter's final garbage collection.

When a process ends, CPython tears down its modules and runs full garbage collections over every
object still alive. For a process that ran a delegation (the engine, the gates, pydantic models and
the tokenizer's 400,000-entry vocabulary loaded) that took 40-100 ms of CPU on a 2-core machine: as
long as a cheap real worker. ``gc.freeze()`` at exit moves every object to the permanent
generation, which those collections skip. Nothing bosun needs happens there: its records are
written and closed before it returns, SQLite commits are explicit, and ``atexit`` callbacks (this
one runs first, being registered last; the rest still run) and module teardown still happen. What
is skipped is freeing memory the operating system takes back anyway.
"""

from __future__ import annotations

import atexit
import gc

_registered = [False]


def skip_final_collection() -> None:
    """At interpreter exit, freeze every object so the final collections do not walk them (once)."""
    if not _registered[0]:
        _registered[0] = True
        atexit.register(gc.freeze)


def registered() -> bool:
    return _registered[0]
