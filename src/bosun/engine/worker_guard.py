"""What the attempt phase records of what a worker may leave behind, for verification.

Two things: changes to the user's git dir and to the modes, owners and flags of the user's files
(each worker turn keeps watch on them and puts back what it can, ``workers/turn.py``; the run is
marked here, and verification turns the marks into the USER_GIT_TAMPERED and USER_FILES_TAMPERED
gates), and processes still running (the window of boot-clock time the worker
step ran in is recorded, so verification stops what was started in it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from bosun.isolation.lingering import boot_clock

if TYPE_CHECKING:
    from bosun.engine.attempts import Outcome
    from bosun.engine.context import RunContext
    from bosun.store.run import Run


@contextmanager
def watched(ctx: RunContext, run: Run) -> Iterator[None]:
    """Around the worker step: its time window on the boot clock. On an exception (bosun going
    down) nothing is recorded here; the run stays recoverable."""
    began = boot_clock()
    yield
    ctx.store.reload(run)  # the attempts recorded the sandbox, the worker's pid, live usage
    ctx.store.write(run, worker_window=[began, boot_clock()])


def record_git_tampering(ctx: RunContext, run: Run, outcome: Outcome) -> None:
    """What the worker's turns changed in the user's git dir, and in the modes, owners and flags of the
    user's files (``workers/turn.py`` put back what it could), for verification's USER_GIT_TAMPERED and
    USER_FILES_TAMPERED gates."""
    if outcome.git_tampered:
        ctx.store.write(run, user_git_tampered=outcome.git_tampered)
    if outcome.files_tampered:
        ctx.store.write(run, user_files_tampered=outcome.files_tampered)
