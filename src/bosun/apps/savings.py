"""``bosun savings``: receipts summed over runs, estimates and measurements kept apart.

The estimate (metrics.json ``parent``) exists for every reported run. The measurement (``parent_measured``)
exists only where bosun could read the parent's own session log; its totals count those runs only.
"""

from __future__ import annotations

from pathlib import Path

from bosun.core.fileio import read_json
from bosun.core.paths import run_dir

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the read-only verbs avoid
if TYPE_CHECKING:
    from typing import Any

    from bosun.store.db import Store
    from bosun.store.run import Run


def _repo_key(repo: Path) -> str:
    from bosun.core.errors import BosunError
    from bosun.isolation.git import repo_root

    try:
        return str(repo_root(repo))
    except BosunError:
        return str(repo.resolve())


def _reread(store: Store, run: Run) -> bool:
    """A parent window still pending when the receipt was written is read again now."""
    from bosun.engine.context import RunContext
    from bosun.engine.run_report import reread_parent

    return reread_parent(RunContext(store), run)


def totals(store: Store, repo: Path | None = None, limit: int = 100_000) -> dict[str, Any]:
    key = _repo_key(repo) if repo is not None else None
    runs = [r for r in store.list_runs(limit=limit) if key is None or r.repo == key]
    est = {"runs": 0, "parent_direct_tokens": 0, "parent_actual_tokens": 0, "saving_usd": 0.0}
    meas = {"runs": 0, "parent_tokens": 0, "parent_cost_usd": 0.0, "saving_usd": 0.0}
    worker = {"runs": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    not_measured: dict[str, int] = {}
    for run in runs:
        metrics = read_json(run_dir(run.id) / "metrics.json", None)
        if not isinstance(metrics, dict):
            continue
        if (metrics.get("parent_measured") or {}).get("pending") and _reread(store, run):
            metrics = read_json(run_dir(run.id) / "metrics.json", metrics)
        w = metrics.get("worker") or {}
        usage = w.get("usage") or {}
        worker["runs"] += 1
        worker["input_tokens"] += int(usage.get("input_tokens") or 0)
        worker["output_tokens"] += int(usage.get("output_tokens") or 0)
        worker["cost_usd"] += float(w.get("cost_usd") or 0.0)
        p = metrics.get("parent") or {}
        if p:
            est["runs"] += 1
            est["parent_direct_tokens"] += int(p.get("parent_direct_tokens") or 0)
            est["parent_actual_tokens"] += int(p.get("parent_actual_tokens") or 0)
            est["saving_usd"] += float(p.get("saving_usd") or 0.0)
        m = metrics.get("parent_measured") or {}
        if m.get("measured"):
            meas["runs"] += 1
            meas["parent_tokens"] += int((m.get("tokens") or {}).get("total_tokens") or 0)
            meas["parent_cost_usd"] += float(m.get("cost_usd") or 0.0)
            meas["saving_usd"] += float(m.get("saving_usd") or 0.0)
        elif m:
            reason = str(m.get("reason") or "unknown")
            not_measured[reason] = not_measured.get(reason, 0) + 1
    for d in (est, meas, worker):
        for k, v in d.items():
            if isinstance(v, float):
                d[k] = round(v, 6)
    return {
        "repo": key,
        "runs": len(runs),
        "worker": worker,
        "parent_estimated": est,
        "parent_measured": meas,
        "not_measured": not_measured,
        "note": "estimated: what the parent would have read and written itself, minus what it read from bosun; "
                "measured: the parent's tokens from its own session log between delegate and the end of its review",
    }
