"""One cross-review round: another profile reads the verified change, read-only, and bosun judges its answer.

The reviewer runs in the run's worktree as a ``review``-mode turn (the kernel makes the worktree
read-only for it, :func:`bosun.engine.attempts.kernel_read_only`), on exactly the tree the verify
phase verified, with the task, the diff and the verification as its prompt. bosun then reads the
tree again: a reviewer that changed it is recorded as ``changed_tree``, whatever it answered.
Findings are checked against the tree (:mod:`bosun.engine.review_findings`). Each round is
appended to ``cross_review.json`` as soon as it ends, with its tokens, cost and time, so the
record says what the review cost even when a later step fails. The rounds' loop, with the worker's
revise turns between them, is :func:`bosun.engine.phases.review`; what the record means for the
verdict is :mod:`bosun.engine.review_verdict`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.contract import Mode
from bosun.core.errors import BosunError
from bosun.core.quoting import quoted
from bosun.engine import record
from bosun.engine import review_findings as rf
from bosun.engine.context import read_run_change

if TYPE_CHECKING:
    from bosun.core.config import Settings
    from bosun.core.contract import TaskContract
    from bosun.core.review_config import ReviewConfig
    from bosun.engine.checking import Checked
    from bosun.engine.context import RunContext
    from bosun.store.run import Run
    from bosun.workers.base import Usage


def new_record(config: ReviewConfig) -> dict[str, Any]:
    return {"config": config.model_dump(mode="json"), "rounds": [], "usage": None, "cost_usd": 0.0, "revise_rounds": 0}


def review_once(ctx: RunContext, run: Run, task: TaskContract, checked: Checked, config: ReviewConfig,
                number: int) -> dict[str, Any]:
    """Run the reviewer once on the verified tree; the round's record (not yet saved)."""
    from bosun.engine.attempts import run_attempts

    started = time.monotonic()
    settings = ctx.settings(Path(run.repo))
    entry: dict[str, Any] = {"round": number, "profile": config.profile, "adapter": None, "tree": checked.tree,
                             "diff_sha256": checked.diff_sha256, "status": rf.FAILED, "error": None, "summary": "",
                             "findings": [], "invalid_citations": [], "usage": None, "cost_usd": 0.0,
                             "duration_s": None, "reviewer_s": None, "reviewer_process_s": None, "revised": None}
    try:
        reviewer = settings.profile(str(config.profile))
    except BosunError as exc:
        entry["error"] = f"the reviewer profile cannot be used: {exc.message}"
        return _timed(entry, started)
    entry["adapter"] = reviewer.adapter
    if reviewer.name == run.profile:
        # The check at prepare refuses this; a fallback can still have made the reviewer the worker.
        entry["error"] = f"the reviewer {reviewer.name} is the profile that did the work; a worker does not review itself"
        return _timed(entry, started)
    prompt = rf.build_prompt(task, checked.diff.decode("utf-8", "replace"), checked.verification)
    review_task = task.model_copy(update={"mode": Mode.review})
    t0 = time.monotonic()
    outcome = run_attempts(ctx, settings, run, review_task, resume=None, profile_name=reviewer.name,
                           prompt_override=prompt, fresh_session=True)
    entry["reviewer_s"] = round(time.monotonic() - t0, 3)
    # The CLI process's own wall time: the round's duration beyond it is bosun's (bench/review_round.py).
    entry["reviewer_process_s"] = (outcome.result.process or {}).get("wall_s")
    entry["usage"] = outcome.usage.to_dict()
    entry["cost_usd"] = priced(outcome.usage, settings, reviewer.name)
    if read_run_change(run).tree != checked.tree:
        entry["status"], entry["error"] = rf.CHANGED_TREE, "the reviewer changed files in the worktree"
    elif not outcome.result.ok:
        said = quoted(outcome.result.error_message, 300) if outcome.result.error_message else "no answer"
        entry["error"] = f"the reviewer {outcome.result.status}: {said}"
    else:
        entry.update(rf.judge_answer(outcome.result.final_text, Path(run.worktree)))
    return _timed(entry, started)


def _timed(entry: dict[str, Any], started: float) -> dict[str, Any]:
    entry["duration_s"] = round(time.monotonic() - started, 3)
    return entry


def priced(usage: Usage, settings: Settings, profile_name: str) -> float:
    """What a turn cost: as its CLI reported, else at the profile's prices."""
    from bosun.engine.metrics import turn_cost

    return turn_cost(usage, settings, profile_name)


def add_round(run_id: str, doc: dict[str, Any], entry: dict[str, Any]) -> None:
    """Append a round and save the record, with the reviewer's totals."""
    from bosun.workers.base import Usage

    doc["rounds"].append(entry)
    total = Usage()
    for r in doc["rounds"]:
        total.add(Usage.from_event(r.get("usage") or {}))
    doc["usage"] = total.to_dict()
    doc["cost_usd"] = round(sum(float(r.get("cost_usd") or 0.0) for r in doc["rounds"]), 6)
    record.write_doc(run_id, record.CROSS_REVIEW, doc)


def note_revised(run_id: str, doc: dict[str, Any], revised: dict[str, Any]) -> None:
    """Record the worker's revise turn after the last round."""
    doc["rounds"][-1]["revised"] = revised
    doc["revise_rounds"] = sum(1 for r in doc["rounds"] if r.get("revised"))
    record.write_doc(run_id, record.CROSS_REVIEW, doc)


def to_revise(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings a round sends back to the worker: open P0/P1 of a review that finished."""
    from bosun.engine.review_verdict import at_least

    if entry.get("status") != rf.FINDINGS:
        return []
    return at_least(entry["findings"], "P1")
