"""The shape of a worker's change, shared by isolation (which computes it) and gates (which judge it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
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
    code: str
    ok: bool
    detail: str = ""
    waived: bool = False
    waiver_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
