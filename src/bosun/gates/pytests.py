"""Comparing a Python test file before and after a change, on the facts :mod:`.pyfacts` reads.

A refusal says what the worker did, in words, with the file, line and test name:

* a test pytest/unittest collected before is gone (unless it was renamed with its body intact, or it
  called a function the same change deletes, or belonged to a class deleted whole that is named for
  one: ``PairwiseTests`` and ``pairwise``), or is no longer collected;
* a later definition shadows an existing test (the last definition wins at import time);
* an assertion that cannot fail appears (``assert True``, ``assert x == x``, ``assertTrue(True)``);
* an assertion now sits in a ``try`` (or ``suppress``) that swallows ``AssertionError``/``Exception``;
* a function returns or skips itself before its first assertion, or a test's body became ``pass``;
* a function checks less than before (fewer live assertions), or a parametrized test lost cases;
* a skip/xfail marker is added. The exception: a *new* test may skip itself when an optional module
  or binary is missing (``importorskip``, ``skipif(shutil.which(...) is None)``, ``except ImportError``)
  when its file already had such skips, or is new; and a *new* test may skip under a guard the file's
  other tests already have (same condition, same call): a note with "adds a skip guard", which
  TEST_WEAKENED makes a reason for review;
* a module-level skip or a ``load_tests`` hook is added.

Changed expected literals in existing assertions and changed parametrize rows are *notes* for the
reviewer: fixing a wrong expectation is honest, and the held-out original tests judge it.

Every path, name and piece of source these sentences show is the worker's: it goes through
:func:`bosun.core.quoting.quoted`, never into a code span of bosun's own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

from bosun.core.quoting import quoted
from bosun.gates.context import plural
from bosun.gates.pyfacts import Check, Func, Marker, PyFile


def compare(
    path: str,
    before: PyFile | None,
    after: PyFile | None,
    removed: Mapping[str, str],
    moved: Mapping[str, str] | None = None,
) -> tuple[list[str], list[str]]:
    """(refusals, notes) for one file; ``before``/``after`` None: the file is new/deleted.

    ``removed`` maps names the change deletes from the code (functions, classes) to where they were;
    ``moved`` maps the fingerprints of tests the change adds to other files to those files.
    """
    found, notes = findings(path, before, after, removed, moved)
    return [text for _, text in found], notes


def findings(
    path: str,
    before: PyFile | None,
    after: PyFile | None,
    removed: Mapping[str, str],
    moved: Mapping[str, str] | None = None,
) -> tuple[list[tuple[str, str]], list[str]]:
    """``compare``'s refusals, each with the original function it is about ("" when it is about the
    file, or about a function the start tree did not have): ``([(original, refusal)], notes)``."""
    moved = moved or {}
    shown = quoted(path)
    base, new = before or PyFile(), after or PyFile()
    refusals: list[tuple[str, str]] = []
    notes: list[str] = []
    renamed = _renames(base.tests, new.tests)
    for name, lost in base.tests.items():
        if name in new.tests or name in renamed:
            continue
        gone = sorted(lost.calls & removed.keys())
        test = quoted(name)
        if moved.get(lost.fingerprint, path) != path:
            notes.append(f"{shown}: {test} moved to {quoted(moved[lost.fingerprint])}")
        elif folded := _folded_into(lost, new, base):
            notes.append(f"{shown}: {test} folded into the parametrized {quoted(folded)}")
        elif not gone and (subject := _class_subject(name, new, removed)):
            notes.append(f"{shown}: {test} removed with its class, named for {quoted(subject)}() from "
                         f"{quoted(removed[subject])}, which the change deletes")
        elif gone:
            notes.append(f"{shown}: {test} removed with {quoted(gone[0])}() from {quoted(removed[gone[0]])}, which the "
                         "change deletes")
        elif name in new.funcs:
            refusals.append((name, f"{shown}:{new.funcs[name].line} {test} is no longer collected as a test"))
        else:
            refusals.append((name, f"{shown}: {test} (was line {lost.line}) deleted"))
    known = {name for name, _, _ in base.shadowed}
    for name, first, later in new.shadowed:
        if name not in known:
            refusals.append((name if name in base.tests else "",
                             f"{shown}:{later} redefines {quoted(name)} of line {first}: only the later one runs"))
    old_name = {new_name: old for old, new_name in renamed.items()}
    allow_optional = before is None or base.has_optional_skips
    for name, func in new.funcs.items():
        original = name if name in base.funcs else old_name.get(name, "")
        old = base.funcs.get(original)
        found, noted = _marker_findings(shown, func, old, allow_optional, base.guards)
        refusals += [(original, text) for text in _func_refusals(shown, func, old, allow_optional) + found]
        notes += _func_notes(shown, func, old) + noted
    for marker in _added(base.module_markers, new.module_markers):
        if not (marker.optional and before is None):
            refusals.append(("", f"{shown}:{marker.line} adds a module-wide skip {quoted(marker.text)}"))
    if new.load_tests and not base.load_tests:
        refusals.append(("", f"{shown}: adds load_tests(), which decides which tests unittest runs"))
    return refusals, notes


def _subject(test: str) -> str:
    """What a test class is named for: ``PairwiseTests``, ``TestPairwise`` -> ``pairwise``."""
    cls = test.rpartition(".")[0].rpartition(".")[2]
    for affix in ("Tests", "Test"):
        cls = cls.removeprefix(affix) if cls.startswith(affix) else cls.removesuffix(affix)
    return cls.lower()


def _class_subject(test: str, new: PyFile, removed: Mapping[str, str]) -> str:
    """The removed definition a deleted test's class is named for (``PairwiseTests`` and ``pairwise``),
    when the change deletes the class whole (no test of it is left); else ""."""
    cls = test.rpartition(".")[0]
    subject = _subject(test)
    if not cls or not subject or any(name.startswith(cls + ".") for name in new.tests):
        return ""
    return next((name for name in removed if name.replace("_", "").lower() == subject), "")


def _folded_into(lost: Func, new: PyFile, base: PyFile) -> str:
    """The new parametrized test ``lost`` was folded into, or "": one the change adds to the same file
    that calls at least what ``lost`` checked with and whose rows and body hold every constant
    ``lost`` held (its inputs and its expected values) and checking something."""
    called = frozenset(c for check in lost.checks for c in check.calls)
    for name, test in new.tests.items():
        if name in base.tests or not test.cases or not test.live:
            continue
        if lost.literals <= test.literals and called <= frozenset(c for k in test.checks for c in k.calls):
            return name
    return ""


def added_tests(path: str, before: PyFile | None, after: PyFile | None) -> dict[str, str]:
    """Fingerprint -> ``path`` for each test ``after`` has and ``before`` had not (by body)."""
    had = {f.fingerprint for f in (before or PyFile()).tests.values()}
    return {f.fingerprint: path for f in (after or PyFile()).tests.values() if f.fingerprint not in had}


def _renames(old_tests: dict[str, Func], new_tests: dict[str, Func]) -> dict[str, str]:
    """Old name -> new name for tests renamed with their body (and decorators) intact."""
    fresh = {f.fingerprint: name for name, f in new_tests.items() if name not in old_tests}
    return {
        name: fresh[f.fingerprint] for name, f in old_tests.items() if name not in new_tests and f.fingerprint in fresh
    }


def _func_refusals(shown: str, func: Func, old: Func | None, allow_optional: bool) -> list[str]:
    """``shown``: the file's path, quoted."""
    where = f"{shown}:{{}} {quoted(func.name)}"
    out: list[str] = []
    for c in _added_checks(func.checks, old.checks if old else [], lambda c: c.trivial):
        out.append(f"{where.format(c.line)}: {quoted(c.text)} cannot fail")
    for c in _added_checks(func.checks, old.checks if old else [], lambda c: bool(c.swallowed)):
        out.append(f"{where.format(c.line)}: {quoted(c.text)} sits in a try whose {quoted(c.swallowed)} swallows "
                   "its failure")
    had = {t for _, t in old.self_patched} if old else set()
    for line, target in func.self_patched:
        if target not in had:
            out.append(f"{where.format(line)} replaces {quoted(target)} and then checks it")
    dead = [c for c in func.checks if c.dead]
    if func.exit and not (old and old.exit) and (dead or (func.is_test and func.exit_first)):
        line, text = func.exit
        verb = "skips itself" if "skip" in text.lower() else "returns"
        out.append(f"{where.format(line)} {verb} before its first assertion ({quoted(text)})")
    if func.is_test and func.empty and not (old and old.empty):
        out.append(f"{where.format(func.line)} has an empty body")
    fewer_cases = old and old.cases is not None and func.cases is not None and len(func.cases) < len(old.cases)
    if old and fewer_cases:
        out.append(
            f"{where.format(func.line)} has fewer parametrized cases ({len(old.cases or ())} before, {len(func.cases or ())} after)"
        )
    elif old and not out and _weight(func) < _weight(old):
        was, now = _weight(old), _weight(func)
        out.append(f"{where.format(func.line)} checks less ({plural(was, 'assertion')} before, {now} after)")
    return out


def _marker_findings(
    shown: str, func: Func, old: Func | None, allow_optional: bool, guards: set[str]
) -> tuple[list[str], list[str]]:
    """(refusals, notes) for the skip markers ``func`` gained. A new test may skip itself when an
    optional module is missing (when the file allows it), or under a guard the file's other tests
    already have (``except FileNotFoundError: pytest.skip(...)``): that one a person reads. Any other
    new marker, and any marker added to an existing test (it ran before), is refused."""
    refusals: list[str] = []
    notes: list[str] = []
    for marker in _added(old.markers if old else [], func.markers):
        where = f"{shown}:{marker.line} {quoted(func.name)}"
        if old is None and marker.optional and allow_optional:
            continue
        if old is None and marker.guard and marker.guard in guards:
            notes.append(f"{where} adds a skip guard like the file's others: {quoted(marker.text)}")
        else:
            refusals.append(f"{where} adds {quoted(marker.text)}")
    return refusals, notes


def _weight(func: Func) -> int:
    """Live assertions times parametrized cases: folding three asserts into three cases is no loss."""
    return len(func.live) * max(1, len(func.cases or ()))


def _func_notes(shown: str, func: Func, old: Func | None) -> list[str]:
    if old is None:
        return []
    notes: list[str] = []
    before = _expectations(old.checks)
    for key, (line, values) in _expectations(func.checks).items():
        if key in before and values != before[key][1]:
            subject = key.split(" ", 1)[1]
            was, now = ", ".join(sorted(before[key][1])), ", ".join(sorted(values))
            notes.append(f"{shown}:{line} {quoted(func.name)} changes an expected value: {quoted(subject)} "
                         f"{quoted(was)} -> {quoted(now)}")
    if old.cases is not None and func.cases is not None and len(func.cases) >= len(old.cases):
        changed = len(set(old.cases) - set(func.cases))
        if changed:
            notes.append(f"{shown}:{func.line} {quoted(func.name)} changes {changed} of its parametrized cases")
    return notes


def _expectations(checks: list[Check]) -> dict[str, tuple[int, set[str]]]:
    out: dict[str, tuple[int, set[str]]] = {}
    for c in checks:
        if c.expect:
            key, value = c.expect
            line, values = out.setdefault(key, (c.line, set()))
            values.add(value)
    return out


def _added_checks(new: list[Check], old: list[Check], pick: Callable[[Check], bool]) -> list[Check]:
    """Checks in ``new`` matching ``pick`` beyond those ``old`` already had (by text)."""
    had = Counter(c.text for c in old if pick(c))
    out: list[Check] = []
    for c in new:
        if pick(c):
            if had[c.text]:
                had[c.text] -= 1
            else:
                out.append(c)
    return out


def _added(old: list[Marker], new: list[Marker]) -> list[Marker]:
    """Markers in ``new`` beyond those in ``old``, compared without their reasons."""
    had = Counter(m.key for m in old)
    out: list[Marker] = []
    for m in new:
        if had[m.key]:
            had[m.key] -= 1
        else:
            out.append(m)
    return out
