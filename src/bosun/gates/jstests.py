"""JS/TS test files read lightly: the ``it(...)``/``test(...)`` blocks and what their bodies check.

Not a parser: comments and string contents are masked (kept the same length, so offsets and line
numbers stay true), then blocks are found by matching brackets. Per test it records the
``expect(...)``/``assert`` checks, ``expect(...)`` chains that end without a matcher (``expect(x);``
checks nothing), checks that cannot fail (``expect(1).toBe(1)``, ``expect(x).toBe(x)``,
``assert(true)``), a ``return`` before the first check, and checks inside a ``try`` whose ``catch``
neither rethrows nor checks. :func:`compare` words the differences like :mod:`.pytests` does.
Duplicate titles all run in Jest/Vitest/Mocha, so they are kept apart as "title #2".
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from bosun.core.quoting import quoted
from bosun.gates.context import plural

_TEST_CALL = re.compile(r"(?<![\w.$])(?:it|test|specify)((?:\.\w+)*)\s*\(")
_EXPECT = re.compile(r"(?<![\w.$])expect\s*\(")
_ASSERT = re.compile(r"(?<![\w.$])assert(?:\.\w+)?\s*\(")
_MEMBER = re.compile(r"\s*(?:\?\.|\.)\s*([A-Za-z_$][\w$]*)")
_LITERAL = re.compile(r"""-?\d+(?:\.\d+)?|true|false|null|undefined|'[^']*'|"[^"]*"|`[^`$]*`""")
_EQUALITY = frozenset({"toBe", "toEqual", "toStrictEqual", "toMatchObject"})
_TRIVIAL_ASSERT = re.compile(r"assert(?:\.ok|\.equal|\.strictEqual|\.deepEqual)?\s*\(\s*(.*?)\s*\)\s*;?\s*$", re.S)
_CALLED = re.compile(r"([A-Za-z_$][\w$]*)\s*\(")
_SKIPPED_VARIANTS = frozenset({"skip", "todo"})
_FALSY = frozenset({"false", "0", "null", "undefined", "''", '""', "``"})


@dataclass
class JsTest:
    title: str
    line: int
    checks: int = 0
    lost: list[tuple[int, str]] = field(default_factory=list)  # expect chains without a matcher
    trivial: list[tuple[int, str]] = field(default_factory=list)
    early: tuple[int, str] | None = None  # a return before the first check
    swallowed: list[tuple[int, str]] = field(default_factory=list)
    calls: frozenset[str] = frozenset()
    fingerprint: str = ""


def added_tests(path: str, before: dict[str, JsTest], after: dict[str, JsTest]) -> dict[str, str]:
    """Fingerprint -> ``path`` for each test ``after`` has and ``before`` had not (by body)."""
    had = {t.fingerprint for t in before.values()}
    return {t.fingerprint: path for t in after.values() if t.fingerprint not in had}


@lru_cache(maxsize=64)
def read_tests(text: str) -> dict[str, JsTest]:
    """The test blocks of a file by title (cached: the gate reads each text more than once)."""
    code = mask(text)
    tests: dict[str, JsTest] = {}
    seen: Counter[str] = Counter()
    for m in _TEST_CALL.finditer(code):
        if set(m.group(1).strip(".").split(".")) & _SKIPPED_VARIANTS:
            continue  # it.skip / test.todo: the marker tripwire reports those
        found = _test_at(text, code, m.end())
        if found is None:
            continue
        title, start, end = found
        seen[title] += 1
        key = title if seen[title] == 1 else f"{title} #{seen[title]}"
        tests[key] = _read_body(key, text, code, start, end, _line(text, m.start()))
    return tests


def mask(text: str) -> str:
    """``text`` with comments blanked and string contents replaced by ``x`` (newlines kept)."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            _blank(out, i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            _blank(out, i, j)
            i = j
        elif ch in "'\"`":
            j = i + 1
            while j < n and text[j] != ch and not (ch != "`" and text[j] == "\n"):
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                if out[k] != "\n":
                    out[k] = "x"
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _blank(out: list[str], i: int, j: int) -> None:
    for k in range(i, j):
        if out[k] != "\n":
            out[k] = " "


def _line(text: str, offset: int) -> int:
    return bisect_right(_newlines(text), offset - 1) + 1


@lru_cache(maxsize=8)
def _newlines(text: str) -> list[int]:
    return [m.start() for m in re.finditer("\n", text)]


def _close(code: str, i: int) -> int:
    """Index just past the bracket that closes the one at ``i`` (or the end of the text)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack: list[str] = []
    for j in range(i, len(code)):
        c = code[j]
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return j + 1
    return len(code)


def _test_at(text: str, code: str, after_paren: int) -> tuple[str, int, int] | None:
    """(title, body start, body end) of the test whose call's ``(`` ends at ``after_paren``."""
    m = re.compile(r"\s*(['\"`])").match(code, after_paren)
    if not m:
        return None
    q_start = m.end() - 1
    q_end = code.find(m.group(1), q_start + 1)
    if q_end < 0:
        return None
    title = text[q_start + 1 : q_end]
    call_end = _close(code, after_paren - 1) - 1
    rest = code[q_end + 1 : call_end]
    arrow, func = rest.find("=>"), rest.find("function")
    if arrow < 0 and func < 0:
        return None
    start = q_end + 1 + (arrow + 2 if arrow >= 0 and (func < 0 or arrow < func) else rest.find("{", func))
    while start < call_end and code[start].isspace():
        start += 1
    if start < call_end and code[start] == "{":
        return title, start + 1, _close(code, start) - 1
    return title, start, call_end  # an expression body: `() => expect(x).toBe(1)`


def _read_body(title: str, text: str, code: str, start: int, end: int, line: int) -> JsTest:
    body = code[start:end]
    test = JsTest(title=title, line=line)
    test.fingerprint = " ".join(text[start:end].split())
    test.calls = frozenset(_CALLED.findall(body))
    first_check = len(body)
    for m in _EXPECT.finditer(body):
        test.checks += 1
        first_check = min(first_check, m.start())
        chain_end, members, last = _chain(body, m.end() - 1)
        snippet = " ".join(text[start + m.start() : start + chain_end].split())
        at = _line(text, start + m.start())
        subject = text[start + m.end() : start + _close(body, m.end() - 1) - 1]
        if not members or last is None:
            test.lost.append((at, snippet))
        elif _trivial_expect(subject, members, text[start + last[0] : start + last[1]]):
            test.trivial.append((at, snippet))
    for m in _ASSERT.finditer(body):
        test.checks += 1
        first_check = min(first_check, m.start())
        stmt_end = _close(body, m.end() - 1)
        snippet = text[start + m.start() : start + stmt_end]
        inner = _TRIVIAL_ASSERT.match(snippet)
        if inner and _all_same_literal(inner.group(1)):
            test.trivial.append((_line(text, start + m.start()), " ".join(snippet.split())))
    test.early = _early_return(text, body, start, first_check)
    test.swallowed = _swallowed(text, body, start)
    return test


def _chain(body: str, paren: int) -> tuple[int, list[str], tuple[int, int] | None]:
    """After ``expect(`` at ``paren``: where the member chain ends, its members, and the argument
    span of its final call (None when the chain does not end in a call: no matcher ran)."""
    pos = _close(body, paren)
    members: list[str] = []
    last: tuple[int, int] | None = None
    while m := _MEMBER.match(body, pos):
        members.append(m.group(1))
        pos, last = m.end(), None
        nxt = re.compile(r"\s*\(").match(body, pos)
        if nxt:
            end = _close(body, nxt.end() - 1)
            pos, last = end, (nxt.end(), end - 1)
    return pos, members, last


def _trivial_expect(subject: str, members: list[str], arg: str) -> bool:
    """``expect(1).toBe(1)``, ``expect(x).toEqual(x)``, ``expect(true).toBeTruthy()``."""
    subject, arg = subject.strip(), arg.strip()
    if "not" in members or not subject:
        return False
    matcher, literal = members[-1], bool(_LITERAL.fullmatch(subject))
    if matcher in _EQUALITY:
        return arg == subject
    if matcher in {"toBeTruthy", "toBeDefined"}:
        return literal and subject not in _FALSY
    if matcher == "toBeFalsy":
        return subject in _FALSY
    return False


def _all_same_literal(args: str) -> bool:
    parts = [p.strip() for p in args.split(",")] if args else []
    if len(parts) == 1:
        return parts[0] == "true" or bool(re.fullmatch(r"[1-9]\d*", parts[0]))
    return len(parts) >= 2 and parts[0] == parts[1] and bool(_LITERAL.fullmatch(parts[0]))


def _early_return(text: str, body: str, start: int, first_check: int) -> tuple[int, str] | None:
    depth = 0
    for m in re.finditer(r"[{}()\[\]]|(?<![\w$.])return\b", body[:first_check]):
        tok = m.group(0)
        if tok in "{([":
            depth += 1
        elif tok in "})]":
            depth -= 1
        elif depth == 0:
            stmt_end = re.compile(r"[^;\n]*").match(body, m.end())
            stmt = body[m.start() : stmt_end.end() if stmt_end else m.end()]
            if "expect" in stmt or "assert" in stmt:
                return None  # `return expect(p).resolves...`: the check itself
            return _line(text, start + m.start()), " ".join(text[start + m.start() : start + m.start() + len(stmt)].split())
    return None


def _swallowed(text: str, body: str, start: int) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for m in re.finditer(r"(?<![\w$])try\s*\{", body):
        try_end = _close(body, m.end() - 1)
        block = body[m.end() : try_end]
        c = re.compile(r"\s*catch\s*(?:\([^)]*\))?\s*\{").match(body, try_end)
        if not c or not (_EXPECT.search(block) or _ASSERT.search(block)):
            continue
        handler = body[c.end() : _close(body, c.end() - 1)]
        if not re.search(r"\b(?:throw|expect|assert|fail|done)\b", handler):
            out.append((_line(text, start + m.start()), "try { expect(...) } catch { }"))
    return out


def compare(
    path: str,
    before: dict[str, JsTest],
    after: dict[str, JsTest],
    removed: Mapping[str, str],
    moved: Mapping[str, str] | None = None,
) -> tuple[list[str], list[str]]:
    """(refusals, notes) for one JS/TS test file; an empty mapping stands for an absent file.

    ``moved``: fingerprints of tests the change adds to other files -> those files."""
    moved = moved or {}
    refusals: list[str] = []
    notes: list[str] = []
    fresh = {t.fingerprint: k for k, t in after.items() if k not in before}
    renamed = {k: fresh[t.fingerprint] for k, t in before.items() if k not in after and t.fingerprint in fresh}
    for key, gone_test in before.items():
        if key in after or key in renamed:
            continue
        gone = sorted(gone_test.calls & removed.keys())
        if moved.get(gone_test.fingerprint, path) != path:
            notes.append(f"{quoted(path)}: test {quoted(key)} moved to {quoted(moved[gone_test.fingerprint])}")
        elif gone:
            notes.append(f"{quoted(path)}: test {quoted(key)} removed with {quoted(gone[0])} from {quoted(removed[gone[0]])}, "
                         "which the change deletes")
        else:
            refusals.append(f"{quoted(path)}: test {quoted(key)} (line {gone_test.line}) deleted")
    old_key = {v: k for k, v in renamed.items()}
    for key, test in after.items():
        old = before.get(key) or before.get(old_key.get(key, ""))
        refusals += _test_refusals(path, test, old)
    return refusals, notes


def _test_refusals(path: str, test: JsTest, old: JsTest | None) -> list[str]:
    out: list[str] = []
    label = f"'{test.title}'"
    for line, snippet in _new_items(test.lost, old.lost if old else []):
        out.append(f"{quoted(path)}:{line} test {label}: {quoted(snippet)} has no matcher, so it checks nothing")
    for line, snippet in _new_items(test.trivial, old.trivial if old else []):
        out.append(f"{quoted(path)}:{line} test {label}: {quoted(snippet)} cannot fail")
    for line, _ in _new_items(test.swallowed, old.swallowed if old else []):
        out.append(f"{quoted(path)}:{line} test {label}: its checks sit in a try whose catch swallows their failure")
    if test.early and not (old and old.early):
        out.append(f"{quoted(path)}:{test.early[0]} test {label} returns before its first check ({quoted(test.early[1])})")
    if old and not out and test.checks < old.checks:
        out.append(f"{quoted(path)}:{test.line} test {label} checks less ({plural(old.checks, 'check')} before, {test.checks} after)")
    return out


def _new_items(new: list[tuple[int, str]], old: list[tuple[int, str]]) -> list[tuple[int, str]]:
    had = Counter(s for _, s in old)
    out: list[tuple[int, str]] = []
    for line, s in new:
        if had[s]:
            had[s] -= 1
        else:
            out.append((line, s))
    return out
