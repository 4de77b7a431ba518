"""TEST_WEAKENED: a change that makes the test suite check less.

A worker told to make tests pass can do it by making them test less. This gate looks at test files
only, and fails when

* a test file is deleted, or renamed to a path that is no longer a test file;
* skip, xfail, todo or focus markers are added (more in the added lines than in the removed ones,
  so rewording an existing ``@pytest.mark.skip(reason=...)`` is not an offence): ``pytest.mark.skip``
  / ``skipif`` / ``xfail``, ``pytest.skip(``, ``unittest.skip*``, ``self.skipTest(``, ``SkipTest``;
  ``it.skip(``, ``describe.skip(``, ``test.skip(``, ``test.todo``, ``xit(``, ``xdescribe(``, ``fit(``,
  ``fdescribe(`` and ``.only(`` (focusing narrows the suite as surely as skipping);
* a file has fewer assertions than before: ``assert`` statements, ``.assert*(`` calls (unittest and
  mock), ``pytest.raises(`` / ``pytest.warns(``; ``expect(``, ``assert(`` and ``assert.*(`` in JS/TS;
* a file declares fewer tests than before: ``def test*`` in Python, ``it(`` / ``test(`` in JS/TS.

Test files: Python ``test_*.py``, ``*_test.py`` and any ``.py`` under a ``tests/`` or ``test/``
directory; JS/TS ``*.test.*``, ``*.spec.*`` and any script under ``__tests__/``, ``tests/`` or
``test/``. Counting is textual and skips comment lines; it is a tripwire for a reviewer, not a parser.
"""

from __future__ import annotations

import re

from bosun.changes import FileChange, GateResult
from bosun.gates.context import GateContext, listing, plural
from bosun.gates.diffparse import FileDiff

TEST_WEAKENED = "TEST_WEAKENED"

_JS_SUFFIXES = (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts")
_PY_TEST_NAME = re.compile(r"test_.*\.py|.*_test\.py")
_JS_TEST_NAME = re.compile(r".*\.(?:test|spec)\.[cm]?[jt]sx?")
_PY_TEST_DIRS = frozenset({"tests", "test"})
_JS_TEST_DIRS = frozenset({"tests", "test", "__tests__"})

_PY_MARKERS = re.compile(
    r"pytest\.mark\.(?:skip|skipif|xfail)\b"
    r"|\bpytest\.(?:skip|xfail|importorskip)\s*\("
    r"|\bunittest\.(?:skip|skipIf|skipUnless|expectedFailure)\b"
    r"|^\s*@(?:skip|skipIf|skipUnless|expectedFailure|xfail)\b"
    r"|\.skipTest\s*\("
    r"|\bSkipTest\b"
)
_JS_MARKERS = re.compile(
    r"(?<![\w.$])(?:it|test|describe|context|suite|specify)\.(?:skip|skipIf|todo|fails)\b"
    r"|(?<![\w.$])(?:xit|xtest|xdescribe|xcontext|xspecify|fit|ftest|fdescribe)\s*\("
    r"|\.only\s*\("
)
_PY_ASSERTS = re.compile(r"(?<![\w.])assert\b|\.assert\w*\s*\(|\bpytest\.(?:raises|warns)\s*\(")
_JS_ASSERTS = re.compile(r"(?<![\w.$])(?:expect|assert)\s*\(|(?<![\w.$])assert\.\w+\s*\(")
_PY_TESTS = re.compile(r"^\s*(?:async\s+)?def\s+test\w*\s*\(", re.MULTILINE)
_JS_TESTS = re.compile(r"(?<![\w.$])(?:it|test)(?:\.\w+)*\s*\(")


def is_test_file(path: str) -> bool:
    *dirs, name = path.split("/")
    if name.endswith(".py"):
        return bool(_PY_TEST_NAME.fullmatch(name)) or any(d in _PY_TEST_DIRS for d in dirs)
    if name.endswith(_JS_SUFFIXES):
        return bool(_JS_TEST_NAME.fullmatch(name)) or any(d in _JS_TEST_DIRS for d in dirs)
    return False


def check_tests_weakened(ctx: GateContext) -> GateResult:
    diffs = {f.path: f for f in ctx.diff_files}
    problems: list[str] = []
    judged = 0
    for change in ctx.changes:
        old = change.old_path if change.status[:1] == "R" and change.old_path else change.path
        if not (is_test_file(old) or is_test_file(change.path)):
            continue
        judged += 1
        problems += _file_problems(ctx, change, old, diffs.get(change.path))
    if problems:
        return GateResult(TEST_WEAKENED, False, f"tests weakened: {listing(problems)}")
    if not judged:
        return GateResult(TEST_WEAKENED, True, "no test files changed")
    return GateResult(TEST_WEAKENED, True, f"{plural(judged, 'test file')} changed, none weakened")


def _file_problems(ctx: GateContext, change: FileChange, old: str, fdiff: FileDiff | None) -> list[str]:
    if change.status[:1] == "D":
        return [f"{change.path} deleted"] if is_test_file(change.path) else []
    if is_test_file(old) and not is_test_file(change.path):
        return [f"{old} moved out of the tests to {change.path}"]
    problems = _added_markers(change.path, fdiff) if fdiff else []
    before, after = ctx.base_text(old), ctx.new_text(change.path)
    if before is None or after is None:
        return problems  # new, binary or unreadable: nothing to compare
    js = change.path.endswith(_JS_SUFFIXES)
    for what, rx in (
        ("assertions", _JS_ASSERTS if js else _PY_ASSERTS),
        ("tests", _JS_TESTS if js else _PY_TESTS),
    ):
        n_before, n_after = _count(rx, before, js), _count(rx, after, js)
        if n_after < n_before:
            problems.append(f"{change.path} has fewer {what} ({n_before} before, {n_after} after)")
    return problems


def _added_markers(path: str, fdiff: FileDiff) -> list[str]:
    rx = _JS_MARKERS if path.endswith(_JS_SUFFIXES) else _PY_MARKERS
    js = rx is _JS_MARKERS
    added = [
        (no, m.group(0).strip())
        for no, text in fdiff.added
        if not _is_comment(text, js)
        for m in rx.finditer(text)
    ]
    removed = sum(len(rx.findall(text)) for _, text in fdiff.removed if not _is_comment(text, js))
    if len(added) <= removed:
        return []  # markers moved or reworded, not added
    return [f"{path}:{no} adds {marker}" for no, marker in added]


def _count(rx: re.Pattern[str], text: str, js: bool) -> int:
    return sum(len(rx.findall(line)) for line in text.splitlines() if not _is_comment(line, js))


def _is_comment(line: str, js: bool) -> bool:
    stripped = line.lstrip()
    if js:
        return stripped.startswith(("//", "/*", "*"))
    return stripped.startswith("#")
