"""Every key of a run's ``data`` record, with the one module that may write it.

``Store.merge_data`` refuses a key that is not here, so a new field is declared before it is
written, and ``tests/store/test_run_data.py`` checks every ``merge_data(key=...)`` call against its
writers and these keys against the typed shape readers see (``store.run.RunData``). Written at
prepare (``insert_run``) means ``engine/phases.py:prepare`` set it once when the run was created.
Plain data, no imports: the store's fast read paths import this module.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's would import typing, which the fast read paths avoid
if TYPE_CHECKING:
    from collections.abc import Iterable

PREPARE = "engine.phases"  # the run's first record, written by prepare through insert_run

WRITERS: dict[str, tuple[str, ...]] = {
    # the record's shape, stamped by the store on every write (store/run.py: FORMAT_VERSION)
    "format_version": ("store.run",),
    # set once, when the run is created
    "snapshot": (PREPARE,),
    "mode": (PREPARE,),
    "task_source": (PREPARE,),
    "source_head_at_start": (PREPARE,),
    "uncommitted_at_start": (PREPARE,),
    "routing": (PREPARE,),
    "holdout": (PREPARE,),
    "caller": (PREPARE,),
    "remote": (PREPARE,),
    "review_config": (PREPARE,),
    "view_objects": ("engine.phases",),
    "environment": ("isolation.workspace",),
    "pooled": ("isolation.workspace",),
    "ports": ("isolation.workspace",),
    "setup_key": ("isolation.workspace",),
    "plan_id": ("plans.driver",),
    "plan_task": ("plans.driver",),
    # the worker step
    "bosun_pid": ("engine.phases",),
    "worker_pid": ("engine.locks",),
    "worker_window": ("engine.worker_guard",),
    "sandbox": ("engine.attempts",),
    "live_usage": ("engine.budget",),
    "worker": ("engine.phases",),
    "usage": ("engine.phases",),
    "cost_usd": ("engine.phases",),
    "turns": ("engine.repair",),
    "user_git_tampered": ("engine.worker_guard",),
    "user_files_tampered": ("engine.worker_guard",),
    "cancel_requested": ("engine.teardown",),
    # verification and the verdict's inputs
    "verification_passed": ("engine.phases",),
    "gates_ok": ("engine.phases",),
    "verified_tree": ("engine.phases",),
    "uncommitted_overlap": ("engine.phases",),
    "review_escalate": ("engine.checking",),
    "review_reasons": ("engine.checking",),
    "review_usage": ("engine.checking",),
    "read_only_violation": ("engine.approval",),
    "answer_verified": ("engine.approval",),
    # approval and landing
    "acknowledged": ("engine.approval",),
    "review": ("engine.approval",),
    "waivers": ("engine.approval",),
    "approved_diff_sha256": ("engine.approval",),
    "approved_tree": ("engine.approval",),
    "reverified": ("engine.integration",),
    "landing_commit": ("engine.integration",),
    "landing_pending": ("engine.integration",),
    "landing_author_note": ("engine.integration",),
    "landing_refused": ("engine.integration",),
    "records_removed_at": ("engine.gc",),
    # after landing: the change undone or carried to another branch
    "reverted": ("engine.undo_record",),
    "revert_of": ("engine.undo",),
    "applied": ("engine.apply_run",),
    # the parent side (MCP's background driver)
    "driver_pid": ("mcp.ops",),
    "driver_start": ("mcp.ops",),
    "parent_meter": ("mcp.ops",),
    "parent_measured": ("parents.meter",),
    # how the run stopped, when it did not succeed: recorded by a stop, cleared when the run goes on
    "error": ("engine.stops",),
}


def undeclared(keys: Iterable[str]) -> list[str]:
    """The keys not declared here (a field must be declared with its writer before it is written)."""
    return sorted(k for k in keys if k not in WRITERS)
