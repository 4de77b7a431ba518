"""The textual test tripwire: skip markers added, fewer assertions, fewer tests, counted in lines.

It is what TEST_WEAKENED falls back on where it cannot read a file's structure: test files in Go,
Rust, Java/Kotlin and Ruby, a Python file that does not parse, and the skip/focus markers of JS/TS
(whose tests :mod:`.jstests` reads for the rest). Markers count as added when the added lines hold
more of them than the removed lines (rewording a reason is not an offence); assertions and tests
are counted over the whole file, comment lines skipped. A reviewer's tripwire, not a parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bosun.core.quoting import quoted
from bosun.gates.diffparse import FileDiff
from bosun.gates.testpaths import JS_SUFFIXES


@dataclass(frozen=True)
class Language:
    comment: tuple[str, ...]
    markers: re.Pattern[str]
    asserts: re.Pattern[str]
    tests: re.Pattern[str]


PYTHON = Language(
    comment=("#",),
    markers=re.compile(
        r"pytest\.mark\.(?:skip|skipif|xfail)\b"
        r"|\bpytest\.(?:skip|xfail|importorskip)\s*\("
        r"|\bunittest\.(?:skip|skipIf|skipUnless|expectedFailure)\b"
        r"|^\s*@(?:skip|skipIf|skipUnless|expectedFailure|xfail)\b"
        r"|\.skipTest\s*\("
        r"|\bSkipTest\b"
    ),
    asserts=re.compile(r"(?<![\w.])assert\b|\.assert\w*\s*\(|\bpytest\.(?:raises|warns)\s*\("),
    tests=re.compile(r"^\s*(?:async\s+)?def\s+test\w*\s*\(", re.MULTILINE),
)
JS = Language(
    comment=("//", "/*", "*"),
    markers=re.compile(
        r"(?<![\w.$])(?:it|test|describe|context|suite|specify)\.(?:skip|skipIf|todo|fails)\b"
        r"|(?<![\w.$])(?:xit|xtest|xdescribe|xcontext|xspecify|fit|ftest|fdescribe)\s*\("
        r"|\.only\s*\("
    ),
    asserts=re.compile(r"(?<![\w.$])(?:expect|assert)\s*\(|(?<![\w.$])assert\.\w+\s*\("),
    tests=re.compile(r"(?<![\w.$])(?:it|test)(?:\.\w+)*\s*\("),
)
GO = Language(
    comment=("//",),
    markers=re.compile(r"\.Skip(?:f|Now)?\s*\("),
    asserts=re.compile(r"\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(|\b(?:assert|require)\.\w+\s*\("),
    tests=re.compile(r"^func\s+(?:Test|Benchmark|Fuzz)\w*\s*\(", re.MULTILINE),
)
RUST = Language(
    comment=("//",),
    markers=re.compile(r"#\[ignore\b"),
    asserts=re.compile(r"\b(?:assert|assert_eq|assert_ne|debug_assert\w*)!\s*\(|#\[should_panic\b"),
    tests=re.compile(r"#\[(?:\w+::)?test\b"),
)
JVM = Language(
    comment=("//", "/*", "*"),
    markers=re.compile(r"@(?:Disabled|Ignore)\b|\bassume\w*\s*\("),
    asserts=re.compile(r"\bassert\w*\s*\(|\bverify\s*\(|\bfail\s*\("),
    tests=re.compile(r"@(?:Test|ParameterizedTest|RepeatedTest)\b"),
)
RUBY = Language(
    comment=("#",),
    markers=re.compile(r"(?<![\w.])(?:skip|pending|xit|xdescribe|xcontext|xspecify)\b|\bfit\b"),
    asserts=re.compile(r"(?<![\w.])(?:expect|assert\w*|refute\w*|must_\w+|wont_\w+)\b"),
    tests=re.compile(r"^\s*(?:it|specify|test)\b|^\s*def\s+test_", re.MULTILINE),
)


def language(path: str) -> Language | None:
    if path.endswith(".py"):
        return PYTHON
    if path.endswith(JS_SUFFIXES):
        return JS
    for suffix, lang in ((".go", GO), (".rs", RUST), (".java", JVM), (".kt", JVM), (".rb", RUBY)):
        if path.endswith(suffix):
            return lang
    return None


def added_markers(path: str, lang: Language, fdiff: FileDiff | None) -> list[str]:
    if fdiff is None:
        return []
    added = [
        (no, m.group(0).strip())
        for no, text in fdiff.added
        if not _is_comment(text, lang)
        for m in lang.markers.finditer(text)
    ]
    removed = sum(len(lang.markers.findall(text)) for _, text in fdiff.removed if not _is_comment(text, lang))
    if len(added) <= removed:
        return []  # markers moved or reworded, not added
    return [f"{quoted(path)}:{no} adds {quoted(marker)}" for no, marker in added]


def fewer(path: str, lang: Language, before: str, after: str) -> list[str]:
    problems = []
    for what, rx in (("assertions", lang.asserts), ("tests", lang.tests)):
        n_before, n_after = _count(rx, before, lang), _count(rx, after, lang)
        if n_after < n_before:
            problems.append(f"{quoted(path)} has fewer {what} ({n_before} before, {n_after} after)")
    return problems


def _count(rx: re.Pattern[str], text: str, lang: Language) -> int:
    return sum(len(rx.findall(line)) for line in text.splitlines() if not _is_comment(line, lang))


def _is_comment(line: str, lang: Language) -> bool:
    return line.lstrip().startswith(lang.comment)
