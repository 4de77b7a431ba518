"""Reading a run's ``turns``: the first worker turn, each repair round and each rung of the ladder
(written by engine/repair.py), for the result, the receipt and the track record.

Invariant: figures derive from the recorded turns alone (each with its own usage and cost, priced when
it ran), never from a second count. Plain data, no imports: ``bosun show`` and ``workers`` load it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's would import typing, which the fast read paths avoid
if TYPE_CHECKING:
    from typing import Any


def cost_by_rung(turns: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Each profile's share of what the run's recorded turns cost, in the order they worked:
    ``[{profile, turns, cost_usd, share}]`` (share of the turns' total, 0..1; 0 when nothing was priced)."""
    rows: dict[str, dict[str, Any]] = {}
    for t in turns or []:
        name = str(t.get("profile"))
        row = rows.setdefault(name, {"profile": name, "turns": 0, "cost_usd": 0.0})
        row["turns"] += 1
        row["cost_usd"] = round(row["cost_usd"] + float(t.get("cost_usd") or 0.0), 6)
    total = sum(r["cost_usd"] for r in rows.values())
    return [{**r, "share": round(r["cost_usd"] / total, 4) if total else 0.0} for r in rows.values()]


def repairs_used(turns: list[dict[str, Any]] | None) -> int:
    """How many repair rounds the run took (escalations to another rung are not repairs)."""
    return sum(1 for t in turns or [] if t.get("kind") == "repair")
