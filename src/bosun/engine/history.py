"""Run history: what every run produced, indexed for search, and its figures for savings and budgets.

The index is derived from the run records (the store row, ``task.json``, ``gates.json``,
``metrics.json``, ``diff.patch``, the attempts) and refreshed lazily: ``refresh`` indexes the runs
changed since the last refresh, so the engine never has to remember to update it. A search then
costs one FTS5 query.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from bosun.core.fileio import read_json
from bosun.core.paths import run_dir
from bosun.engine import review_record
from bosun.store.db import Store
from bosun.store.history import RunFilter, list_runs, refresh_start, save_index, stale_runs

TYPE_CHECKING = False  # not typing's: start-up of `bosun history`
if TYPE_CHECKING:
    from typing import Any

DIFF_HEADER = re.compile(r"^diff --git a/(.*?) b/(.*)$", re.MULTILINE)
# A big diff is read only this far for its paths (headers come first in each file's section).
DIFF_SCAN_BYTES = 2_000_000


def refresh(store: Store, batch: int = 500) -> int:
    """Index every run changed since the last refresh; returns how many were (re)indexed."""
    total = 0
    prices = _Prices()
    after = refresh_start(store)
    while True:
        runs = stale_runs(store, after, batch)
        if not runs:
            return total
        entries = [(run, document(store, run), facts(store, run, prices)) for run in runs]
        save_index(store, entries)
        total += len(runs)
        if len(runs) < batch:
            return total
        after = runs[-1]["updated_at"]  # ties at this stamp are indexed already, so skipped


def search(store: Store, flt: RunFilter, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    """Runs matching the filter (free text over title, prompt, final message, changed paths, gate
    details, cross-review findings and errors), newest first, each with a ``snippet`` of what matched."""
    refresh(store)
    runs = list_runs(store, flt, limit=limit, offset=offset)
    for run in runs:
        run["snippet"] = run.pop("_snippet", None)
    return runs


def document(store: Store, run: dict[str, Any]) -> dict[str, str]:
    """The searchable text of a run."""
    rdir = run_dir(run["id"])
    data = run.get("data") or {}
    task = (read_json(rdir / "task.json", {}) or {}).get("task") or {}
    gates = (read_json(rdir / "gates.json", {}) or {}).get("gates", [])
    errors = []
    err = data.get("error")
    if isinstance(err, dict):
        errors += [str(err.get("code") or ""), str(err.get("message") or ""), str(err.get("hint") or "")]
    for attempt in store.attempts(run["id"]):
        if attempt.get("error_message"):
            errors.append(f"{attempt.get('error_class') or ''} {attempt['error_message']}")
    return {
        "title": run.get("title") or "",
        "prompt": str(task.get("prompt") or ""),
        "final": str((data.get("worker") or {}).get("final_text") or ""),
        "paths": "\n".join(changed_paths(rdir)),
        # The cross-review's findings sit with the gates: both are checks of the change (no new column).
        "gates": "\n".join([*(f"{g.get('code')} {'ok' if g.get('ok') else 'FAILED'} {g.get('detail', '')}" for g in gates),
                            *filter(None, [review_record.search_text(review_record.read(run["id"]))])]),
        "errors": "\n".join(e for e in errors if e.strip()),
    }


def changed_paths(rdir: Path) -> list[str]:
    for name in ("diff.patch", "final.patch"):
        try:
            with (rdir / name).open("rb") as fh:
                text = fh.read(DIFF_SCAN_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        out: list[str] = []
        for a, b in DIFF_HEADER.findall(text):
            out.extend(p for p in dict.fromkeys((a, b)) if p not in out)
        return out
    return []


def facts(store: Store, run: dict[str, Any], prices: _Prices | None = None) -> dict[str, Any]:
    """The run's figures: duration, worker tokens and cost (the cross-reviewer's included: it is a
    worker too, and its cost comes off the saving), parent tokens (estimated and measured)."""
    rdir = run_dir(run["id"])
    data = run.get("data") or {}
    metrics = read_json(rdir / "metrics.json", {}) or {}
    gates = (read_json(rdir / "gates.json", {}) or {}).get("gates", [])
    verification = read_json(rdir / "verification.json", None) or {}
    usage = data.get("usage") or data.get("live_usage") or {}
    cost, reported = run_cost(run, metrics, prices or _Prices())
    review = reviewer_spend(run["id"], metrics)
    cost = round(cost + review["cost_usd"], 6)
    transitions = store.transitions(run["id"], notes=False)
    started = transitions[0]["at"] if transitions else run["created_at"]
    finished = transitions[-1]["at"] if transitions and transitions[-1]["to_state"] not in _RUNNING else None
    if finished is not None:
        # When its work ended: what came after (a person's approval, integrate) is not the run's time.
        finished = next((t["at"] for t in reversed(transitions) if t["from_state"] in _RUNNING), finished)
    busy = active_seconds(transitions) if finished else None
    parent = metrics.get("parent") or {}
    red = [g for g in gates if not g.get("ok") and not g.get("waived")]
    attempts = store.attempts(run["id"])
    return {
        "caller": data.get("caller"),
        "adapter": worker_adapter(run, attempts),
        "started_at": started,
        "ended_at": finished,
        "duration_s": busy,
        "input_tokens": int(usage.get("input_tokens") or 0) + review["input_tokens"],
        "output_tokens": int(usage.get("output_tokens") or 0) + review["output_tokens"],
        "worker_cost_usd": cost,
        "cost_reported": int(reported),
        "parent_direct_tokens": parent.get("parent_direct_tokens"),
        "parent_actual_tokens": parent.get("parent_actual_tokens"),
        "parent_measured_tokens": measured_parent_tokens(metrics.get("parent_measured") or data.get("parent_measured")),
        "parent_direct_cost_usd": parent.get("parent_direct_cost_usd"),
        "saving_usd": parent.get("saving_usd"),
        # Proven means what `show` says: the verify commands failed before the change and pass with it.
        "proven": int(verification.get("proven") is True),
        "gates_total": len(gates),
        "gates_failed": len(red),
    }


_RUNNING = ("prepared", "working", "worked")


def active_seconds(transitions: list[dict[str, Any]]) -> float:
    """How long bosun and the worker worked on the run: the time it spent preparing, working and being
    verified (``prepared``, ``working``, ``worked``), every round of it summed. Time a verified run
    waited for a person, or an approved one for ``integrate``, is not the run's duration."""
    total = 0.0
    for before, after in zip(transitions, transitions[1:], strict=False):
        if before["to_state"] in _RUNNING:
            total += after["at"] - before["at"]
    return round(total, 3)


def worker_adapter(run: dict[str, Any], attempts: list[dict[str, Any]]) -> str | None:
    """The CLI of the run's worker: its last attempt by the run's profile (a cross-reviewer's turns
    are attempts of the run too, by another profile)."""
    own = [a for a in attempts if a.get("profile") == run.get("profile")] or attempts
    return own[-1]["adapter"] if own else None


def measured_parent_tokens(value: Any) -> int | None:
    """Parent tokens the parent agent measured itself: a number, or an object with a token total."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, dict):
        if value.get("measured") is False:
            return None
        if isinstance(value.get("tokens"), dict):
            return measured_parent_tokens(value["tokens"])
        for key in ("tokens", "total_tokens", "parent_tokens"):
            if isinstance(value.get(key), int | float):
                return int(value[key])
        parts = [value.get(k) for k in ("input_tokens", "output_tokens")]
        if any(isinstance(p, int | float) for p in parts):
            return int(sum(p for p in parts if isinstance(p, int | float)))
    return None


def run_cost(run: dict[str, Any], metrics: dict[str, Any], prices: _Prices) -> tuple[float, bool]:
    """What the run's worker cost: as the CLI reported it when it did, else priced at the profile's
    prices (the receipt's figure when the run has one). The bool says whether the CLI reported it."""
    data = run.get("data") or {}
    usage = data.get("usage") or data.get("live_usage") or {}
    if data.get("cost_usd") is not None:  # every turn the run took, as recorded with its usage
        return float(data["cost_usd"]), usage.get("cost_usd") is not None
    if usage.get("cost_usd") is not None:
        return float(usage["cost_usd"]), True
    worker = metrics.get("worker") or {}
    if worker.get("cost_usd") is not None:
        return float(worker["cost_usd"]), False
    return prices.cost(run, usage), False


def reviewer_spend(run_id: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """The run's cross-reviewer's tokens and cost: the receipt's figures, else the record's (a run
    reported before its review, or not reported yet); zero for a run without review."""
    review = metrics.get("review")
    if not isinstance(review, dict):
        doc = review_record.read(run_id)
        review = {"usage": doc.get("usage"), "cost_usd": review_record.cost(doc)} if doc else {}
    usage = review.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return {"input_tokens": int(usage.get("input_tokens") or 0), "output_tokens": int(usage.get("output_tokens") or 0),
            "cost_usd": float(review.get("cost_usd") or 0.0)}


class _Prices:
    """Profile prices per repo, loaded once per refresh (a profile removed since costs 0)."""

    def __init__(self) -> None:
        self._settings: dict[str, Any] = {}

    def cost(self, run: dict[str, Any], usage: dict[str, Any]) -> float:
        if not usage or not run.get("profile"):
            return 0.0
        from bosun.engine.metrics import cost_usd
        from bosun.workers.base import Usage

        repo = str(run.get("repo") or "")
        if repo not in self._settings:
            try:
                from bosun.core.config import load_settings

                self._settings[repo] = load_settings(Path(repo) if repo else None)
            except Exception:  # noqa: BLE001 - a broken or vanished config prices nothing; history still works
                self._settings[repo] = None
        settings = self._settings[repo]
        profile = settings.profiles.get(run["profile"]) if settings is not None else None
        if profile is None:
            return 0.0
        return cost_usd(Usage.from_event(usage), profile.prices)


def parse_date(text: str, now: float | None = None) -> float:
    """``YYYY-MM-DD`` (UTC midnight), ``today``, or a relative ``7d`` / ``12h`` / ``2w`` before now."""
    from bosun.core.errors import BadInput

    now = time.time() if now is None else now
    text = text.strip().lower()
    if text == "today":
        return now - (now % 86400)
    m = re.fullmatch(r"(\d+)([hdw])", text)
    if m:
        return now - int(m.group(1)) * {"h": 3600, "d": 86400, "w": 7 * 86400}[m.group(2)]
    try:
        import calendar

        return float(calendar.timegm(time.strptime(text, "%Y-%m-%d")))
    except ValueError:
        raise BadInput(
            f"cannot read the date {text!r}", "use YYYY-MM-DD, 'today', or a span like 7d, 12h, 2w", code="BAD_DATE"
        ) from None
