"""Which files are tests, and how the start tree's tests fared, as the verify commands' runners
reported it: the data the test-integrity checks are handed (pure: dicts in, facts out).

Invariant: **a file a verify command ran tests from is a test file, whatever it is called.** The
runners' reports (:mod:`bosun.isolation.test_reports`) on the start tree, on the change, and on the
trees built from both name those files; the name patterns of :mod:`bosun.gates.testpaths` (as broad
as the runners' defaults) are the fallback for everything no report names: a test the verify
commands do not select is still the user's test, and a command with no per-test report (``make
check``) names nothing. Harness and test data stay by name (a report names the files tests are
defined in, not the helpers they import): ``conftest.py``, and what lies under a test directory.

:class:`OriginalRuns` is how each of the start tree's test functions ran before the change (the
baseline) and on the change's code with the original tests put back (the held-out run):
TEST_WEAKENED tells a test deleted or rewritten because the behaviour it checked changed from one
made to check less by that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bosun.gates import testpaths

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
_WHOLE_FILE = "*"  # the key of a file whose module failed to import: every test of it failed


@dataclass(frozen=True)
class TestSet:
    """The test files of a run: those the runners reported, and by name those no report names."""

    __test__ = False  # not a pytest test class, whatever its name

    reported: frozenset[str] = frozenset()

    def is_test_module(self, path: str) -> bool:
        return path in self.reported or testpaths.is_test_module(path)

    def is_harness(self, path: str) -> bool:
        return not self.is_test_module(path) and testpaths.is_harness(path)

    def is_test_file(self, path: str) -> bool:
        """A test module or harness code: what TEST_WEAKENED reads as tests."""
        return self.is_test_module(path) or testpaths.is_harness(path)

    def is_test_path(self, path: str) -> bool:
        """A test file or anything under a test directory (helpers, fixtures, data)."""
        return self.is_test_file(path) or testpaths.in_test_dir(path)

    def is_test_data(self, path: str) -> bool:
        return not self.is_test_module(path) and testpaths.is_test_data(path)

    @classmethod
    def of(cls, *docs: Mapping[str, Any] | None) -> TestSet:
        """The files every command of these verification docs reported tests from."""
        return cls(frozenset(f for doc in docs for c in _commands(doc) for f in _report(c).get("files") or ()))

    @classmethod
    def of_verification(cls, verification: Mapping[str, Any]) -> TestSet:
        """Every run a verification doc holds: the change, the baseline, the held-out originals and
        the change's tests on the start tree's code."""
        return cls.of(verification, *(verification.get(k) for k in ("baseline", "heldout", "own")))


def _commands(doc: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return [c for c in (doc or {}).get("commands") or [] if isinstance(c, Mapping)]


def _report(cmd: Mapping[str, Any]) -> Mapping[str, Any]:
    tests = cmd.get("tests")
    return tests if isinstance(tests, Mapping) else {}


def split_id(test_id: str) -> tuple[str, str]:
    """``("tests/test_x.py", "TestA.test_b")`` of ``tests/test_x.py::TestA::test_b[1-2]``: the file
    and the qualified function name, the way :mod:`bosun.gates.pyfacts` names a test."""
    path, _, rest = test_id.partition("::")
    parts = rest.split("::") if rest else []
    if parts:
        parts[-1] = parts[-1].partition("[")[0]
    return path, ".".join(parts)


def function_outcomes(doc: Mapping[str, Any] | None) -> dict[tuple[str, str], str]:
    """Each test function's outcome over every command of a verification doc (a parametrized
    function failed when any of its cases failed); a module that failed to import failed whole."""
    out: dict[tuple[str, str], str] = {}
    rank = {SKIPPED: 0, PASSED: 1, FAILED: 2}
    for cmd in _commands(doc):
        report = _report(cmd)
        for outcome in (PASSED, SKIPPED, FAILED):
            for test_id in report.get(outcome) or ():
                key = split_id(str(test_id))
                if rank[outcome] >= rank.get(out.get(key, SKIPPED), 0):
                    out[key] = outcome
        for path in report.get("collect_errors") or ():
            out[(str(path), _WHOLE_FILE)] = FAILED
    return out


@dataclass(frozen=True)
class OriginalRuns:
    """How the start tree's test functions ran before the change and on the change's code."""

    before: Mapping[tuple[str, str], str] = field(default_factory=dict)
    on_change: Mapping[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def of_verification(cls, verification: Mapping[str, Any]) -> OriginalRuns:
        held = verification.get("heldout")
        if not isinstance(held, Mapping):
            return cls()
        return cls(function_outcomes(verification.get("baseline")), function_outcomes(held))

    def behaviour_changed(self, path: str, test: str) -> bool:
        """The original ``test`` of ``path`` passed before the change and fails on the change's code:
        the behaviour it checked changed, so deleting or rewriting it weakens nothing."""
        return self._outcome(self.before, path, test) == PASSED and self._outcome(self.on_change, path, test) == FAILED

    @staticmethod
    def _outcome(outcomes: Mapping[tuple[str, str], str], path: str, test: str) -> str | None:
        if (path, _WHOLE_FILE) in outcomes:
            return FAILED
        return outcomes.get((path, test))


def touched_tests(tests: TestSet, paths: Iterable[str]) -> list[str]:
    """The paths among ``paths`` that are test paths, sorted."""
    return sorted({p for p in paths if p and tests.is_test_path(p)})
