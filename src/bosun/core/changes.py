"""The shape of a worker's change, shared by isolation (which computes it) and gates (which judge it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class FileChange:
    """One path touched by the change, relative to the worktree's start commit.

    ``status`` is git's letter: A added, M modified, D deleted, R renamed, T type change.
    Modes are git's octal strings ("100644", "100755", "120000" for a symlink, "000000" when absent).
    ``added``/``deleted`` count lines; both are 0 for binary files, with ``binary`` set.
    """

    path: str
    status: str
    added: int = 0
    deleted: int = 0
    binary: bool = False
    old_path: str | None = None
    old_mode: str = "000000"
    new_mode: str = "000000"

    @property
    def is_symlink(self) -> bool:
        return self.new_mode == "120000" or self.old_mode == "120000"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GateResult:
    """One gate's judgement. ``ok`` False refuses the change. ``review`` lists what a green gate found
    that only a person can judge (an honest fix of a wrong expected value looks exactly like a cheat):
    ``{"code", "sentence"}`` each, and every one makes the run's verdict "needs review"."""

    code: str
    ok: bool
    detail: str = ""
    waived: bool = False
    waiver_reason: str | None = None
    review: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.review:
            del out["review"]  # records stay as they were for gates with nothing to review
        return out
