"""Run states and the one table of allowed transitions. Pure: no I/O; a leaf module the store and the
engine both import.

A run moves prepared -> working -> worked -> verified | rejected -> approved -> integrated ->
reported -> cleaned. ``failed``, ``blocked``, ``cancelled`` and ``interrupted`` are the side exits.
Anything not in ``TRANSITIONS`` is refused.
"""

from __future__ import annotations

from bosun.core.errors import InvalidTransition

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


def shown_state(state: str, merged_commit: str | None) -> str:
    """The state as every surface shows it: a run cleaned up without being merged was discarded, and
    must not read like an integrated one (the CLI, the dashboard and the receipt say the same)."""
    if state == CLEANED and not merged_commit:
        return "discarded"
    return state
