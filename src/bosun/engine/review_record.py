"""A run's cross-review record as the surfaces read it: the receipt, `show`, history and the dashboard.

``cross_review.json`` is written by :mod:`bosun.engine.cross_review`; this module only reads it. A
record torn by a crash or written by an older bosun reads with its missing keys empty, and a run
without one reads as ``None``, so every surface shows exactly what it showed before.

Kept free of pydantic and of typing at run time: ``bosun show`` and ``bosun history`` load it.
"""

from __future__ import annotations

from bosun.core.fileio import read_json
from bosun.core.paths import run_dir
from bosun.engine.review_verdict import SEVERITIES, at_least, where

TYPE_CHECKING = False  # not typing's: the fast CLI paths avoid importing typing
if TYPE_CHECKING:
    from typing import Any

# record.CROSS_REVIEW, spelled out: engine.record loads workers.base (dataclasses, enum), which `show` avoids
CROSS_REVIEW = "cross_review.json"
ROUND_KEYS = ("round", "profile", "adapter", "status", "error", "summary", "invalid_citations", "cost_usd",
              "duration_s", "diff_sha256")
FINDING_KEYS = ("severity", "path", "line", "claim", "suggested_fix", "citation")


def read(run_id: str) -> dict[str, Any] | None:
    """The run's record, or None when it has none (or it is not a record)."""
    doc = read_json(run_dir(run_id) / CROSS_REVIEW, None)
    if not isinstance(doc, dict) or not isinstance(doc.get("rounds"), list):
        return None
    return doc


def rounds(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in doc.get("rounds") or [] if isinstance(r, dict)]


def findings(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in entry.get("findings") or [] if isinstance(f, dict)]


def cost(doc: dict[str, Any] | None) -> float:
    """What the reviewer's rounds cost (the worker's revise turns are in the run's own usage)."""
    if not doc:
        return 0.0
    try:
        return float(doc.get("cost_usd") or 0.0)
    except (TypeError, ValueError):
        return 0.0


def profile(doc: dict[str, Any]) -> str:
    config = doc.get("config")
    config = config if isinstance(config, dict) else {}
    last = rounds(doc)[-1:] or [{}]
    return str(config.get("profile") or last[0].get("profile") or "?")


def open_blocking(doc: dict[str, Any]) -> int:
    """P0/P1 findings of the last round: what the review left open."""
    last = rounds(doc)[-1:]
    return len(at_least(findings(last[0]), "P1")) if last else 0


def revisions(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Each revise turn: after which round, the diff's SHA-256 before and after, files changed."""
    out = []
    for entry in rounds(doc):
        rev = entry.get("revised")
        if isinstance(rev, dict):
            out.append({"round": entry.get("round"), "diff_sha256_before": rev.get("diff_sha256_before"),
                        "diff_sha256_after": rev.get("diff_sha256_after"), "files_changed": rev.get("files_changed"),
                        "cost_usd": rev.get("cost_usd")})
    return out


def by_severity(items: list[dict[str, Any]]) -> dict[str, int]:
    """``{"P1": 1, "P3": 1}``: counts in severity order, only the severities present."""
    counts = {s: 0 for s in SEVERITIES}
    for f in items:
        sev = f.get("severity")
        counts[sev if sev in counts else "P1"] += 1
    return {s: n for s, n in counts.items() if n}


def severity_text(items: list[dict[str, Any]]) -> str:
    """``1 P1, 1 P3`` or ``no findings``."""
    counts = by_severity(items)
    return ", ".join(f"{n} {s}" for s, n in counts.items()) or "no findings"



def short(sha: Any) -> str:
    return str(sha)[:8] if sha else "-"


def revised_text(doc: dict[str, Any]) -> str:
    """``the worker revised 1 time (diff 1a2b3c4d → 5e6f7a8b)``."""
    revs = revisions(doc)
    n = len(revs)
    text = f"the worker revised {n} time" + ("" if n == 1 else "s")
    if revs:
        text += " (diff " + ", ".join(f"{short(r['diff_sha256_before'])} → {short(r['diff_sha256_after'])}"
                                      for r in revs) + ")"
    return text


def metrics(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """The receipt's ``review`` block (metrics.json)."""
    if doc is None:
        return None
    return {
        "profile": profile(doc),
        "rounds": len(rounds(doc)),
        "revise_rounds": len(revisions(doc)),
        "usage": doc.get("usage"),
        "cost_usd": round(cost(doc), 6),
        "open_p0_p1": open_blocking(doc),
        "revisions": revisions(doc),
    }


def compact(doc: dict[str, Any] | None, diff_sha256: str | None = None, brief: bool = False) -> dict[str, Any] | None:
    """The record as the result object carries it (``cross_review`` of `show --json`): the rounds
    with their status, findings and cost, without the usage details (``brief``, as the parent reads
    it: without the diff hashes either). ``of_current_diff`` says whether the last round read the
    run's current diff (False: the run changed since it was reviewed)."""
    if doc is None:
        return None
    shown = []
    for entry in rounds(doc):
        item = {k: entry.get(k) for k in ROUND_KEYS}
        item["findings"] = [{k: f.get(k) for k in FINDING_KEYS} for f in findings(entry)]
        rev = entry.get("revised")
        item["revised"] = ({k: rev.get(k) for k in ("diff_sha256_before", "diff_sha256_after", "files_changed",
                                                    "cost_usd")} if isinstance(rev, dict) else None)
        shown.append(item)
    last = shown[-1] if shown else None
    current = None if last is None or not diff_sha256 else last.get("diff_sha256") == diff_sha256
    if brief:  # what a parent reads: the hashes are for the record (of_current_diff says what they prove)
        for item in shown:
            item.pop("diff_sha256", None)
            if item["revised"]:
                item["revised"] = {"files_changed": item["revised"]["files_changed"],
                                   "cost_usd": item["revised"]["cost_usd"]}
    return {"config": doc.get("config"), "profile": profile(doc), "rounds": shown,
            "revise_rounds": len(revisions(doc)), "open_p0_p1": open_blocking(doc),
            "cost_usd": round(cost(doc), 6), "of_current_diff": current}


def search_text(doc: dict[str, Any] | None) -> str:
    """What history search finds a run by: every round's reviewer, status, summary, error and findings."""
    if doc is None:
        return ""
    parts = []
    for entry in rounds(doc):
        parts += [f"cross-review by {entry.get('profile') or ''}: {entry.get('status') or ''}", str(entry.get("summary") or ""),
                  str(entry.get("error") or "")]
        for f in findings(entry):
            parts += [f"{f.get('severity') or ''} {where(f)}", str(f.get("claim") or ""),
                      str(f.get("suggested_fix") or ""), str(f.get("citation") or "")]
    return "\n".join(p for p in parts if p.strip())
