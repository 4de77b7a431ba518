"""The typed run: one object a verb loads once and carries through its phases.

``Run`` is a row of the ``runs`` table with its JSON ``data`` column decoded into ``RunData``, a
record whose every field is declared, with its one writer, in ``store.data_fields.WRITERS``. The
store builds a ``Run`` from a row (``Run.from_row``), persists only the fields a writer names
(``Store.write`` / ``Store.set_columns``, which update the object as well, so a verb does not read the
row back), and gives the record to JSON readers in the shape it always had (``Run.to_dict``).

Plain classes with ``__slots__`` rather than dataclasses: ``bosun list`` and ``bosun show`` read runs,
and their start-up does not pay for importing ``dataclasses`` (and ``inspect``) for this.

A record is versioned (``data.format_version``): records written before the version existed (1) are
read as they are, their undeclared keys dropped; see :func:`upgrade`.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing's would import typing, which the fast read paths avoid
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FORMAT_VERSION = 2


class RunData:
    """The run's ``data`` record: every key, typed; a key a record lacks reads as ``None``. Each
    field's writer is declared in ``store.data_fields.WRITERS`` (a test keeps the two the same)."""

    format_version: int | None  # the record's shape (FORMAT_VERSION); None: written before versions
    snapshot: bool | None  # the user's uncommitted work was carried into the start commit
    mode: str | None
    task_source: str | None
    source_head_at_start: str | None
    uncommitted_at_start: Any
    routing: dict[str, Any] | None
    holdout: dict[str, Any] | None  # {paths, full_start}: the tests kept from the worker (tests: extend)
    caller: str | None
    remote: bool | None
    review_config: dict[str, Any] | None  # {profile, rounds, block_on}: the cross-review this run gets
    view_objects: str | None
    environment: Any  # what set-up made: paths of the environment
    pooled: dict[str, Any] | None  # {path, setup_key}: the pool slot the run took
    ports: dict[str, Any] | None  # the leased port block
    setup_key: str | None
    plan_id: str | None
    plan_task: str | None
    bosun_pid: int | None
    worker_pid: int | None
    worker_window: list[float] | None  # [start, end] of the worker step, on the boot clock
    sandbox: dict[str, Any] | None
    live_usage: dict[str, Any] | None
    worker: dict[str, Any] | None
    usage: dict[str, Any] | None  # every worker turn the run took, summed
    cost_usd: float | None  # what those turns cost, each priced at its own profile's prices (or as its CLI said)
    turns: list[dict[str, Any]] | None  # the first turn, each repair and each rung's: [{rung, profile, kind, cost_usd, ...}]
    user_git_tampered: dict[str, Any] | None
    user_files_tampered: dict[str, Any] | None  # modes, owners or flags of the user's files a worker changed
    cancel_requested: bool | None
    verification_passed: bool | None
    gates_ok: bool | None
    verified_tree: str | None
    uncommitted_overlap: dict[str, Any] | None  # {paths, checkout}: the user's uncommitted files the change touches
    review_escalate: bool | None
    review_reasons: list[str] | None
    review_usage: dict[str, Any] | None
    read_only_violation: Any
    answer_verified: Any
    acknowledged: dict[str, Any] | None  # {by, codes, at}
    review: dict[str, Any] | None
    waivers: dict[str, str] | None
    approved_diff_sha256: str | None
    approved_tree: str | None
    reverified: Any
    landing_commit: str | None
    landing_pending: dict[str, Any] | None  # {branch, head, merged, landing}: recorded before the branch moves
    landing_author_note: str | None
    landing_refused: dict[str, Any] | None  # {code, message, hint, at}: the last `integrate` was refused
    records_removed_at: float | None
    reverted: dict[str, Any] | None  # {commit | run, branch, landing, at}: the revert of the landing commit
    revert_of: dict[str, Any] | None  # {run, landing}: this run holds the revert of that run's landing commit
    applied: list[dict[str, Any]] | None  # [{branch, commit, reverified, at}]: the change landed on other branches
    driver_pid: int | None
    driver_start: int | None
    parent_meter: Any
    parent_measured: dict[str, Any] | None
    error: dict[str, Any] | None  # {code, message, hint}

    __slots__ = tuple(__annotations__)  # noqa: PLE0237  (the annotations above are the fields)

    def __init__(self, doc: Mapping[str, Any] | None = None) -> None:
        doc = doc or {}
        for name in self.__slots__:
            setattr(self, name, doc.get(name))

    def to_dict(self) -> dict[str, Any]:
        """The record as stored and as JSON readers see it: the fields that are set."""
        out = {}
        for name in self.__slots__:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    def __repr__(self) -> str:
        return f"RunData({self.to_dict()!r})"


DATA_FIELDS: tuple[str, ...] = RunData.__slots__


class Run:
    """A run as the store holds it: the ``runs`` columns, and the decoded ``data`` record."""

    id: str
    state: str
    title: str
    repo: str
    source_branch: str
    base: str  # the commit of the user's branch the run started from
    start_commit: str  # base, or the snapshot of the user's dirty tree (less any held-out tests)
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

    __slots__ = tuple(__annotations__)  # noqa: PLE0237

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Run:
        """A ``runs`` row (``data`` as its JSON text or already decoded), upgraded to this version."""
        run = cls.__new__(cls)
        for name in COLUMNS:
            setattr(run, name, row.get(name))
        raw = row.get("data")
        doc = json.loads(raw or "{}") if isinstance(raw, (str, bytes)) or raw is None else dict(raw)
        run.data = RunData(upgrade(doc))
        run.files_changed = run.files_changed or 0
        return run

    def to_dict(self) -> dict[str, Any]:
        """The run as ``--json``, MCP and the dashboard give it: its columns, and ``data``."""
        out: dict[str, Any] = {name: getattr(self, name) for name in COLUMNS}
        out["data"] = self.data.to_dict()
        return out

    def with_state(self, state: str) -> Run:
        """A copy in another state (the verdict of a run as it would be once verified)."""
        copy = Run.from_row({**{name: getattr(self, name) for name in COLUMNS}, "data": self.data.to_dict()})
        copy.state = state
        return copy

    def __repr__(self) -> str:
        return f"Run({self.id!r}, {self.state!r})"


COLUMNS: tuple[str, ...] = tuple(name for name in Run.__slots__ if name != "data")


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """A stored record in this version's shape. Version 1 (no ``format_version``) had the same keys,
    and a few that were never declared (written by releases before the declaration): they are
    dropped, as nothing reads them."""
    if doc.get("format_version") == FORMAT_VERSION:
        return doc
    upgraded = {key: value for key, value in doc.items() if key in DATA_FIELDS}
    upgraded["format_version"] = FORMAT_VERSION
    return upgraded


def data_json(data: RunData | Mapping[str, Any]) -> str:
    doc = data.to_dict() if isinstance(data, RunData) else dict(data)
    doc.setdefault("format_version", FORMAT_VERSION)
    return json.dumps(doc, default=str)
