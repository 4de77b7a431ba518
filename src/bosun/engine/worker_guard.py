"""What bosun keeps watch on while a worker runs, around the attempt phase.

Two things the worker may leave behind that verification must know about: changes to the user's
git dir (bosun puts back what it can and marks the run, which verification turns into the
USER_GIT_TAMPERED gate), and processes still running (the window of boot-clock time the worker ran
in is recorded, so verification stops what was started in it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from bosun.core import paths
from bosun.engine import record
from bosun.isolation import gitwatch
from bosun.isolation.lingering import boot_clock

if TYPE_CHECKING:
    from bosun.engine.context import RunContext
    from bosun.store.run import Run


@contextmanager
def watched(ctx: RunContext, run: Run) -> Iterator[None]:
    """Around the worker: the user's git dir before and after, and the worker's time window. On an
    exception (bosun going down) nothing is recorded here; the run stays recoverable."""
    common, before = gitwatch.take(Path(run.repo))
    began = boot_clock()
    yield
    ctx.store.reload(run)  # the attempts recorded the sandbox, the worker's pid, live usage
    ctx.store.write(run, worker_window=[began, boot_clock()])
    _check_user_git(ctx, run, common, before)


def _check_user_git(ctx: RunContext, run: Run, common: Path, before: gitwatch.Snapshot) -> None:
    """Compare the user's git dir with what it was before the worker; put back what changed."""
    changed = gitwatch.changes(common, before)
    if not changed:
        return
    failed = gitwatch.restore(common, before, changed)
    restored = [c for c in changed if c not in failed]
    message = "the worker changed the repository's git dir: " + ", ".join(changed[:8])
    if restored:
        message += "; bosun restored " + ", ".join(restored[:8])
    if failed:
        message += "; could NOT restore " + ", ".join(failed[:8]) + " (check them by hand)"
    from bosun.workers.base import ev_message

    record.EventLog(paths.run_dir(run.id) / record.EVENTS).append(ev_message(message, role="system"))
    ctx.store.write(run, user_git_tampered={"changed": changed, "restored": restored, "failed": failed})
