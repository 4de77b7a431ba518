"""Path globs for scope, locked paths and the always-locked defaults.

One small dialect, used everywhere bosun judges a path, so a glob means the same thing in a task's
``scope``, its ``locked`` list, ``bosun.toml`` and :data:`bosun.core.config.ALWAYS_LOCKED`.

Paths are POSIX and relative to the repo root ("src/app/main.py"). Matching is case-sensitive,
like git on Linux. The rules:

* A pattern without "/" (after stripping one trailing "/") matches a name at any depth, like a
  line of a ``.gitignore``: "conftest.py" matches "conftest.py" and "a/b/conftest.py"; ".env*"
  matches "deploy/.env.prod"; "*.pem" matches "certs/server.pem".
* A pattern with a "/" is anchored at the repo root: "src/*.py" matches "src/a.py" but not
  "lib/src/a.py". A leading "./" anchors too ("./conftest.py" is only the root one).
* ``*``, ``?`` and ``[...]`` never cross "/": "src/*.py" does not match "src/sub/a.py".
  ``[!...]`` negates a class. A "[" without its "]" is a literal "[".
* ``**`` as a whole segment matches zero or more whole directories: "src/**" matches everything
  under src, "**/test_*.py" matches "test_a.py" and "x/y/test_a.py", "a/**/b" matches "a/b" and
  "a/x/y/b". Anywhere else "**" is just two "*".
* A pattern that matches a directory also covers everything below it: "docs", "docs/" and
  "src/gen" cover "src/gen/a/b.py" (for "docs", a "docs" directory at any depth).

Patterns are compiled once to regular expressions (cached): gates test thousands of paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

# Everything below a matched directory: the covering rule.
_BELOW = r"(?:/.*)?"


def match(path: str, pattern: str) -> bool:
    """True when ``path`` (POSIX, repo-relative) matches ``pattern`` under the module's rules."""
    return _compile(pattern).fullmatch(_normalize_path(path)) is not None


def match_any(path: str, patterns: Iterable[str]) -> str | None:
    """The first of ``patterns`` that matches ``path``, or None: callers name the glob that matched."""
    norm = _normalize_path(path)
    for pattern in patterns:
        if _compile(pattern).fullmatch(norm) is not None:
            return pattern
    return None


def _normalize_path(path: str) -> str:
    # git never emits "./" or a trailing "/", but paths typed by people and tests sometimes do.
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    pat = pattern.strip()
    # "./name" says "at the root" as plainly as a slash would, so it anchors.
    rooted = pat.startswith("./")
    while pat.startswith("./"):
        pat = pat[2:]
    pat = pat.rstrip("/")
    # Empty segments ("a//b") carry no meaning; drop them rather than demand an empty name.
    segments = [s for s in pat.split("/") if s]
    if not segments:
        return re.compile(r"(?!)")  # an empty pattern matches nothing, never everything
    if not rooted and "/" not in pat:
        # No slash: a name at any depth (gitignore-like), and everything below it if a directory.
        return re.compile(r"(?:.*/)?" + _segment(segments[0]) + _BELOW, re.DOTALL)
    return re.compile(_anchored(segments) + _BELOW, re.DOTALL)


def _anchored(segments: list[str]) -> str:
    out = []
    last = len(segments) - 1
    for i, seg in enumerate(segments):
        if seg == "**":
            # Trailing "**": anything below (at least one name). Elsewhere: zero or more directories,
            # each with its slash, so "a/**/b" also matches "a/b".
            out.append(".+" if i == last else r"(?:[^/]+/)*")
        else:
            out.append(_segment(seg) + ("" if i == last else "/"))
    return "".join(out)


def _segment(seg: str) -> str:
    """Translate one path segment; no construct produced here can match "/"."""
    out: list[str] = []
    i, n = 0, len(seg)
    while i < n:
        ch = seg[i]
        i += 1
        if ch == "*":
            while i < n and seg[i] == "*":  # "**" inside a segment is just "*"
                i += 1
            out.append(r"[^/]*")
        elif ch == "?":
            out.append(r"[^/]")
        elif ch == "[":
            cls, i = _char_class(seg, i)
            out.append(cls)
        else:
            out.append(re.escape(ch))
    return "".join(out)


def _char_class(seg: str, i: int) -> tuple[str, int]:
    """Translate ``[...]`` starting just after the "["; returns the regex and the index after "]".

    Follows :func:`fnmatch.translate` exactly (ranges, "!" negation, empty ranges), so a class means
    what a Python user expects, then keeps "/" out of it with a lookahead.
    """
    j = i
    if j < len(seg) and seg[j] == "!":
        j += 1
    if j < len(seg) and seg[j] == "]":  # a "]" first in the class is a literal
        j += 1
    while j < len(seg) and seg[j] != "]":
        j += 1
    if j >= len(seg):
        return re.escape("["), i  # unclosed: a literal "["
    stuff = _class_body(seg, i, j)
    if not stuff:
        return r"(?!)", j + 1  # an empty range ("[z-a]") never matches
    if stuff == "!":
        return r"[^/]", j + 1  # a negated empty range matches any one character
    if stuff[0] == "!":
        stuff = "^" + stuff[1:]
    elif stuff[0] in ("^", "["):
        stuff = "\\" + stuff
    return r"(?!/)[" + stuff + "]", j + 1


def _class_body(seg: str, i: int, j: int) -> str:
    """The body of the class ``seg[i:j]`` escaped for ``re``, with empty ranges removed."""
    stuff = seg[i:j]
    if "-" not in stuff:
        stuff = stuff.replace("\\", r"\\")
    else:
        chunks = []
        k = i + 2 if seg[i] == "!" else i + 1
        while True:
            k = seg.find("-", k, j)
            if k < 0:
                break
            chunks.append(seg[i:k])
            i = k + 1
            k = k + 3
        chunk = seg[i:j]
        if chunk:
            chunks.append(chunk)
        else:
            chunks[-1] += "-"
        for k in range(len(chunks) - 1, 0, -1):
            if chunks[k - 1][-1] > chunks[k][0]:  # a range like "z-a" is empty: drop it
                chunks[k - 1] = chunks[k - 1][:-1] + chunks[k][1:]
                del chunks[k]
        # Hyphens that make ranges stay bare; the rest are escaped, as are backslashes.
        stuff = "-".join(c.replace("\\", r"\\").replace("-", r"\-") for c in chunks)
    return re.sub(r"([&~|])", r"\\\1", stuff)  # set operations that future re versions reserve
