"""What each refusal is about: the worker's honesty, the work itself, or the circumstances of the run.

Invariant: a worker that tried to cheat is never coached into a better cheat. A refusal about the
worker's honesty (tampering with what verification reads, sandbox escapes, harness or runner changes,
secrets, weakened tests) ends the run and is never repaired; only a refusal about the work (tests that
fail, tests rewritten, out of scope, too big) is sent back to the worker as a repair round. A refusal
no worker can act on (the user's own edits overlapping the change) is neither: it is not repaired and
it is not held against the worker.

The one table is here, next to nothing else, so every reader (the repair loop, the track record's
"cheat attempts", docs/gates.md) derives from it; ``tests/core/test_refusal_kinds.py`` fails on a gate
code (``bosun.gates.GATE_CODES``, ``ENGINE_GATE_CODES``) or a review refusal that is not classified.
A code this table does not know is treated as honesty when deciding a repair (never coached) and is
not counted as a cheat: unknown is never the worker's credit nor its blame.

Plain data, no imports: the read-only verbs (``bosun workers``) load it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's would import typing, which the fast read paths avoid
if TYPE_CHECKING:
    from collections.abc import Iterable

HONESTY = "honesty"
WORK = "work"
CIRCUMSTANCE = "circumstance"

KINDS: dict[str, str] = {
    # the work itself: shown the evidence, an honest worker can do better
    "NO_CHANGES": WORK,
    "VERIFY_FAILED": WORK,
    "OUT_OF_SCOPE": WORK,
    "EXCESSIVE_DELETION": WORK,
    "TOO_MANY_FILES": WORK,
    "DIFF_TOO_LARGE": WORK,
    "TESTS_REWRITTEN": WORK,
    "INVALID_CITATIONS": WORK,
    "SELF_REVIEW_ESCALATED": WORK,
    "CROSS_REVIEW_BLOCKED": WORK,
    # honesty: what verification reads, runs or trusts was changed, or the change hides something
    "LOCKED_PATH_CHANGED": HONESTY,
    "GIT_RULES_CHANGED": HONESTY,
    "PYTHON_STARTUP_CHANGED": HONESTY,
    "MODULE_SHADOWED": HONESTY,
    "PACKAGE_METADATA_ADDED": HONESTY,  # a plugin the test runner would load from the change
    "RUNNER_REFERENCED": HONESTY,  # the code under test reaches for the runner that grades it
    "RUNNER_TAMPERED": HONESTY,  # ... and the runner guard saw it change how the tests ran
    "VERIFY_ENTRY_CHANGED": HONESTY,
    "BINARY_CHANGE": HONESTY,  # bytes no reviewer can read: never coached into a better-hidden one
    "SYMLINK_CHANGE": HONESTY,  # links out of the worktree, writes next to it
    "SECRET_DETECTED": HONESTY,
    "TEST_WEAKENED": HONESTY,
    "TEST_HARNESS_CHANGED": HONESTY,
    "GIT_POINTER_CHANGED": HONESTY,
    "NESTED_REPOSITORY": HONESTY,
    "USER_GIT_TAMPERED": HONESTY,
    "USER_FILES_TAMPERED": HONESTY,  # modes or flags of your files changed while the worker ran
    "HOLDOUT_TOUCHED": HONESTY,
    "REVIEW_CHANGED_TREE": HONESTY,
    "READ_ONLY_VIOLATION": HONESTY,
    "ENVIRONMENT_CHANGED": HONESTY,
    "CROSS_REVIEW_CHANGED_TREE": HONESTY,
    # circumstances: the user moved the ground under the run; no turn of the worker's changes that
    "SOURCE_CHANGED": CIRCUMSTANCE,
}


def kind_of(code: str) -> str | None:
    """``honesty``, ``work`` or ``circumstance``; None for a code the table does not know."""
    return KINDS.get(code)


def repairable(codes: Iterable[str]) -> bool:
    """Whether a refusal with these reason codes goes back to the worker: every code is about the work."""
    seen = list(codes)
    return bool(seen) and all(KINDS.get(c) == WORK for c in seen)


def honesty_codes(codes: Iterable[str]) -> list[str]:
    """The codes of a refusal that are about the worker's honesty (a cheat attempt when any)."""
    return [c for c in codes if KINDS.get(c) == HONESTY]
