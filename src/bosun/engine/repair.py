"""Repair rounds and the escalation ladder: a change refused for the work itself goes back to a worker
with the evidence, and the result is verified again from scratch.

Invariants:

* **A cheat is never coached.** Only a refusal whose every reason is about the work
  (``core/refusal_kinds.repairable``) gets another turn; a refusal about the worker's honesty, the
  circumstances, or a code bosun does not know ends the run as it stands.
* **Every turn is verified like the first.** A repair or a rung's turn goes through the whole verify
  phase (``phases.verify``): the change is computed again, the verify commands run on exactly those
  bytes, every gate judges it. Nothing of an earlier verification is carried over.
* **Every turn is paid for and recorded.** The run's usage and cost add up over every turn
  (``phases._finish_attempt``); each turn here is also listed in the run's ``turns`` (profile, rung,
  what it was refused for, the evidence it got, its own usage and cost), which the receipt's cost by
  rung and the track record read.
* **The worker sees only what it may.** The evidence is ``engine/evidence.gather``'s: hidden tests as a
  count, output bounded, redacted and quoted as data.

A repair turn resumes the worker's session where its CLI gave one (the cross-review's revise path,
``phases.attempt(resume=...)``); otherwise the turn carries the task too. When a rung's repair rounds
end refused for the work, the next rung of the profile's ``escalate_to`` ladder takes the same
worktree (the refused change in it) in a fresh session, with the task and the evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import refusal_kinds, states
from bosun.core.contract import Mode, TaskContract
from bosun.engine import phases
from bosun.engine.stops import stopping

if TYPE_CHECKING:
    from bosun.core.config import Settings
    from bosun.engine.attempts import Outcome
    from bosun.engine.checking import Checked
    from bosun.engine.context import RunContext
    from bosun.engine.evidence import Evidence
    from bosun.store.run import Run

REPAIR_INTRO = ("bosun verified your change and refused it. Fix the code so the task is done and the verify "
                "commands pass; keep the tests as they are (a change that weakens, skips or rewrites them is "
                "refused and never repaired).")
ESCALATION_INTRO = ("Another worker tried this task and bosun refused its change. Its change is still in the "
                    "files of this repository: keep what is right, fix or undo what is wrong.")


def rounds_for(task: TaskContract, settings: Settings) -> int:
    """Repair rounds per rung: the task's ``repair``, else bosun.toml's (default 1). Only code runs."""
    if task.mode != Mode.code:
        return 0
    return task.repair if task.repair is not None else settings.repair


def rungs_for(settings: Settings, profile: str) -> list[str]:
    """The profiles a run climbs, from the one that works first up its ``escalate_to`` ladder."""
    from bosun.core.config import ladder

    return [p.name for p in ladder(settings, profile)]


def _first_turn(ctx: RunContext, run: Run) -> None:
    """The worker turn the run was worked with, as the first entry of its ``turns`` (what the attempt
    phase recorded: the run's usage and cost so far are that turn's)."""
    if run.data.turns:
        return
    entry = {"rung": 0, "profile": run.profile, "kind": "work", "status": (run.data.worker or {}).get("status"),
             "usage": run.data.usage or {}, "cost_usd": float(run.data.cost_usd or 0.0)}
    ctx.store.write(run, turns=[entry])


def verify_repair_review(ctx: RunContext, run: Run, task: TaskContract, on_event: Any = None) -> None:
    """What follows the worker's turn of a worked run the caller holds: verification with its repair
    rounds and ladder, then the cross-review of what passed (delegate, the MCP driver and plans)."""
    checked = verify_and_repair(ctx, run, task, on_event)
    if checked is not None:
        with stopping(ctx, run):
            phases.review(ctx, run, task, checked, on_event=on_event)


def verify_and_repair(ctx: RunContext, run: Run, task: TaskContract, on_event: Any = None) -> Checked | None:
    """Verify the worked run; while it is refused for the work alone and rounds or rungs remain, give a
    worker the evidence and verify its new change. Returns what passed verification, or None when the
    run ends rejected (or the worker's turn stopped it: failed, blocked, cancelled)."""
    settings = ctx.settings(Path(run.repo))
    _first_turn(ctx, run)
    rounds = rounds_for(task, settings)
    worked_by = run.profile or ""  # the profile whose turn is verified first (a fallback's, when one answered)
    rungs = rungs_for(settings, worked_by) if task.mode == Mode.code and worked_by else [worked_by]
    rung, used = 0, 0
    while True:
        checked: Checked | None = None
        with stopping(ctx, run):
            checked = phases.verify(ctx, run, task)
        if checked is not None or run.state != states.REJECTED:
            return checked
        reasons = _refusal(run)
        if not refusal_kinds.repairable(r["code"] for r in reasons):
            return None  # a cheat attempt, or nothing a worker can change: never coached
        if used < rounds:
            used += 1
            kind, profile = "repair", run.profile
        elif rung + 1 < len(rungs):
            rung, used = rung + 1, 0
            kind, profile = "escalation", rungs[rung]
            ctx.store.set_columns(run, session_id=None)  # the next rung's CLI cannot resume another's session
        else:
            return None
        evidence = _evidence(run, reasons)
        resumed = kind == "repair" and bool(run.session_id)
        prompt = turn_prompt(task, evidence, kind, carry_task=not resumed)
        entry = {"rung": rung, "profile": profile, "kind": kind, "resumed": resumed,
                 "refused_for": [r["code"] for r in reasons], "evidence": evidence.to_record()}
        outcome: Outcome | None = None
        refused = ", ".join(dict.fromkeys(r["code"] for r in reasons))
        try:
            with stopping(ctx, run, after=f"bosun refused the change ({refused}) and its {kind} turn did not "
                                          f"finish: "):
                outcome = phases.attempt(ctx, run, task, resume=prompt if resumed else None, prompt=prompt,
                                         profile_name=profile, on_event=on_event)
        finally:  # a turn that stopped the run is listed too (its cost is in the run's, as every turn's)
            if outcome is not None:
                entry["profile"] = outcome.profile  # a fallback may have answered
                _add_turn(ctx, run, entry, outcome)
            else:
                ctx.store.write(run, turns=[*(run.data.turns or []), {**entry, "status": run.state}])
        if run.state != states.WORKED:
            return None


def turn_prompt(task: TaskContract, evidence: Evidence, kind: str, carry_task: bool) -> str:
    """What a repair or a rung's turn reads: the task unless the session already holds it, then the
    evidence (bosun's reasons, the failing tests, their output quoted as data)."""
    from bosun.engine.prompt import render_prompt

    intro = ESCALATION_INTRO if kind == "escalation" else REPAIR_INTRO
    head = render_prompt(task) + "\n" if carry_task else ""
    return f"{head}# bosun: your change was refused\n\n{intro}\n\n{evidence.text()}"


def _refusal(run: Run) -> list[dict[str, str]]:
    """The refused verdict's reasons, read from the record the verify phase wrote."""
    verdict = phases.judge(run)
    if not verdict or verdict.outcome != "refused":
        return []
    return [{"code": str(r["code"]), "sentence": str(r.get("sentence") or "")} for r in verdict["reasons"]]


def _evidence(run: Run, reasons: list[dict[str, str]]) -> Evidence:
    from bosun.engine.evidence import gather

    hidden = list((run.data.holdout or {}).get("paths") or [])
    return gather(run.id, reasons, hidden)


def _add_turn(ctx: RunContext, run: Run, entry: dict[str, Any], outcome: Outcome) -> None:
    from bosun.engine.metrics import turn_cost

    settings = ctx.settings(Path(run.repo))
    entry = {**entry, "status": outcome.result.status, "usage": outcome.usage.to_dict(),
             "cost_usd": turn_cost(outcome.usage, settings, outcome.profile)}
    ctx.store.write(run, turns=[*(run.data.turns or []), entry])

