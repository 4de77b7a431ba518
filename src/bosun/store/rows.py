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
    data: RunData


class RunData(TypedDict, total=False):
    """The run's ``data`` record: every key, typed (their writers: ``store.data_fields.WRITERS``).
    Records written before a key existed lack it, so every key may be absent."""

    snapshot: bool  # the user's uncommitted work was carried into the start commit
    mode: str
    task_source: str | None
    source_head_at_start: str
    uncommitted_at_start: Any
    routing: dict[str, Any]
    holdout: dict[str, Any]  # {paths, full_start}: the tests kept from the worker (tests: extend)
    caller: str | None
    remote: bool
    view_objects: str
    environment: Any  # what set-up made: paths of the environment
    pooled: dict[str, Any]  # {path, setup_key}: the pool slot the run took
    ports: dict[str, Any] | None  # the leased port block
    setup_key: str | None
    plan_id: str | None
    plan_task: str | None
    bosun_pid: int | None
    worker_pid: int | None
    worker_window: list[float]  # [start, end] of the worker step, on the boot clock
    sandbox: dict[str, Any]
    live_usage: dict[str, Any]
    worker: dict[str, Any]
    usage: dict[str, Any]
    user_git_tampered: dict[str, Any]
    cancel_requested: bool
    verification_passed: bool | None
    gates_ok: bool
    verified_tree: str
    review_escalate: bool
    review_reasons: list[str]
    review_usage: dict[str, Any] | None
    read_only_violation: Any
    answer_verified: Any
    acknowledged: dict[str, Any] | None  # {by, codes, at}
    review: dict[str, Any] | None
    waivers: dict[str, str]
    approved_diff_sha256: str
    approved_tree: str
    reverified: Any
    landing_commit: str
    landing_author_note: str | None
    records_removed_at: float
    driver_pid: int | None
    driver_start: int | None
    parent_meter: Any
    parent_measured: dict[str, Any] | None
    error: dict[str, Any] | None  # {code, message, hint}
