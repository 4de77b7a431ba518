"""metrics.json and report.md for a run: what happened, what passed, what it cost, what it saved."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.core.fileio import read_json, write_json_atomic, write_text_atomic
from bosun.core.outcomes import command_passed
from bosun.core.quoting import quoted
from bosun.core.states import shown_label
from bosun.engine import record
from bosun.engine import review_record as rr
from bosun.engine.metrics import cost_usd, parent_savings
from bosun.engine.results import run_result
from bosun.engine.turns import cost_by_rung, repairs_used
from bosun.engine.verdict import one_line
from bosun.parents.meter import measured_receipt, read_again
from bosun.workers.base import Usage

if TYPE_CHECKING:
    from bosun.engine.context import RunContext
    from bosun.store.run import Run


def _base_files_text(run: Run, changed: list[str]) -> str:
    from bosun.isolation.blobs import BlobReader
    from bosun.isolation.git import git_env

    parts = []
    with BlobReader(Path(run.repo), git_env()) as blobs:
        for path in changed[:200]:
            data = blobs.read(run.start_commit, path)
            if data is not None:
                parts.append(data.decode("utf-8", "replace"))
    return "\n".join(parts)


def diff_stats(diff_text: str) -> dict[str, int]:
    added = sum(1 for ln in diff_text.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    deleted = sum(1 for ln in diff_text.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    files = sum(1 for ln in diff_text.splitlines() if ln.startswith("diff --git "))
    return {"files": files, "added_lines": added, "deleted_lines": deleted, "bytes": len(diff_text.encode())}


def _changed_paths(diff_text: str) -> list[str]:
    out = []
    for ln in diff_text.splitlines():
        if ln.startswith("--- a/"):
            out.append(ln[6:])
    return out


def _reviewer(data: Any) -> str | None:
    """The cross-reviewer's profile: its turns are attempts of the run, not of its worker."""
    return (data.review_config or {}).get("profile")


def build_metrics(ctx: RunContext, run: Run) -> dict[str, Any]:
    rdir = paths.run_dir(run.id)
    settings = ctx.settings(Path(run.repo))
    data = run.data
    usage = Usage.from_event(data.usage or {})
    try:
        prices = settings.profile(run.profile).prices
    except Exception:  # noqa: BLE001 - a profile removed from config since the run: price unknown
        prices = None
    # Every turn the run took, each priced at its own profile's prices when it ran (a fallback's
    # turns cost what that profile costs); a run recorded before that: its usage at its profile's.
    worker_cost = float(data.cost_usd) if data.cost_usd is not None else cost_usd(usage, prices) if prices else 0.0
    diff_path = rdir / record.DIFF
    diff_text = diff_path.read_text("utf-8", "replace") if diff_path.exists() else ""
    from bosun.engine.history import active_seconds

    transitions = ctx.store.transitions(run.id, notes=False)
    result = run_result(run, brief=True)
    returned = json.dumps(result, separators=(",", ":"))
    review = rr.read(run.id)
    # The cross-reviewer is a worker too: what it cost comes off the saving, as the worker's cost does.
    worker_side = round(worker_cost + rr.cost(review), 6)
    estimate = parent_savings(
        _base_files_text(run, _changed_paths(diff_text)), diff_text, returned, settings.parent_prices, worker_side
    )
    return {
        "run_id": run.id,
        "state": run.state,
        # The one verdict (engine/verdict.py), as `show --json` and every other surface has it.
        "verdict": result["verdict"],
        "verdict_line": one_line(result["verdict"]),
        "profile": run.profile,
        # Working time (engine/history.active_seconds): not the time it waited for a person.
        "duration_s": active_seconds(transitions),
        "worker": {
            "usage": usage.to_dict(),
            "cost_usd": worker_cost,
            "cost_reported_by_cli_usd": usage.cost_usd,
            "prices_per_million": prices.model_dump() if prices else None,
            "attempts": sum(1 for a in ctx.store.attempts(run.id) if a.get("profile") != _reviewer(data)),
            # Repair rounds and the ladder's rungs (engine/repair.py): all in cost_usd, so in the saving too.
            "repairs": repairs_used(data.turns),
            "cost_by_rung": cost_by_rung(data.turns) if len({t.get("profile") for t in data.turns or []}) > 1 else None,
        },
        "review": rr.metrics(review),
        "worker_side_cost_usd": worker_side,
        "diff": diff_stats(diff_text),
        "parent": estimate,
        # Present when the parent was metered (delegated through `bosun mcp`): measured, not estimated.
        "parent_measured": measured_receipt(data.parent_measured, estimate, settings.parent_prices, worker_side),
    }


def write_report(ctx: RunContext, run: Run) -> dict[str, Any]:
    read_again(ctx.store, run)  # the parent's window, pending when its review ended, may be complete now
    rdir = paths.run_dir(run.id)
    metrics = build_metrics(ctx, run)
    write_json_atomic(rdir / record.METRICS, metrics)
    from bosun.core.redaction import redact_text

    write_text_atomic(rdir / record.REPORT, redact_text(render_markdown(ctx, run, metrics)))
    return metrics


def reread_parent(ctx: RunContext, run: Run) -> bool:
    """The receipt is being read: a parent window still pending is read again, and the receipt written
    anew once it is complete. True when it was."""
    if not read_again(ctx.store, run):
        return False
    write_report(ctx, run)
    return True


def render_markdown(ctx: RunContext, run: Run, metrics: dict[str, Any]) -> str:
    rdir = paths.run_dir(run.id)
    gates = (read_json(rdir / record.GATES, {}) or {}).get("gates", [])
    verification = read_json(rdir / record.VERIFICATION, {}) or {}
    lines = [f"# bosun run {run.id}: {run.title}", ""]
    lines.append(f"- verdict: **{metrics.get('verdict_line') or one_line(None)}**")
    lines += [f"  - {r['code']}: {r['sentence']}" for r in (metrics.get("verdict") or {}).get("reasons") or []]
    lines.append(f"- state: **{shown_label(run.state, run.merged_commit, run.data.to_dict())}**")
    lines.append(f"- profile: {run.profile} ({run.profile_reason or ''})")
    lines.append(f"- source: {run.source_branch} @ {run.base[:12]}; worktree branch {run.branch}")
    merged = run.merged_commit
    if merged:
        lines.append(f"- merged: {merged[:12]}")
    lines.append(f"- diff: {metrics['diff']['files']} files, +{metrics['diff']['added_lines']} "
                 f"-{metrics['diff']['deleted_lines']}, sha256 {run.diff_sha256 or '-'}")
    err = run.data.error
    if err:
        lines.append(f"- error: {err.get('code')}: {err.get('message')}")
    lines += ["", "## Verification (run by bosun)", ""]
    if not verification.get("commands"):
        lines.append("No verify commands: nothing was checked.")
    for c in verification.get("commands", []):
        mark = "PASS" if command_passed(c) else "FAIL"
        lines.append(f"- {mark} `{' '.join(c['argv'])}` exit {c.get('exit_code')} in {c.get('duration_s')}s")
    if verification.get("proof"):
        lines.append(f"- proof: {verification['proof']}")
    lines += ["", "## Gates", ""]
    for g in gates:
        lines.append(f"- {'ok  ' if g['ok'] else 'FAIL'} {g['code']}: {g.get('detail', '')}")
    lines += review_markdown(rr.read(run.id))
    w, p = metrics["worker"], metrics["parent"]
    lines += ["", "## Receipt", ""]
    u = w["usage"]
    lines.append(f"- worker tokens: {u['input_tokens']} in ({u['cached_input_tokens']} cached), "
                 f"{u['output_tokens']} out ({u['reasoning_tokens']} reasoning); cost ${w['cost_usd']:.4f}")
    lines += _turns_markdown(run.data.turns, w.get("cost_by_rung"))
    review = metrics.get("review")
    if review:
        lines.append(f"- cross-review by {review['profile']}: ${review['cost_usd']:.4f}; worker side in all "
                     f"${metrics['worker_side_cost_usd']:.4f}")
    lines.append(f"- parent would have spent ~{p['parent_direct_tokens']} tokens; it reads "
                 f"{p['parent_actual_tokens']} from bosun (compression {p['compression']}x)")
    lines.append(f"- estimated saving at parent prices ({p['parent_prices_date']}): ${p['saving_usd']:.4f}")
    m = metrics.get("parent_measured")
    if m and m.get("measured"):
        lines.append(f"- measured: the parent ({m.get('agent')}) spent {m['tokens']['total_tokens']} tokens between "
                     f"delegate and the end of its review (${m['cost_usd']:.4f}); measured saving ${m['saving_usd']:.4f}")
    elif m:
        lines.append(f"- parent tokens not measured: {m.get('reason')}")
    lines += ["", "## History", ""]
    for t in ctx.store.transitions(run.id):
        when = time.strftime("%H:%M:%S", time.gmtime(t["at"]))
        lines.append(f"- {when} {t['from_state'] or '-'} -> {t['to_state']} (pid {t['pid']}): {t['reason']}")
    return "\n".join(lines) + "\n"


def _turns_markdown(turns: list[dict[str, Any]] | None, rungs: list[dict[str, Any]] | None) -> list[str]:
    """The receipt's line on repair rounds and rungs: the turns the cost above adds up, each rung's share."""
    if not turns or len(turns) < 2:
        return []
    kinds = [t.get("kind") for t in turns]
    line = (f"- worker turns: {len(turns)} ({kinds.count('repair')} repair, {kinds.count('escalation')} "
            "escalation), all in the cost above and in the saving below")
    if rungs:
        line += "; cost by rung: " + ", ".join(
            f"{r['profile']} ${r['cost_usd']:.4f} ({round(100 * r['share'])}%)" for r in rungs)
    return [line]


def review_markdown(doc: dict[str, Any] | None) -> list[str]:
    """The report's Cross-review section: a line per round, its findings under it, then the cost."""
    if doc is None:
        return []
    lines = ["", "## Cross-review", ""]
    for entry in rr.rounds(doc):
        found = rr.findings(entry)
        cost = float(entry.get("cost_usd") or 0.0)
        lines.append(f"- round {entry.get('round')}: {entry.get('profile')}, {entry.get('status')}, "
                     f"{rr.severity_text(found)}, ${cost:.4f}, {entry.get('duration_s')}s"
                     + (f"; {entry['error']}" if entry.get("error") else ""))
        if entry.get("summary"):
            lines.append(f"  - summary: {entry['summary']}")
        lines += [f"  - {finding_markdown(f)}" for f in found]
    n = len(rr.rounds(doc))
    lines.append(f"- review cost ${rr.cost(doc):.4f} over {n} round{'' if n == 1 else 's'}; {rr.revised_text(doc)}")
    return lines


def finding_markdown(f: dict[str, Any]) -> str:
    """``P1 src/calc.py:2: claim (fix: ...)``, marked when the cited line is not in the tree."""
    text = f"{f.get('severity')} {rr.where(f)}: {quoted(f.get('claim') or '', 1000)}"
    if f.get("suggested_fix"):
        text += f" (fix: {quoted(f['suggested_fix'], 1000)})"
    if f.get("citation"):
        text += f" **[citation invalid: {f['citation']}]**"
    return text
