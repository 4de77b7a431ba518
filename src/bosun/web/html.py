"""HTML building blocks: the page layout, escaping and small formatters. No inline script or style."""

from __future__ import annotations

import json
import time
from html import escape
from typing import Any
from urllib.parse import urlencode

NAV = (("runs", "/", "Runs"), ("plans", "/plans", "Plans"), ("workers", "/workers", "Workers"),
       ("savings", "/savings", "Savings"))
# htmx must not add its own <style> or evaluate strings: the CSP allows neither.
# Refusals (403, 409) are swapped in too, so the page says why an action did not happen.
HTMX_CONFIG = json.dumps({
    "includeIndicatorStyles": False, "allowEval": False, "allowScriptTags": False, "historyCacheSize": 0,
    "selfRequestsOnly": True,
    "responseHandling": [{"code": "204", "swap": False}, {"code": "[23]..", "swap": True},
                         {"code": "[45]..", "swap": True, "error": True}],
})


def e(value: Any) -> str:
    return escape("" if value is None else str(value))


def layout(title: str, body: str, active: str = "", live: str = "") -> str:
    """A full page. ``live`` names what the page follows (``runs``, ``run:ID``, ``plan:ID``): the
    script opens one server-sent event stream for it."""
    nav = "".join(
        f'<a href="{href}" class="{"on" if key == active else ""}">{label}</a>' for key, href, label in NAV
    )
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<meta name=\"htmx-config\" content='{escape(HTMX_CONFIG, quote=True)}'>"
        f"<title>{e(title)} · bosun</title>"
        '<link rel="stylesheet" href="/static/dash.css"><link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'
        '<script src="/static/htmx.min.js" defer></script><script src="/static/dash.js" defer></script>'
        f'</head><body data-live="{e(live)}"><header><a class="brand" href="/">bosun</a><nav>{nav}</nav>'
        '<span id="conn" class="conn" title="live updates">connecting</span></header>'
        f"<main>{body}</main></body></html>"
    )


def ago(ts: float | None, now: float | None = None) -> str:
    if not ts:
        return "-"
    d = (time.time() if now is None else now) - ts
    if d < 60:
        return f"{int(d)}s ago"
    if d < 3600:
        return f"{int(d // 60)}m ago"
    if d < 86400:
        return f"{int(d // 3600)}h ago"
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def stamp(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) if ts else "-"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def tokens(n: int | None) -> str:
    if not n:
        return "-"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def money(v: float | None) -> str:
    if v is None:
        return "-"
    sign, v = ("-" if v < 0 else ""), abs(v)
    return sign + (f"${v:.4f}" if v < 1 else f"${v:,.2f}")


def prose(text: Any) -> str:
    """bosun's words (a hint, a reason, a message) as HTML: escaped, and each `backticked` span a <code>,
    as it reads in a terminal, instead of literal backticks."""
    import re

    return re.sub(r"`([^`]+)`", r"<code>\1</code>", e(text))


def state_badge(state: str) -> str:
    return f'<span class="badge st-{e(state.replace(" ", "-"))}">{e(state)}</span>'


def query(params: dict[str, Any]) -> str:
    clean = {k: v for k, v in params.items() if v not in (None, "", 0) or k == "page" and v}
    return urlencode(clean)


def pretty_json(value: Any) -> str:
    return e(json.dumps(value, indent=2, default=str))


def select(name: str, values: list[str], current: str, label: str) -> str:
    opts = [f'<option value="">{e(label)}: all</option>']
    for v in values:
        sel = " selected" if v == current else ""
        opts.append(f'<option value="{e(v)}"{sel}>{e(v)}</option>')
    return f'<select name="{e(name)}" aria-label="{e(label)}">{"".join(opts)}</select>'
