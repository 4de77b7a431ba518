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


def classify_http(status: int | None, text: str) -> ErrorClass:
    """An HTTP status (when the CLI reports one) plus the error text, as an ``ErrorClass``.

    The status decides the family; the text refines it within that family (a 429 that says "quota" is
    quota, a 403 that says "billing" is quota). Without a status the text decides.
    """
    found = classify_text(text)
    if status in (401, 403):
        return found if found in (ErrorClass.auth, ErrorClass.quota) else ErrorClass.auth
    if status == 402:
        return ErrorClass.quota
    if status == 429:
        return found if found in (ErrorClass.quota, ErrorClass.rate_limited) else ErrorClass.rate_limited
    if status == 404:
        return found if found in (ErrorClass.model_unavailable, ErrorClass.auth) else ErrorClass.model_unavailable
    if status == 529:
        return ErrorClass.rate_limited  # Anthropic's "overloaded"
    if status is not None and status >= 500:
        return found if found in (ErrorClass.rate_limited, ErrorClass.quota) else ErrorClass.transient
    if status == 408:
        return ErrorClass.transient
    return found or ErrorClass.permanent


_STATUS_RE = re.compile(r"(?:API Error:?\s*|status[ :]+|\"code\":\s*|\()\b([1-5]\d\d)\b", re.I)


def status_in_text(text: str) -> int | None:
    """An HTTP status quoted in an error message ("[API Error: 401 ...]", "status 429", '"code":404')."""
    m = _STATUS_RE.search(text or "")
    return int(m.group(1)) if m else None
