"""Plan states, plan task states and the plan's transition table. Pure: no I/O.

A leaf module: the store checks transitions against it and the plans package names states from it.
"""

from __future__ import annotations

from bosun.core.errors import InvalidTransition

# -- plan states --------------------------------------------------------------------------------

RUNNING = "running"
PAUSED = "paused"
FAILED = "failed"
SUCCEEDED = "succeeded"
CANCELLED = "cancelled"
ABORTED = "aborted"
PLAN_STATES = (RUNNING, PAUSED, FAILED, SUCCEEDED, CANCELLED, ABORTED)

PLAN_TRANSITIONS: dict[str, frozenset[str]] = {
    # A running plan pauses on a merge conflict, a task whose verdict waits for a person's review
    # (or a landing refused for the user's uncommitted work), fails when a task fails after its retries or the plan verify fails, succeeds, or is
    # cancelled. ``running -> running`` is a resume after its process died.
    # ``running -> aborted`` only when the process driving it is gone (a crash).
    RUNNING: frozenset({RUNNING, PAUSED, FAILED, SUCCEEDED, CANCELLED, ABORTED}),
    # `bosun plan continue` / `resume` run a stopped plan again; `abort` removes what it made.
    PAUSED: frozenset({RUNNING, CANCELLED, ABORTED}),
    FAILED: frozenset({RUNNING, CANCELLED, ABORTED}),
    CANCELLED: frozenset({RUNNING, ABORTED}),
    SUCCEEDED: frozenset(),
    ABORTED: frozenset(),
}
ENDED_STATES = frozenset({PAUSED, FAILED, SUCCEEDED, CANCELLED, ABORTED})

# -- plan task states ---------------------------------------------------------------------------

T_PENDING = "pending"  # not started (or to be run again)
T_RUNNING = "running"  # a run is being prepared, worked or verified (retries included)
T_READY = "ready"  # approved, landing commit built, waiting for the wave's merges
T_MERGED = "merged"  # in the integration branch
T_CONFLICT = "conflict"  # its change conflicts with the integration branch
# Verified, but its verdict needs a person's review: it waits, unmerged, until `bosun approve RUN`.
T_REVIEW = "needs_review"
T_FAILED = "failed"  # failed after max_attempts
T_CANCELLED = "cancelled"
TASK_STATES = (T_PENDING, T_RUNNING, T_READY, T_MERGED, T_CONFLICT, T_REVIEW, T_FAILED, T_CANCELLED)


def check_plan_transition(src: str, dst: str) -> None:
    if dst not in PLAN_TRANSITIONS.get(src, frozenset()):
        allowed = ", ".join(sorted(PLAN_TRANSITIONS.get(src, ()))) or "none"
        raise InvalidTransition(
            f"a plan in state {src!r} cannot move to {dst!r}",
            f"from {src!r} the allowed next states are: {allowed}",
        )
