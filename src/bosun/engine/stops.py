"""How a phase ends a run that did not go on: one exception, ``RunStopped``, recorded in one place.

A phase that ends the run (a worktree that could not be made, a worker that failed, was blocked or
was cancelled, gates that refused the change) raises ``RunStopped`` with everything the record needs:
the state the run ends in, the error, the reason for the transition and any data that goes with it.
``stopping`` is the one handler: it writes the error once, moves the run, and raises what the caller
must get (the same error, as the exception it was made as), or lets the verb return the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from bosun.core.errors import BosunError

if TYPE_CHECKING:
    from bosun.engine.context import RunContext
    from bosun.store.db import Store
    from bosun.store.run import Run


class RunStopped(Exception):
    """A phase ended the run in ``to``. ``error`` is what the record says and, with ``raises``, what the
    caller gets once it is recorded (``cause`` instead, when a lower step's own error says more to the
    caller than the run's summary of it); without ``raises`` the verb returns the run in its new state."""

    def __init__(self, to: str, error: BosunError, reason: str, *, raises: bool = True,
                 data: dict[str, Any] | None = None, cause: BosunError | None = None) -> None:
        super().__init__(reason)
        self.to, self.error, self.reason, self.raises = to, error, reason, raises
        self.data, self.cause = data or {}, cause


@contextmanager
def stopping(ctx: RunContext, run: Run, after: str = "") -> Iterator[None]:
    """Run phases of the run a verb holds; a ``RunStopped`` one raises is handled here, once: the
    error and the stop's data are written, the run moves from the state it is in to ``stop.to`` (the
    held ``Run`` follows), and the caller gets the error when the stop says it raises. ``after`` is
    what came before that the error alone would hide (a repair turn's failure hides the refusal it
    was repairing): it leads the error's message, recorded and raised."""
    try:
        yield
    except RunStopped as stop:
        if after:
            for err in (stop.error, stop.cause):
                if err is not None:
                    err.message = f"{after}{err.message}"
                    err.args = (err.message,)
        ctx.store.write(run, error=stop.error.to_dict(), **stop.data)
        ctx.store.move(run, stop.to, stop.reason[:500])
        if stop.raises:
            raise (stop.cause or stop.error) from None


def clear_error(store: Store, run_id: str) -> None:
    """The run goes on (worked again, verified, approved, landed, discarded on purpose): an error
    recorded on its way here is history, kept by the transition log. This module is the one writer of
    ``error``: a stop records it, this clears it."""
    store.merge_data(run_id, error=None)
