"""Review documents handed to ``bosun approve --review``: validation and blocking findings."""

from __future__ import annotations

from typing import Any

from bosun.core.errors import BadInput

SEVERITIES = ("P0", "P1", "P2", "P3")
BLOCKING = ("P0", "P1", "P2")
CLOSED_STATUSES = ("resolved", "fixed", "wontfix", "closed", "dismissed")


def validate_review(review: Any) -> None:
    if not isinstance(review, dict):
        raise BadInput("the review must be a JSON object", 'e.g. {"verdict": "approve", "findings": []}')
    findings = review.get("findings", [])
    if not isinstance(findings, list):
        raise BadInput("review.findings must be a list", "each finding: {severity: P0..P3, title, path, line}")
    for i, f in enumerate(findings):
        if not isinstance(f, dict) or str(f.get("severity", "")).upper() not in SEVERITIES:
            raise BadInput(f"review.findings[{i}] needs a severity of P0, P1, P2 or P3", "fix the review file")


def open_blocking_findings(review: dict[str, Any]) -> list[str]:
    out = []
    for f in review.get("findings", []):
        sev = str(f.get("severity", "")).upper()
        status = str(f.get("status", "open")).lower()
        if sev in BLOCKING and status not in CLOSED_STATUSES:
            where = f" at {f['path']}:{f.get('line', '?')}" if f.get("path") else ""
            out.append(f"{sev} {f.get('title', 'finding')}{where}")
    return out
