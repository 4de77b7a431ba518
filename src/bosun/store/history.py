"""SQL for run history: the full-text index, the per-run figures, and the filtered runs listing.

``run_history`` (FTS5) and ``run_facts`` are derived from the run records by ``bosun.engine.history``; this
module only reads and writes them. Listing walks rows newest first by rowid (runs are inserted in
creation order), so a page or a search stops after ``limit`` rows instead of sorting every match.
"""

from __future__ import annotations

import json
import sqlite3

from bosun.store.db import Store

TYPE_CHECKING = False  # not typing's: start-up of `bosun history`
if TYPE_CHECKING:
    from typing import Any

FACT_COLUMNS = (
    "caller", "adapter", "started_at", "ended_at", "duration_s", "input_tokens", "output_tokens", "worker_cost_usd",
    "cost_reported", "parent_direct_tokens", "parent_actual_tokens", "parent_measured_tokens",
    "parent_direct_cost_usd", "saving_usd", "proven", "gates_total", "gates_failed",
)
DOC_COLUMNS = ("title", "prompt", "final", "paths", "gates", "errors")
# How far behind the newest indexed change a refresh looks again: a run whose update was stamped
# just before another process's later stamp, but committed after it, is still picked up.
REFRESH_MARGIN_S = 5.0


class RunFilter:
    """What the runs listing, `bosun history` and the dashboard filter on. Empty fields match all.

    A plain class, not a dataclass: dataclasses (and inspect behind it) cost `bosun history` ~10 ms
    of start-up."""

    __slots__ = ("text", "state", "profile", "repo", "caller", "plan_id", "since", "until")

    def __init__(self, text: str = "", state: str = "", profile: str = "", repo: str = "", caller: str = "",
                 plan_id: str = "", since: float | None = None, until: float | None = None) -> None:
        self.text, self.state, self.profile, self.repo = text, state, profile, repo
        self.caller, self.plan_id, self.since, self.until = caller, plan_id, since, until

    def __repr__(self) -> str:
        return "RunFilter(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


def fts_query(text: str) -> str:
    """A user's words as a safe FTS5 query: every word must occur (quoted, so ``calc.py`` or
    ``a-b`` is a phrase, not syntax); a trailing ``*`` keeps a prefix search."""
    terms = []
    for word in text.split():
        prefix = word.endswith("*") and len(word) > 1
        core = word.rstrip("*") if prefix else word
        core = core.replace('"', '""')
        if core:
            terms.append(f'"{core}"' + ("*" if prefix else ""))
    return " ".join(terms)


def refresh_start(store: Store) -> float:
    """Where a refresh starts looking: a little before the newest change already indexed."""
    return (_get_meta(store.db, "indexed_through") or 0.0) - REFRESH_MARGIN_S


def stale_runs(store: Store, after: float, limit: int = 500) -> list[dict[str, Any]]:
    """Runs changed at or after ``after`` and since they were last indexed (or never indexed),
    oldest change first."""
    rows = store.db.execute(
        "SELECT r.*, r.rowid AS _rowid FROM runs r LEFT JOIN run_facts f ON f.run_id = r.id "
        "WHERE r.updated_at >= ? AND (f.indexed_at IS NULL OR f.indexed_at != r.updated_at) "
        "ORDER BY r.updated_at LIMIT ?",
        (after, limit),
    ).fetchall()
    return [_run(r) for r in rows]


def save_index(store: Store, entries: list[tuple[dict[str, Any], dict[str, str], dict[str, Any]]]) -> None:
    """Write (run, document, facts) entries in one transaction and advance the refresh mark."""
    if not entries:
        return
    with store.tx() as db:
        for run, doc, facts in entries:
            rowid = run["_rowid"]
            db.execute("DELETE FROM run_history WHERE rowid = ?", (rowid,))
            cols = ", ".join(DOC_COLUMNS)
            db.execute(
                f"INSERT INTO run_history(rowid, {cols}) VALUES (?, {', '.join('?' for _ in DOC_COLUMNS)})",
                (rowid, *(doc.get(c, "") for c in DOC_COLUMNS)),
            )
            fcols = ", ".join(FACT_COLUMNS)
            db.execute(
                f"INSERT OR REPLACE INTO run_facts(run_id, indexed_at, {fcols}) "
                f"VALUES (?, ?, {', '.join('?' for _ in FACT_COLUMNS)})",
                (run["id"], run["updated_at"], *(facts.get(c) for c in FACT_COLUMNS)),
            )
        newest = max(run["updated_at"] for run, _, _ in entries)
        current = _get_meta(db, "indexed_through") or 0.0
        if newest > current:
            db.execute("INSERT OR REPLACE INTO history_meta(key, value) VALUES ('indexed_through', ?)", (newest,))


def list_runs(store: Store, flt: RunFilter, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    """Runs matching ``flt``, newest first, each with its figures under ``facts`` (None until indexed)."""
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("r.state", flt.state), ("r.profile", flt.profile), ("r.repo", flt.repo),
                          ("r.plan_id", flt.plan_id), ("f.caller", flt.caller)):
        if value:
            where.append(f"{column} = ?")
            args.append(value)
    if flt.since is not None:
        where.append("r.created_at >= ?")
        args.append(flt.since)
    if flt.until is not None:
        where.append("r.created_at < ?")
        args.append(flt.until)
    query = fts_query(flt.text) if flt.text else ""
    if query:
        # The full-text table drives the loop: FTS5 yields matches in rowid order, newest first.
        sql = (
            "SELECT r.*, r.rowid AS _rowid, snippet(run_history, -1, '[', ']', ' ... ', 12) AS _snippet, "
            + _fact_select() + " FROM run_history h "
            "JOIN runs r ON r.rowid = h.rowid LEFT JOIN run_facts f ON f.run_id = r.id "
            "WHERE run_history MATCH ?" + "".join(" AND " + w for w in where) + " ORDER BY h.rowid DESC LIMIT ? OFFSET ?"
        )
        args = [query, *args]
    else:
        sql = (
            "SELECT r.*, r.rowid AS _rowid, " + _fact_select() + " FROM runs r LEFT JOIN run_facts f ON f.run_id = r.id"
            + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY r.rowid DESC LIMIT ? OFFSET ?"
        )
    try:
        cur = store.db.execute(sql, [*args, limit, offset])
    except sqlite3.OperationalError as exc:
        if "fts5" in str(exc) or "MATCH" in str(exc):
            return []
        raise
    return _runs(cur)


def facts_since(store: Store, since: float | None = None, repo: str = "", plan_id: str = "") -> list[dict[str, Any]]:
    """Every indexed run's figures (with its profile, repo, state and plan) started at or after ``since``."""
    where, args = ["1 = 1"], []  # type: tuple[list[str], list[Any]]
    if since is not None:
        where.append("f.started_at >= ?")
        args.append(since)
    if repo:
        where.append("r.repo = ?")
        args.append(repo)
    if plan_id:
        where.append("r.plan_id = ?")
        args.append(plan_id)
    rows = store.db.execute(
        "SELECT f.*, r.profile, r.repo, r.state, r.plan_id FROM run_facts f JOIN runs r ON r.id = f.run_id WHERE "
        + " AND ".join(where) + " ORDER BY f.started_at", args,
    )
    return [dict(r) for r in rows]


def distinct_values(store: Store, column: str) -> list[str]:
    """The values a filter can take (profiles, repos, callers, states), for the dashboard's selects."""
    table, col = {"profile": ("runs", "profile"), "repo": ("runs", "repo"), "state": ("runs", "state"),
                  "caller": ("run_facts", "caller")}[column]
    rows = store.db.execute(f"SELECT DISTINCT {col} FROM {table} WHERE {col} IS NOT NULL ORDER BY {col}")
    return [str(r[0]) for r in rows]


def data_version(store: Store) -> tuple[int, float]:
    """Changes when a run is added or changes (two index lookups), for live updates."""
    row = store.db.execute("SELECT COALESCE(MAX(rowid), 0), COALESCE(MAX(updated_at), 0) FROM runs").fetchone()
    return int(row[0]), float(row[1])


def _fact_select() -> str:
    return ", ".join(f"f.{c} AS f_{c}" for c in ("indexed_at", *FACT_COLUMNS))


def _runs(cur: sqlite3.Cursor) -> list[dict[str, Any]]:
    """Rows of runs joined with their facts (``f_`` columns) as run dicts with a ``facts`` dict.
    Column positions are worked out once per query: listing a page is mostly this loop."""
    names = [d[0] for d in cur.description]
    run_cols = [(i, n) for i, n in enumerate(names) if not n.startswith("f_")]
    fact_cols = [(i, n[2:]) for i, n in enumerate(names) if n.startswith("f_")]
    indexed = next((i for i, n in fact_cols if n == "indexed_at"), None)
    out = []
    for row in cur:
        d = {n: row[i] for i, n in run_cols}
        d["data"] = json.loads(d.get("data") or "{}")
        if d.get("_snippet"):
            # A snippet is a line of a listing: the matched text's newlines and runs of spaces are one space.
            d["_snippet"] = " ".join(d["_snippet"].split())
        if fact_cols:
            d["facts"] = {n: row[i] for i, n in fact_cols} if indexed is not None and row[indexed] is not None else None
        out.append(d)
    return out


def _run(row: sqlite3.Row) -> dict[str, Any]:
    d = dict(row)
    d["data"] = json.loads(d.get("data") or "{}")
    facts = {k[2:]: d.pop(k) for k in list(d) if k.startswith("f_")}
    if facts:
        d["facts"] = facts if facts.get("indexed_at") is not None else None
    return d


def _get_meta(db: sqlite3.Connection, key: str) -> float | None:
    row = db.execute("SELECT value FROM history_meta WHERE key = ?", (key,)).fetchone()
    return float(row[0]) if row else None
