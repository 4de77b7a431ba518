"""What a run's cross-review means for its verdict: refusals and reasons for a person, each one sentence.

Read by :mod:`bosun.engine.verdict` from the run's configured review (``data.review_config``,
written at prepare) and its record (``cross_review.json``, written by
:mod:`bosun.engine.cross_review`). A review that was asked for and did not clear the very tree that
was verified is never a pass:

- no round ran on this change, or the last round read another tree: ``CROSS_REVIEW_MISSING``;
- the reviewer failed, timed out or gave no report: ``CROSS_REVIEW_FAILED``;
- a finding cites a line that does not exist: ``CROSS_REVIEW_CITATION``;
- P0/P1 findings still open after the last round: ``CROSS_REVIEW_OPEN``;
- open findings at the task's ``block_on`` or worse: ``CROSS_REVIEW_BLOCKED`` (refused);
- the read-only reviewer changed the tree: ``CROSS_REVIEW_CHANGED_TREE`` (refused).

A review that read the verified tree and left none of these is *cleared* (:func:`review_cleared`):
it stands for the person who would otherwise read the worker's own tests (``OWN_TESTS_PROOF``).

Kept free of pydantic and of the engine's heavy modules: ``bosun show`` loads it.
"""

from __future__ import annotations

from bosun.core.quoting import quoted

TYPE_CHECKING = False  # not typing's: the fast CLI paths avoid importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

MISSING, FAILED, CITATION = "CROSS_REVIEW_MISSING", "CROSS_REVIEW_FAILED", "CROSS_REVIEW_CITATION"
OPEN, BLOCKED, CHANGED_TREE = "CROSS_REVIEW_OPEN", "CROSS_REVIEW_BLOCKED", "CROSS_REVIEW_CHANGED_TREE"
SEVERITIES = ("P0", "P1", "P2", "P3")


def review_outcome(config: Mapping[str, Any] | None, record: Mapping[str, Any] | None,
                   verified_tree: str | None) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """``(refusals, reasons)`` the cross-review adds to a verified run's verdict."""
    if not config or not config.get("profile") or not config.get("rounds"):
        return [], []
    profile = str(config["profile"])
    rounds = list((record or {}).get("rounds") or [])
    last = rounds[-1] if rounds else None
    if last is None or not verified_tree or last.get("tree") != verified_tree:
        what = "none ran on this change" if last is None else "its last round read another tree than the verified one"
        return [], [_r(MISSING, f"the task asks for a cross-review by {profile}, but {what}: a person must read it")]
    status = last.get("status")
    if status == "changed_tree":
        return [_r(CHANGED_TREE, f"the reviewer {profile} changed files in the worktree, which it may only read")], []
    if status in ("failed", "unparseable"):
        error = str(last.get("error") or status)
        return [], [_r(FAILED, f"the cross-review by {profile} did not finish ({error}): nothing was reviewed")]
    findings = [f for f in last.get("findings") or [] if isinstance(f, dict)]
    refusals, reasons = [], []
    block_on = config.get("block_on")
    blocking = at_least(findings, str(block_on)) if block_on in SEVERITIES else []
    n = len(rounds)
    if blocking:
        refusals.append(_r(BLOCKED, f"{len(blocking)} finding(s) at {block_on} or worse still open after "
                                    f"{_rounds(n)} (block_on: {block_on}): {_list(blocking)}"))
    else:
        still_open = at_least(findings, "P1")
        if still_open:
            reasons.append(_r(OPEN, f"{len(still_open)} P0/P1 finding(s) of {profile} still open after "
                                    f"{_rounds(n)}: {_list(still_open)}"))
    bad = [f for f in findings if f.get("citation")]
    if bad:
        shown = "; ".join(f"{where(f)} ({f['citation']})" for f in bad[:3])
        reasons.append(_r(CITATION, f"the reviewer cited {len(bad)} line(s) that are not in the tree: {shown}"))
    return refusals, reasons


def review_cleared(config: Mapping[str, Any] | None, record: Mapping[str, Any] | None,
                   verified_tree: str | None) -> bool:
    """A configured cross-review read exactly the verified tree, answered, and left nothing for the
    verdict: no refusal, no reason (P2/P3 findings alone do not hold a change back)."""
    if not config or not config.get("profile") or not config.get("rounds"):
        return False
    rounds = list((record or {}).get("rounds") or [])
    if not rounds or not verified_tree or rounds[-1].get("tree") != verified_tree:
        return False
    if rounds[-1].get("status") not in ("clean", "findings"):
        return False
    refusals, reasons = review_outcome(config, record, verified_tree)
    return not refusals and not reasons


def at_least(findings: list[dict[str, Any]], severity: str) -> list[dict[str, Any]]:
    """Findings of ``severity`` or worse (P0 is the worst)."""
    limit = SEVERITIES.index(severity)
    return [f for f in findings if f.get("severity") in SEVERITIES and SEVERITIES.index(f["severity"]) <= limit]


def _r(code: str, sentence: str) -> dict[str, str]:
    return {"code": code, "sentence": sentence}


def _rounds(n: int) -> str:
    return f"{n} review round" + ("" if n == 1 else "s")


def where(f: Mapping[str, Any]) -> str:
    """A finding's ``path:line`` as every surface writes it (the path is the reviewer's: quoted)."""
    path = quoted(f["path"]) if f.get("path") else "(no path)"
    return f"{path}:{f['line']}" if f.get("line") else path


def _list(findings: list[dict[str, Any]]) -> str:
    """Up to three findings for a sentence: each claim is the reviewer's text, quoted."""
    shown = "; ".join(f"{f.get('severity')} {where(f)} {quoted(f.get('claim') or '')}" for f in findings[:3])
    return shown + (f"; and {len(findings) - 3} more" if len(findings) > 3 else "")
