"""Each profile's track record, derived from the store and the run records: never a second count.

Invariants:

* **One source.** A run's outcome is its verdict (``engine/verdict.of_run``, the function every surface
  reads); a cheat attempt is a refusal with a reason about the worker's honesty
  (``core/refusal_kinds``); costs and repairs are the run's recorded ``turns`` and ``cost_usd``.
* **Each turn to the profile that took it.** A run that climbed a ladder counts, for each rung below the
  last, as a refused run of that rung's profile (it was refused for the work, or it would not have
  climbed) with that profile's own turns' cost; the last rung gets the run's verdict and the rest of
  its cost. A run of one profile is that profile's.
* **Cost per landed change** is every counted run's cost (refused and unlanded ones included) divided by
  the changes that landed (runs with a merged commit); None until one lands.

Read by ``bosun workers`` and ``bosun models``: no typing, dataclasses or pydantic imports.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's would import typing, which the fast read paths avoid
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from bosun.store.db import Store

RUNS_READ = 500  # the newest runs a record is made of


def track_records(store: Store, profiles: Iterable[str], repo: str | None = None) -> dict[str, dict[str, Any]]:
    """``{profile: record}`` over the newest judged runs (of ``repo`` when given); a record is
    ``{runs, landable, needs_review, refused, cheat_attempts, repairs, landed, cost_usd,
    cost_per_landed_usd, median_s}``."""
    from bosun.engine.history import active_seconds
    from bosun.engine.verdict import of_run

    acc: dict[str, dict[str, Any]] = {name: {"runs": 0, "landable": 0, "needs_review": 0, "refused": 0, "cheat_attempts": 0, "repairs": 0,
                  "landed": 0, "cost_usd": 0.0, "_times": []} for name in profiles}
    for run in store.list_runs(limit=RUNS_READ):
        if repo is not None and run.repo != repo:
            continue
        verdict = of_run(run)
        if verdict is None:
            continue  # not judged yet
        last = run.profile or ""
        turns = run.data.turns or []
        below = [p for p in _rungs(turns) if p != last]
        below_cost = 0.0
        for name in below:
            cost = _own(turns, name, "cost_usd")
            below_cost += cost
            _count(acc.get(name), "refused", cost, _own_repairs(turns, name))
        rec = acc.get(last)
        if rec is None:
            continue
        total = float(run.data.cost_usd or 0.0)
        _count(rec, verdict.outcome, max(total - below_cost, 0.0),
               _own_repairs(turns, last) if turns else 0)
        if verdict.outcome == "refused" and _cheated(verdict):
            rec["cheat_attempts"] += 1
        if run.merged_commit:
            rec["landed"] += 1
        rec["_times"].append(active_seconds(store.transitions(run.id, notes=False)))
    return {name: _finished(rec) for name, rec in acc.items()}


def _rungs(turns: list[dict[str, Any]]) -> list[str]:
    seen: list[str] = []
    for t in turns:
        name = str(t.get("profile") or "")
        if name and name not in seen:
            seen.append(name)
    return seen


def _own(turns: list[dict[str, Any]], name: str, key: str) -> float:
    return sum(float(t.get(key) or 0.0) for t in turns if t.get("profile") == name)


def _own_repairs(turns: list[dict[str, Any]], name: str) -> int:
    return sum(1 for t in turns if t.get("profile") == name and t.get("kind") == "repair")


def _count(rec: dict[str, Any] | None, outcome: str, cost: float, repairs: int) -> None:
    if rec is None:
        return  # a profile no longer configured
    rec["runs"] += 1
    rec[outcome] += 1
    rec["cost_usd"] += cost
    rec["repairs"] += repairs


def _cheated(verdict: dict[str, Any]) -> bool:
    from bosun.core.refusal_kinds import honesty_codes

    return bool(honesty_codes(str(r["code"]) for r in verdict.get("reasons") or []))


def _finished(rec: dict[str, Any]) -> dict[str, Any]:
    times = sorted(rec.pop("_times"))
    n = len(times)
    median = None if not n else times[n // 2] if n % 2 else round((times[n // 2 - 1] + times[n // 2]) / 2, 3)
    rec["cost_usd"] = round(rec["cost_usd"], 6)
    rec["cost_per_landed_usd"] = round(rec["cost_usd"] / rec["landed"], 6) if rec["landed"] else None
    rec["median_s"] = median
    return rec


def record_line(rec: dict[str, Any]) -> str:
    """A record in one line, as `workers` and `models` print it."""
    if not rec["runs"]:
        return "no runs yet"
    per = "-" if rec["cost_per_landed_usd"] is None else f"${rec['cost_per_landed_usd']:.4f}"
    median = "-" if rec["median_s"] is None else f"{rec['median_s']:.0f}s"
    return (f"{rec['runs']} runs: {rec['landable']} landable, {rec['needs_review']} need review, {rec['refused']} "
            f"refused ({rec['cheat_attempts']} cheat attempts); {rec['repairs']} repairs; {rec['landed']} landed, "
            f"{per} per landed change; median {median}")
