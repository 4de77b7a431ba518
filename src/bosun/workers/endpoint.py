"""Whether a profile's endpoint answers: what `bosun check --probe` and `bosun doctor --probe` ask, and
the words bosun uses when a worker cannot reach it.

Invariant: only asked for (``--probe``), never on the way of a run; one short GET of ``<base_url>/models``
that says nothing but "something answers there".
"""

from __future__ import annotations

import re

# What a refused or unreachable connection says, in httpx's, Node's and the CLIs' words.
UNREACHABLE = re.compile(r"ECONNREFUSED|connection refused|all connection attempts failed|cannot reach|"
                         r"name or service not known|nodename nor servname|EHOSTUNREACH|ENOTFOUND", re.I)


def probe(base_url: str, timeout_s: float = 1.0) -> str | None:
    """The problem with ``base_url`` in one sentence, or None when something answers there."""
    import httpx

    try:
        res = httpx.get(base_url.rstrip("/") + "/models", timeout=timeout_s)
    except httpx.HTTPError as exc:
        return f"nothing answers at {base_url}: {reason(exc)}"
    if res.status_code >= 500:
        return f"the endpoint {base_url} answered HTTP {res.status_code}"
    return None


def reason(exc: BaseException) -> str:
    """An httpx error in a few words: "connection refused" rather than "[Errno 111] ..."."""
    import httpx

    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError) and UNREACHABLE.search(text):
        return "connection refused" if re.search(r"refused|attempts failed", text, re.I) else text
    if isinstance(exc, httpx.TimeoutException):
        return "no answer in time"
    return text


def unreachable_hint(base_url: str) -> str:
    """What to do when a worker could not reach ``base_url``."""
    return (f"check that the server at {base_url} is up (`bosun check TASK --probe` tries it in a second), "
            "then `bosun work RUN` again")
