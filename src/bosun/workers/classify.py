"""Failure classification from exit codes, error events and stderr text.

The patterns come from the messages real worker CLIs and providers print. Order matters: auth is
checked before rate limits because a "free tier exhausted" 403 is a set-up problem, not a wait.
"""

from __future__ import annotations

import re

from bosun.workers.base import ErrorClass

_PATTERNS: list[tuple[ErrorClass, re.Pattern[str]]] = [
    (
        ErrorClass.model_unavailable,
        re.compile(
            r"model[ _-]?not[ _-]?found|unknown model|ModelNotFound|model .{0,80}(does not exist|not (available|supported))"
            r"|no such model|deprecated model|invalid model",
            re.I,
        ),
    ),
    (
        ErrorClass.auth,
        re.compile(
            r"\b401\b|\b403\b|unauthori[sz]ed|invalid.{0,10}api.?key|incorrect api key|authentication"
            r"|not logged in|login required|please (log ?in|sign in)|forbidden|api key.{0,20}(missing|not set|required)",
            re.I,
        ),
    ),
    (
        ErrorClass.quota,
        re.compile(
            r"insufficient.?quota|quota.{0,20}(exceeded|exhausted)|billing|out of credits|credit balance"
            r"|payment required|\b402\b|usage limit",
            re.I,
        ),
    ),
    (
        ErrorClass.rate_limited,
        re.compile(r"\b429\b|rate.?limit|too many requests|overloaded|capacity|try again in", re.I),
    ),
    (
        ErrorClass.transient,
        re.compile(
            r"\b50[0234]\b|ECONNRESET|ETIMEDOUT|ECONNREFUSED|socket hang up|temporar|connection (refused|reset|error)"
            r"|internal server error|bad gateway|service unavailable|stream (stalled|ended|closed)|network error",
            re.I,
        ),
    ),
]

_RETRY_AFTER_RE = re.compile(r"retry[- _]after[\"':= ]+\s*(\d+(?:\.\d+)?)", re.I)
_TRY_AGAIN_RE = re.compile(
    r"(?:try again|retry|reset[s]?|available again) (?:in|after) ((?:\d+(?:\.\d+)?\s*(?:d|h|m|s|ms|days?|hours?|minutes?|mins?|seconds?|secs?)\s*,?\s*(?:and\s*)?)+)",
    re.I,
)
_DURATION_PART_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|d|h|m|s|days?|hours?|minutes?|mins?|seconds?|secs?)", re.I)
_UNIT_S = {"ms": 0.001, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60,
           "mins": 60, "minute": 60, "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600, "d": 86400,
           "day": 86400, "days": 86400}


def classify_text(text: str) -> ErrorClass | None:
    """The first class whose pattern matches ``text``, or None."""
    for cls, pattern in _PATTERNS:
        if pattern.search(text or ""):
            return cls
    return None


def classify_failure(text: str, exit_code: int | None = None, timed_out: bool = False) -> ErrorClass:
    if timed_out:
        return ErrorClass.timeout
    return classify_text(text) or ErrorClass.permanent


def parse_retry_after(text: str) -> float | None:
    """Seconds to wait, from "Retry-After: 30" or phrases like "try again in 4h28m"."""
    if not text:
        return None
    m = _TRY_AGAIN_RE.search(text)
    if m:
        total = 0.0
        for num, unit in _DURATION_PART_RE.findall(m.group(1)):
            total += float(num) * _UNIT_S.get(unit.lower(), 1)
        if total > 0:
            return total
    m = _RETRY_AFTER_RE.search(text)
    if m:
        return float(m.group(1))
    return None
