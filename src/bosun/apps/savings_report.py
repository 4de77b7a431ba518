"""Savings over time for the dashboard: what the workers cost, what the parent agent saved, and the time saved by parallelism.

Totals come from the history index (``bosun.engine.history``), one row of figures per run:

* worker tokens and cost (as the CLI reported it, else priced at the profile's prices), a
  cross-reviewer's included: it is a worker too;
* parent tokens *estimated* by the receipt (what the parent would have spent doing the change
  itself, and what it read from bosun instead) and *measured* when the parent reported its own
  usage for the run (``parent_measured`` in the run's data);
* compression = estimated direct tokens / tokens the parent read from bosun;
* proven runs = runs whose verify commands failed on the tree before the change and pass with it
  (``verification.proven``, what ``bosun show`` says), not merely runs whose verification passed;
* time saved by parallelism = the sum of the runs' durations minus the wall-clock time during which
  at least one of them was running.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any
from xml.sax.saxutils import escape

from bosun.engine.history import refresh
from bosun.store.db import Store
from bosun.store.history import facts_since


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    direct = sum(r["parent_direct_tokens"] or 0 for r in rows)
    actual = sum(r["parent_actual_tokens"] or 0 for r in rows if r["parent_direct_tokens"] is not None)
    measured = [r["parent_measured_tokens"] for r in rows if r["parent_measured_tokens"] is not None]
    busy = sum(r["duration_s"] or 0 for r in rows)
    wall = wall_clock([(r["started_at"], r["ended_at"]) for r in rows if r["ended_at"]])
    return {
        "runs": len(rows),
        "proven": sum(1 for r in rows if r["proven"]),
        "worker_input_tokens": sum(r["input_tokens"] for r in rows),
        "worker_output_tokens": sum(r["output_tokens"] for r in rows),
        "worker_tokens": sum(r["input_tokens"] + r["output_tokens"] for r in rows),
        "worker_cost_usd": round(sum(r["worker_cost_usd"] for r in rows), 6),
        "worker_cost_reported_runs": sum(1 for r in rows if r["cost_reported"]),
        "parent_estimated_direct_tokens": direct,
        "parent_estimated_actual_tokens": actual,
        "parent_estimated_saved_tokens": direct - actual,
        "parent_measured_tokens": sum(measured) if measured else None,
        "parent_measured_runs": len(measured),
        "compression": round(direct / actual, 2) if actual else None,
        "parent_direct_cost_usd": round(sum(r["parent_direct_cost_usd"] or 0 for r in rows), 6),
        "saving_usd": round(sum(r["saving_usd"] or 0 for r in rows), 6),
        "worker_time_s": round(busy, 1),
        "wall_time_s": round(wall, 1),
        "time_saved_by_parallelism_s": round(max(0.0, busy - wall), 1),
    }


def wall_clock(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of ``[start, end]`` intervals."""
    total, end = 0.0, None
    cur_start = 0.0
    for s, e in sorted(intervals):
        if end is None or s > end:
            if end is not None:
                total += end - cur_start
            cur_start, end = s, e
        else:
            end = max(end, e)
    if end is not None:
        total += end - cur_start
    return total


def report(store: Store, since: float | None = None, repo: str = "") -> dict[str, Any]:
    """Totals, per day, per ISO week and per profile."""
    refresh(store)
    rows = facts_since(store, since, repo=repo)
    by_day: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_week: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_profile: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        t = time.gmtime(r["started_at"])
        by_day[time.strftime("%Y-%m-%d", t)].append(r)
        year, week, _ = _iso(r["started_at"])
        by_week[f"{year}-W{week:02d}"].append(r)
        by_profile[r["profile"] or "-"].append(r)
    return {
        "since": since,
        "repo": repo or None,
        "totals": totals(rows),
        "per_day": [{"day": k, **_brief(v)} for k, v in sorted(by_day.items())],
        "per_week": [{"week": k, **_brief(v)} for k, v in sorted(by_week.items())],
        "by_profile": [{"profile": k, **_brief(v)} for k, v in sorted(by_profile.items())],
        "definitions": __doc__.split("\n\n", 1)[1].strip() if __doc__ else "",
    }


def _brief(rows: list[dict[str, Any]]) -> dict[str, Any]:
    t = totals(rows)
    keys = ("runs", "proven", "worker_tokens", "worker_cost_usd", "parent_estimated_saved_tokens",
            "parent_measured_tokens", "saving_usd", "compression")
    return {k: t[k] for k in keys}


def _iso(ts: float) -> tuple[int, int, int]:
    import datetime

    d = datetime.datetime.fromtimestamp(ts, tz=datetime.UTC).isocalendar()
    return d[0], d[1], d[2]


def human_duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {(s % 3600) // 60:02d}m"


def human_tokens(n: int | None) -> str:
    if n is None:
        return "-"
    if abs(n) >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if abs(n) >= 10_000:
        return f"{n / 1000:.0f}k"
    if abs(n) >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def usd(value: float) -> str:
    return ("-" if value < 0 else "") + f"${abs(value):,.2f}"


def card_svg(rep: dict[str, Any]) -> str:
    """A self-contained 600x314 SVG card (no external fonts, images or scripts) to share."""
    t = rep["totals"]
    since = rep.get("since")
    period = "since " + time.strftime("%Y-%m-%d", time.gmtime(since)) if since else "all time"
    comp = f"{t['compression']:g}x" if t["compression"] else "-"
    figures = [
        (human_tokens(t["parent_estimated_saved_tokens"]), "parent tokens saved (est.)"),
        (usd(t["saving_usd"]), "saved after worker cost"),
        (comp, "context compression"),
        (human_duration(t["time_saved_by_parallelism_s"]), "saved by parallel runs"),
    ]
    cells = []
    for i, (value, label) in enumerate(figures):
        x = 40 + (i % 2) * 270
        y = 120 + (i // 2) * 82
        cells.append(
            f'<text x="{x}" y="{y}" class="v">{escape(value)}</text>'
            f'<text x="{x}" y="{y + 24}" class="l">{escape(label)}</text>'
        )
    measured = ""
    if t["parent_measured_tokens"] is not None:
        measured = f" · measured parent tokens {human_tokens(t['parent_measured_tokens'])} ({t['parent_measured_runs']} runs)"
    foot = (f"{t['runs']} runs, {t['proven']} proven · worker {human_tokens(t['worker_tokens'])} tokens, "
            f"{usd(t['worker_cost_usd'])}{measured}")
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="600" height="314" viewBox="0 0 600 314" role="img" '
        f'aria-label="bosun savings {escape(period)}">'
        "<style>text{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}"
        ".v{font-size:34px;font-weight:700;fill:#f5f7fa}.l{font-size:14px;fill:#9fb3c8}"
        ".h{font-size:20px;font-weight:700;fill:#f5f7fa}.s{font-size:14px;fill:#9fb3c8}.f{font-size:12px;fill:#829ab1}</style>"
        '<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">'
        '<stop offset="0" stop-color="#102a43"/><stop offset="1" stop-color="#0b3d3a"/></linearGradient></defs>'
        '<rect width="600" height="314" rx="18" fill="url(#g)"/>'
        '<rect x="24" y="24" width="8" height="30" rx="3" fill="#3ebd93"/>'
        '<text x="42" y="47" class="h">bosun</text>'
        f'<text x="124" y="47" class="s">delegated to cheap workers, verified before landing · {escape(period)}</text>'
        + "".join(cells)
        + f'<text x="40" y="290" class="f">{escape(foot)}</text></svg>\n'
    )
