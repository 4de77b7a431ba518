"""Server-side diff highlighting, deliberately simple: diff structure plus strings, comments,
numbers and keywords. Everything is escaped; the output is spans with classes (no inline style)."""

from __future__ import annotations

import re
from html import escape

KEYWORDS = frozenset(
    "def class return if elif else for while in not and or is None True False import from as with try "
    "except finally raise yield lambda pass break continue async await global nonlocal assert del "
    "function const let var new this null undefined true false typeof instanceof export default switch "
    "case fn pub struct impl enum match mut use mod trait where func package interface type go defer "
    "chan select map range public private protected static void int bool string".split()
)
TOKEN = re.compile(
    r"(?P<str>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`)"
    r"|(?P<com>#.*$|//.*$|--\s.*$)"
    r"|(?P<num>\b\d+(?:\.\d+)?\b)"
    r"|(?P<word>\b[A-Za-z_][A-Za-z0-9_]*\b)"
)
# Past this size the diff is shown plain (still escaped): highlighting is for reading, not for megabytes.
HIGHLIGHT_LIMIT = 400_000
SHOW_LIMIT = 2_000_000


def _span(m: re.Match[str]) -> str:
    kind = m.lastgroup
    text = m.group()
    if kind == "word" and text not in KEYWORDS:
        return text
    return f'<span class="tk-{kind}">{text}</span>'


def highlight_code(text: str) -> str:
    # Escape first (only & < >, so quotes still delimit strings), then wrap tokens in one pass. No
    # keyword is "lt", "gt" or "amp", so a span never splits an entity.
    return TOKEN.sub(_span, escape(text, quote=False))


def highlight_diff(diff: str) -> str:
    """The diff as HTML lines (``<span class="dl ...">``), inside a ``<pre>`` the caller provides."""
    cut = ""
    if len(diff) > SHOW_LIMIT:
        cut = f"\n... {len(diff) - SHOW_LIMIT} more bytes not shown (`bosun diff RUN` prints all)"
        diff = diff[:SHOW_LIMIT]
    plain = len(diff) > HIGHLIGHT_LIMIT
    lines = []
    for line in diff.splitlines():
        if line.startswith("diff --git"):
            cls, body = "dl-file", escape(line)
        elif line.startswith(("+++", "---", "index ", "new file", "deleted file", "similarity", "rename ",
                              "old mode", "new mode", "Binary files")):
            cls, body = "dl-meta", escape(line)
        elif line.startswith("@@"):
            cls, body = "dl-hunk", escape(line)
        elif line.startswith("+"):
            cls, body = "dl-add", "+" + (escape(line[1:]) if plain else highlight_code(line[1:]))
        elif line.startswith("-"):
            cls, body = "dl-del", "-" + (escape(line[1:]) if plain else highlight_code(line[1:]))
        else:
            cls, body = "dl-ctx", escape(line) if plain else highlight_code(line)
        lines.append(f'<span class="dl {cls}">{body}</span>')
    # Each line is a block of its own: no newline between them, or a <pre> would double the spacing.
    return "".join(lines) + escape(cut)
