"""Run states and the one table of allowed transitions. Pure: no I/O; a leaf module the store and the
engine both import.

A run moves prepared -> working -> worked -> verified | rejected -> approved -> integrated ->
reported -> cleaned. ``failed``, ``blocked``, ``cancelled`` and ``interrupted`` are the side exits.
Anything not in ``TRANSITIONS`` is refused.
"""

from __future__ import annotations

from bosun.core.errors import InvalidTransition

TYPE_CHECKING = False  # typing's would import typing, which the fast read paths avoid
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

PREPARED = "prepared"
WORKING = "working"
WORKED = "worked"
VERIFIED = "verified"
REJECTED = "rejected"
APPROVED = "approved"
INTEGRATED = "integrated"
REPORTED = "reported"
CLEANED = "cleaned"
FAILED = "failed"
BLOCKED = "blocked"
CANCELLED = "cancelled"
INTERRUPTED = "interrupted"

STATES = (
    PREPARED, WORKING, WORKED, VERIFIED, REJECTED, APPROVED, INTEGRATED, REPORTED, CLEANED,
    FAILED, BLOCKED, CANCELLED, INTERRUPTED,
)

TRANSITIONS: dict[str, frozenset[str]] = {
    # A worker attempt starts; a prepared run may also be dropped.
    PREPARED: frozenset({WORKING, CANCELLED, FAILED}),
    # The worker finished (worked), gave up for a set-up reason (blocked: auth, missing CLI),
    # failed, was cancelled, or bosun died under it (interrupted, set by recover).
    WORKING: frozenset({WORKED, FAILED, BLOCKED, CANCELLED, INTERRUPTED}),
    # Verification and gates decide.
    WORKED: frozenset({VERIFIED, REJECTED, FAILED, CANCELLED, WORKING}),
    # A green run may be approved; a revise loop sends it back to the worker; a fresh rescan that
    # finds a different diff, or a failed re-verification at integration, rejects it.
    VERIFIED: frozenset({APPROVED, REJECTED, WORKING, WORKED, CANCELLED}),
    # Rejected runs can be revised (working), re-verified (worked) or approved with waivers.
    REJECTED: frozenset({WORKING, WORKED, APPROVED, REPORTED, CANCELLED}),
    APPROVED: frozenset({INTEGRATED, REJECTED, WORKED, CANCELLED}),
    INTEGRATED: frozenset({REPORTED, CLEANED}),
    REPORTED: frozenset({CLEANED}),
    CLEANED: frozenset(),
    # A failed or blocked attempt can be retried once the cause is fixed.
    FAILED: frozenset({WORKING, REPORTED, CANCELLED, CLEANED}),
    BLOCKED: frozenset({WORKING, REPORTED, CANCELLED, CLEANED}),
    CANCELLED: frozenset({REPORTED, CLEANED}),
    # recover: with a diff -> worked (then verification), without -> prepared.
    INTERRUPTED: frozenset({WORKED, PREPARED, CANCELLED}),
}

# States whose run still occupies a concurrency slot (it has a live or resumable worktree in use).
ACTIVE_STATES = frozenset({PREPARED, WORKING, WORKED, INTERRUPTED})
TERMINAL_STATES = frozenset({CLEANED})


def can_transition(src: str, dst: str) -> bool:
    return dst in TRANSITIONS.get(src, frozenset())


def check_transition(src: str, dst: str) -> None:
    if not can_transition(src, dst):
        allowed = ", ".join(sorted(TRANSITIONS.get(src, ()))) or "none"
        raise InvalidTransition(
            f"a run in state {src!r} cannot move to {dst!r}",
            f"from {src!r} the allowed next states are: {allowed}",
        )


# What a run that finished is, shown instead of the state it ended in (``cleaned`` says nothing of it).
LANDED = "landed"  # its change is on the user's branch (integrate)
MERGED = "merged"  # a plan's task: its change is on the plan's integration branch
REVERTED = "reverted"  # it landed, and its change was reverted since
DISCARDED = "discarded"  # cleaned up without landing
LANDING_REFUSED = "landing refused"  # approved, but the last `integrate` was refused (nothing moved)

_LANDED_STATES = frozenset({INTEGRATED, REPORTED, CLEANED})


def shown_state(state: str, merged_commit: str | None, data: Mapping[str, Any] | None = None) -> str:
    """The state as every surface shows it (the CLI, history, the dashboard, the receipt say the
    same): a run whose change landed is ``landed`` (a plan's task ``merged``), then ``reverted`` once
    its revert landed; one cleaned up without landing was ``discarded``; an approved run whose last
    ``integrate`` was refused says so. ``data`` is the run's record (``reverted``, ``plan_id``,
    ``landing_refused``)."""
    data = data or {}
    if merged_commit and state in _LANDED_STATES:
        if (data.get("reverted") or {}).get("commit"):
            return REVERTED
        return MERGED if data.get("plan_id") else LANDED
    if state == CLEANED:
        return DISCARDED
    if state == APPROVED and data.get("landing_refused"):
        return LANDING_REFUSED
    return state


def shown_commit(state: str, merged_commit: str | None, data: Mapping[str, Any] | None = None) -> str | None:
    """The commit the shown state is about: the landing's merge for landed and merged, the revert
    commit for reverted."""
    shown = shown_state(state, merged_commit, data)
    if shown == REVERTED:
        return str((data or {})["reverted"]["commit"])
    return merged_commit if shown in (LANDED, MERGED) else None


def shown_label(state: str, merged_commit: str | None, data: Mapping[str, Any] | None = None) -> str:
    """The shown state with its commit, short: ``landed 1a2b3c4d``, ``reverted 5e6f7a8b``."""
    commit = shown_commit(state, merged_commit, data)
    shown = shown_state(state, merged_commit, data)
    return f"{shown} {commit[:8]}" if commit else shown
