"""The shape of the result object (``--json`` of every run verb, docs/cli.md), for the type checker.

Imported only under ``TYPE_CHECKING`` by the fast CLI paths (it needs ``typing`` at run time)."""

from __future__ import annotations

from typing import Any, TypedDict


class _RunResultKeys(TypedDict):
    id: str
    state: str
    verdict: dict[str, Any] | None  # {outcome, reasons: [{code, sentence}], acknowledged}; None until judged
    title: str
    profile: str | None
    profile_reason: str | None
    base: str
    source_branch: str
    branch: str
    worktree: str
    diff_sha256: str | None
    files_changed: int
    gates: list[dict[str, Any]]  # {code, ok, detail[, waived][, review]}
    verification: dict[str, Any] | None
    usage: dict[str, Any] | None
    cost_usd: float | None
    merged_commit: str | None
    error: dict[str, Any] | None  # {code, message, hint}: only while it describes the run's state
    run_dir: str
    untrusted_fields: list[str]  # paths of the fields above that hold a worker's text (core/quoting.py)


class RunResult(_RunResultKeys, total=False):
    """The keys every result has, and those only some runs (or the full, not brief, form) have."""

    review: dict[str, Any]  # the self-review's verdict
    cross_review: dict[str, Any]  # {config, profile, rounds, revise_rounds, open_p0_p1, cost_usd, of_current_diff}
    answer_verified: bool | None  # an explore/review answer's citations, all backed
    citations: dict[str, Any]
    read_only_violation: dict[str, Any]
    warnings: list[dict[str, str]]  # [{code, message, hint}]: what would stop integrate (OVERLAPS_UNCOMMITTED)
    landing_refused: dict[str, Any]  # {code, message, hint, at}: the last integrate was refused
    sandbox: dict[str, Any]
    unenforced: list[str]
    reverted: dict[str, Any]  # {commit | run, branch, landing, at}
    revert_of: dict[str, Any]  # {run, landing, conflicts}
    applied: list[dict[str, Any]]  # [{branch, commit, reverified, at}]
    turns: list[dict[str, Any]]  # [{rung, profile, kind, refused_for, evidence, resumed, status, usage, cost_usd}]
    cost_by_rung: list[dict[str, Any]]  # [{profile, turns, cost_usd, share}]: a run that climbed a ladder
    savings: dict[str, Any] | None
    final_message: str | None
