"""The one family of user-facing errors.

Every failure a user can act on is a ``BosunError`` carrying a message, a hint of what to do next, a
stable machine-readable ``code`` and the process exit code. The CLI boundary renders them; nothing
else catches them broadly.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from typing import Any


# Exit codes are part of the CLI contract (README "Exit codes"); never renumber them.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_REJECTED = 3
EXIT_TIMEOUT = 4
EXIT_BUSY = 5
EXIT_CONFLICT = 6
EXIT_NEEDS_REVIEW = 7


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached a command-line bosun: unwound like Ctrl-C (its worker stopped, its run
    left recoverable), not a death that leaves the worker running with nobody watching it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def interrupted_exit_code(exc: KeyboardInterrupt) -> int:
    """128 + the signal's number, as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM."""
    return 128 + getattr(exc, "signum", 2)


def raise_on_termination() -> None:
    """In the main thread of a command-line process: SIGTERM and SIGHUP raise ``Terminated``."""
    import signal

    def handler(signum: int, _frame: object) -> None:
        raise Terminated(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:  # an ignored one (nohup) stays ignored
            signal.signal(sig, handler)


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


class NeedsReview(BosunError):
    """The change is verified but a person must say yes (engine/verdict.py): it does not land on its own."""

    exit_code = EXIT_NEEDS_REVIEW
    code = "NEEDS_REVIEW"


class InvalidTransition(BosunError):
    code = "INVALID_STATE"


class Problem:
    """One thing wrong with an input, with its own hint (reported together with the others)."""

    __slots__ = ("code", "message", "hint")

    def __init__(self, code: str, message: str, hint: str = "") -> None:
        self.code, self.message, self.hint = code, message, hint

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": self.hint}

    def __repr__(self) -> str:
        return f"Problem({self.code!r}, {self.message!r})"


class ProblemsFound(BadInput):
    """Bad input with several problems: all of them are reported at once, each with its hint. Exit 2."""

    def __init__(self, problems: list[Any], code: str | None = None) -> None:
        # Any object with code, message, hint and to_dict() (plans add the tasks a problem concerns).
        first = problems[0] if problems else Problem("BAD_INPUT", "invalid input")
        if len(problems) <= 1:
            message, hint = first.message, first.hint
        else:
            message = f"{len(problems)} problems: " + "; ".join(p.message for p in problems)
            hint = "each problem is listed with its own hint"
        super().__init__(message, hint, code=code or first.code)
        self.problems = problems
