"""The shapes of the rows the store returns, for the type checker (the fast CLI paths import this
module only under ``TYPE_CHECKING``)."""

from __future__ import annotations

from typing import Any, TypedDict


class RunRow(TypedDict):
    """A row of the ``runs`` table as the store returns it (``data`` decoded from its JSON)."""

    id: str
    state: str
    title: str
    repo: str
    source_branch: str
    base: str  # the commit of the user's branch the run started from
    start_commit: str  # base, or the snapshot of the user's dirty tree
    branch: str
    worktree: str
    profile: str | None
    profile_reason: str | None
    diff_sha256: str | None
    files_changed: int
    session_id: str | None
    merged_commit: str | None
    plan_id: str | None
    created_at: float
    updated_at: float
    data: dict[str, Any]  # usage, verification summary, error, waivers, ...
