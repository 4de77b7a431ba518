"""TEST_WEAKENED: a change that makes the test suite check less.

A worker told to make tests pass can do it by making them test less. This gate reads every changed
test file (test modules and the harness code beside them, see :mod:`.testpaths`) before and after:

* Python semantically (:mod:`.pyfacts`, :mod:`.pytests`): the tests pytest/unittest collect, their
  assertions and markers, so a same-named test appended with ``assert True``, an early ``return``
  or a ``try/except AssertionError`` is caught even when the line counts go up;
* JS/TS lightly (:mod:`.jstests`): ``it``/``test`` bodies, ``expect`` chains, plus the textual marker
  tripwire for ``.skip``/``.only``/``xit``...;
* other languages (Go, Rust, Java/Kotlin, Ruby) and Python that does not parse: the textual tripwire
  (:mod:`.tripwire`);
* test data under test directories (:mod:`.testdata`): deleted, emptied or shrunk.

A test file deleted or moved out of the suite fails, as does a deleted test, except where the test
called a function or class the same change deletes from the code (its subject is gone). Findings
that are honest as often as not (a changed expected value, changed test data) are listed for the
reviewer in the detail without failing the gate.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bosun.core.changes import FileChange, GateResult
from bosun.core.quoting import quoted
from bosun.gates import jstests, pytests, testdata, tripwire
from bosun.gates.context import GateInputs, listing, plural
from bosun.gates.diffparse import FileDiff
from bosun.gates.pyfacts import read_file
from bosun.gates.testpaths import is_js, is_python
from bosun.gates.testset import OriginalRuns, TestSet

TEST_WEAKENED = "TEST_WEAKENED"

__all__ = ["TEST_WEAKENED", "check_tests_weakened"]

_DEFINES = re.compile(r"^\s*(?:async\s+def|def|class)\s|\bfunction\b|=>|\bclass\s", re.MULTILINE)
_PY_DEFS = re.compile(r"^\s*(?:async\s+def|def|class)\s+(\w+)", re.MULTILINE)
_JS_DEFS = re.compile(
    r"(?:function\*?\s+|class\s+|(?:const|let|var)\s+)([A-Za-z_$][\w$]*)"
    r"|^\s*(?:async\s+)?([A-Za-z_$][\w$]*)\s*\([^)]*\)\s*\{",
    re.MULTILINE,
)


def check_tests_weakened(inputs: GateInputs) -> GateResult:
    diffs = {f.path: f for f in inputs.diff_files}
    tests = inputs.tests
    # Reading the changed code costs a read of the start tree per file: only worth it when tests changed.
    touches_tests = any(tests.is_test_file(c.path) or tests.is_test_file(_old_path(c)) for c in inputs.changes)
    removed = removed_definitions(inputs) if touches_tests else {}
    moved = tests_added(inputs) if touches_tests else {}
    refusals: list[str] = []
    notes: list[str] = []
    judged = 0
    for change in inputs.changes:
        data = testdata.judge(change, inputs.base_text, inputs.new_text, tests.is_test_data)
        if data is not None:
            refusals += data[0]
            notes += data[1]
            continue
        old = _old_path(change)
        if not (tests.is_test_file(old) or tests.is_test_file(change.path)):
            continue
        judged += 1
        found, noted = _file_findings(inputs, change, old, diffs.get(change.path), removed, moved)
        refusals += found
        notes += noted
    review = f"; for review: {listing(notes)}" if notes else ""
    if refusals:
        return GateResult(TEST_WEAKENED, False, f"tests weakened: {listing(refusals)}{review}")
    reasons = review_reasons(notes)
    if not judged:
        return GateResult(TEST_WEAKENED, True, f"no test files changed{review}", review=reasons)
    return GateResult(TEST_WEAKENED, True, f"{plural(judged, 'test file')} changed, none weakened{review}",
                      review=reasons)


# Notes that only a person can judge, by the phrase their producer writes (pytests, jstests, testdata).
# The others (a test moved to another file) are facts for the record. A test deleted with the code it
# tested is for a person: whether that code is really gone, or only hidden from the names read here.
EXPECTED_VALUE_CHANGED = "EXPECTED_VALUE_CHANGED"
TEST_DATA_CHANGED = "TEST_DATA_CHANGED"
SKIP_GUARD_ADDED = "SKIP_GUARD_ADDED"
SUBJECT_REMOVED = "SUBJECT_REMOVED"
BEHAVIOUR_CHANGED = "BEHAVIOUR_CHANGED"
CHANGED_BEHAVIOUR_PHRASE = "the behaviour it checked changed"
_FIT = "check the old values were wrong, not that the new ones were made to fit"
_REVIEW_PHRASES = (
    ("changes an expected value", EXPECTED_VALUE_CHANGED, "the change rewrites expected values in existing tests", _FIT),
    ("of its parametrized cases", EXPECTED_VALUE_CHANGED, "the change rewrites parametrized cases of existing tests",
     _FIT),
    ("(test data) changed", TEST_DATA_CHANGED, "the change edits test data that existing tests compare against", _FIT),
    ("adds a skip guard", SKIP_GUARD_ADDED, "the change adds a skip guard like those already in the file",
     "check the condition really holds only where the test cannot run"),
    ("which the change deletes", SUBJECT_REMOVED, "the change deletes tests together with the code they test",
     "check that code is meant to go"),
    (CHANGED_BEHAVIOUR_PHRASE, BEHAVIOUR_CHANGED, "the change deletes or rewrites tests whose original version "
     "passed before it and fails on it", "check the behaviour they checked is meant to change"),
)


def review_reasons(notes: list[str]) -> list[dict[str, str]]:
    """One review reason per kind of note: its code and one sentence naming where (up to three places)."""
    found: dict[str, tuple[str, str, list[str]]] = {}
    for note in notes:
        for phrase, code, sentence, ask in _REVIEW_PHRASES:
            if phrase in note:
                found.setdefault(code, (sentence, ask, []))[2].append(note)
                break
    return [{"code": code, "sentence": f"{sentence}: {listing(where, 3)}; {ask}"}
            for code, (sentence, ask, where) in found.items()]


def removed_definitions(inputs: GateInputs) -> dict[str, str]:
    """Functions and classes the change deletes from non-test code: name -> the file they were in."""
    return removed_names(inputs.changes, inputs.base_text, inputs.new_text, inputs.tests)


def removed_names(changes: list[FileChange], base_text: Callable[[str], str | None],
                  new_text: Callable[[str], str | None], tests: TestSet) -> dict[str, str]:
    """Functions and classes ``changes`` delete from non-test code: name -> the file they were in.

    A name defined in one changed file and still defined in another (a move) is not removed, nor one
    the file still binds itself another way (``add = operator.add``, ``from .ops import add``): it still
    exists. A name imported from another package instead (``from itertools import pairwise``) is the
    other package's: the project's own is gone.
    """
    before: dict[str, str] = {}
    after: set[str] = set()
    for change in changes:
        old = _old_path(change)
        if tests.is_test_file(old) or not (is_python(old) or is_js(old)):
            continue
        rx = _PY_DEFS if is_python(old) else _JS_DEFS
        for name in _names(rx, base_text(old)):
            before.setdefault(name, old)
        if change.status[:1] != "D":
            text = new_text(change.path)
            after |= _names(rx, text) | (_bound_names(text, change.path) if is_python(change.path) else set())
    return {name: path for name, path in before.items() if name not in after}


def _bound_names(text: str | None, path: str) -> set[str]:
    """Names a Python module binds at its top level itself: assignments, definitions, imports from its
    own package (also under a top-level ``if`` or ``try``). Empty when it does not parse."""
    import ast

    try:
        tree = ast.parse(text or "")
    except (SyntaxError, ValueError):
        return set()
    package = path.split("/")[-2] if "/" in path else ""
    names: set[str] = set()
    body = list(tree.body)
    while body:
        node = body.pop()
        if isinstance(node, ast.If | ast.Try):
            body += [*node.body, *node.orelse, *getattr(node, "finalbody", []),
                     *(s for h in getattr(node, "handlers", []) for s in h.body)]
        elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == package):
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def tests_added(inputs: GateInputs) -> dict[str, str]:
    """Tests the change adds, by body fingerprint, to the file they are added to: a test deleted
    from one file and added to another with the same body was moved, not deleted."""
    added: dict[str, str] = {}
    for change in inputs.changes:
        if change.status[:1] == "D" or not inputs.tests.is_test_module(change.path):
            continue
        old = _old_path(change)
        before = inputs.base_text(old) if change.status[:1] != "A" else None
        after = inputs.new_text(change.path)
        if after is None:
            continue
        if is_python(change.path):
            collect = True  # test modules only; the same arguments as _python(), so the cache is shared
            new_facts = read_file(after, collect)
            old_facts = read_file(before, collect) if before is not None else None
            if new_facts is not None:
                added.update(pytests.added_tests(change.path, old_facts, new_facts))
        elif is_js(change.path):
            added.update(jstests.added_tests(change.path, jstests.read_tests(before or ""), jstests.read_tests(after)))
    return added


def _names(rx: re.Pattern[str], text: str | None) -> set[str]:
    if not text:
        return set()
    return {g for m in rx.finditer(text) for g in m.groups() if g}


def _old_path(change: FileChange) -> str:
    return change.old_path if change.status[:1] == "R" and change.old_path else change.path


def _file_findings(
    inputs: GateInputs,
    change: FileChange,
    old: str,
    fdiff: FileDiff | None,
    removed: dict[str, str],
    moved: dict[str, str],
) -> tuple[list[str], list[str]]:
    deleted = change.status[:1] == "D"
    tests = inputs.tests
    if not deleted and tests.is_test_file(old) and not tests.is_test_file(change.path):
        return [f"{quoted(old)} moved out of the tests to {quoted(change.path)}"], []
    before = inputs.base_text(old) if change.status[:1] != "A" else None
    after = None if deleted else inputs.new_text(change.path)
    emptied = bool(before and before.strip()) and after is not None and not after.strip()
    if not (tests.is_test_module(old) or tests.is_test_module(change.path)) and (deleted or emptied):
        # Harness code removed: TEST_HARNESS_CHANGED lists it. A module that only holds values
        # (`CASES = [...]`) is test data written in code, and losing it loses cases.
        if before is not None and not _DEFINES.search(before):
            return [f"{quoted(old)} (test data) {'deleted' if deleted else 'emptied'}"], []
        return [], []
    if is_python(change.path) or (deleted and is_python(old)):
        collect = tests.is_test_module(change.path) or (deleted and tests.is_test_module(old))
        found = _python(change.path, before, after, removed, moved, collect)
        if found is not None:
            return _whole_file(change, *_by_what_ran(old, *found, inputs.originals))
    elif is_js(change.path) and not (deleted and not jstests.read_tests(before or "")):
        # (A deleted file in which no test block could be found is judged by the tripwire: deleted.)
        refusals, notes = jstests.compare(
            change.path, jstests.read_tests(before or ""), jstests.read_tests(after or ""), removed, moved
        )
        return _whole_file(change, refusals + tripwire.added_markers(change.path, tripwire.JS, fdiff), notes)
    return _textual(change, fdiff, before, after), []


def _whole_file(change: FileChange, refusals: list[str], notes: list[str]) -> tuple[list[str], list[str]]:
    """A deleted file is one finding, not one per test it held."""
    if change.status[:1] == "D" and refusals:
        return [f"{quoted(change.path)} deleted ({plural(len(refusals), 'test')} lost)"], notes
    return refusals, notes


def _by_what_ran(path: str, found: list[tuple[str, str]], notes: list[str],
                 originals: OriginalRuns) -> tuple[list[str], list[str]]:
    """Each finding about one of the start tree's tests, judged by how its original version ran: one
    that passed before the change and fails on it tested behaviour the change changed, so deleting or
    rewriting it weakens nothing (a note, BEHAVIOUR_CHANGED); one that still passes on the change
    did not need to go (the refusal stands), and so does one bosun has not seen run."""
    refusals: list[str] = []
    for test, text in found:
        if test and originals.behaviour_changed(path, test):
            notes.append(f"{text}; its original passed before the change and fails on it: {CHANGED_BEHAVIOUR_PHRASE}")
        else:
            refusals.append(text)
    return refusals, notes


def _python(
    path: str, before: str | None, after: str | None, removed: dict[str, str], moved: dict[str, str],
    collect: bool,
) -> tuple[list[tuple[str, str]], list[str]] | None:
    """The semantic comparison, or None when a side does not parse (the tripwire then judges)."""
    old_facts = read_file(before, collect) if before is not None else None
    new_facts = read_file(after, collect) if after is not None else None
    if (before is not None and old_facts is None) or (after is not None and new_facts is None):
        return None
    if after is None and collect and old_facts is not None and not old_facts.tests:
        return None  # a deleted test module without a test we could read: the tripwire says "deleted"
    return pytests.findings(path, old_facts, new_facts, removed, moved)


def _textual(change: FileChange, fdiff: FileDiff | None, before: str | None, after: str | None) -> list[str]:
    if change.status[:1] == "D":
        return [f"{quoted(change.path)} deleted"]
    lang = tripwire.language(change.path)
    if lang is None:
        return []
    problems = tripwire.added_markers(change.path, lang, fdiff)
    if before is not None and after is not None:
        problems += tripwire.fewer(change.path, lang, before, after)
    return problems
