"""The one family of user-facing errors.

Every failure a user can act on is a ``BosunError`` carrying a message, a hint of what to do next, a
stable machine-readable ``code`` and the process exit code. The CLI boundary renders them; nothing
else catches them broadly.
"""

from __future__ import annotations

# Exit codes are part of the CLI contract (README "Exit codes"); never renumber them.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_REJECTED = 3
EXIT_TIMEOUT = 4
EXIT_BUSY = 5
EXIT_CONFLICT = 6


class BosunError(Exception):
    """An error whose message is written for the user."""

    exit_code = EXIT_ERROR
    code = "ERROR"

    def __init__(self, message: str, hint: str = "", *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if code is not None:
            self.code = code

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": self.hint}


class BadInput(BosunError):
    """The user gave something bosun cannot use (file, field, id, ref, profile)."""

    exit_code = EXIT_BAD_INPUT
    code = "BAD_INPUT"


class NotFound(BadInput):
    code = "NOT_FOUND"


class Rejected(BosunError):
    """A gate, the verification or a review refused the change."""

    exit_code = EXIT_REJECTED
    code = "REJECTED"


class TimedOut(BosunError):
    exit_code = EXIT_TIMEOUT
    code = "TIMEOUT"


class Busy(BosunError):
    """Another process holds the run, or the concurrency cap is reached."""

    exit_code = EXIT_BUSY
    code = "BUSY"


class Conflict(BosunError):
    """Integration would conflict with the source branch or the user's uncommitted work."""

    exit_code = EXIT_CONFLICT
    code = "CONFLICT"


class InvalidTransition(BosunError):
    code = "INVALID_STATE"
