"""What the test-integrity gates are handed: the test files the runners reported, how the original
tests ran, and what a worker's own test proves (pure: dicts and texts in)."""

from __future__ import annotations

from bosun.core.contract import VerifyCommand
from bosun.gates.invocations import runner_of
from bosun.gates.owntests import BEHAVIOUR, NEW_NAME, classify, introduced_names, source_of
from bosun.gates.pyfacts import read_file
from bosun.gates.pytests import compare
from bosun.gates.tests_weakened import check_tests_weakened
from bosun.gates.testset import OriginalRuns, TestSet, function_outcomes, split_id
from tests.gates.test_checks import Change


def doc(**reports: dict) -> dict:
    return {"commands": [{"tests": r} for r in reports.values()]}


def test_a_file_the_runner_reported_is_a_test_whatever_its_name():
    tests = TestSet.of(doc(a={"files": ["checks.py"]}))
    assert tests.is_test_module("checks.py") and tests.is_test_file("checks.py")
    assert not tests.is_test_data("checks.py")
    assert not TestSet().is_test_module("checks.py")
    assert TestSet().is_test_module("test.py")  # the names stay the fallback
    assert TestSet().is_harness("tests/helpers.py") and TestSet().is_test_path("tests/data/x.json")


def test_of_verification_reads_every_run_of_the_matrix():
    verification = {**doc(a={"files": ["a.py"]}), "baseline": doc(a={"files": ["b.py"]}),
                    "heldout": doc(a={"files": ["c.py"]}), "own": doc(a={"files": ["d.py"]})}
    assert TestSet.of_verification(verification).reported == {"a.py", "b.py", "c.py", "d.py"}


def test_ids_split_into_the_file_and_the_function_pyfacts_names():
    assert split_id("tests/test_x.py::TestA::test_b[1-2]") == ("tests/test_x.py", "TestA.test_b")
    assert split_id("test.py::test_c") == ("test.py", "test_c")


def test_a_parametrized_function_failed_when_one_case_failed():
    outcomes = function_outcomes(doc(a={"passed": ["t.py::test_p[1]"], "failed": ["t.py::test_p[2]"],
                                        "skipped": ["t.py::test_s"], "collect_errors": ["u.py"]}))
    assert outcomes[("t.py", "test_p")] == "failed" and outcomes[("t.py", "test_s")] == "skipped"
    assert outcomes[("u.py", "*")] == "failed"


def test_behaviour_changed_needs_a_pass_before_and_a_failure_on_the_change():
    runs = OriginalRuns(before={("t.py", "test_a"): "passed", ("t.py", "test_b"): "failed",
                                ("t.py", "test_c"): "passed"},
                        on_change={("t.py", "test_a"): "failed", ("t.py", "test_b"): "failed",
                                   ("t.py", "test_c"): "passed", ("u.py", "*"): "failed"})
    assert runs.behaviour_changed("t.py", "test_a")
    assert not runs.behaviour_changed("t.py", "test_b")  # it failed before: the change fixed nothing it checks
    assert not runs.behaviour_changed("t.py", "test_c")  # it still passes: nothing needed it gone
    assert not runs.behaviour_changed("t.py", "test_d")  # not seen run: bosun cannot say


TWO = "from m import f\n\n\ndef test_one():\n    assert f(1) == 2\n\n\ndef test_two():\n    assert f(2) == 3\n"
ONE = "from m import f\n\n\ndef test_one():\n    assert f(1) == 2\n"


def test_a_deleted_test_is_classified_by_how_its_original_ran():
    change = Change().file("tests/test_m.py", TWO, ONE)
    assert "test_two (was line 8) deleted" in check_tests_weakened(change.ctx()).detail
    ran = OriginalRuns(before={("tests/test_m.py", "test_two"): "passed"},
                       on_change={("tests/test_m.py", "test_two"): "failed"})
    result = check_tests_weakened(change.ctx(originals=ran))
    assert result.ok and [r["code"] for r in result.review] == ["BEHAVIOUR_CHANGED"]
    still = OriginalRuns(before={("tests/test_m.py", "test_two"): "passed"},
                         on_change={("tests/test_m.py", "test_two"): "passed"})
    assert not check_tests_weakened(change.ctx(originals=still)).ok


def test_a_root_test_py_and_a_reported_file_are_judged():
    skip = TWO.replace("def test_two", "import pytest\n\n\n@pytest.mark.skip\ndef test_two")
    assert not check_tests_weakened(Change().file("test.py", TWO, skip).ctx()).ok
    checks = Change().file("checks.py", TWO, skip)
    assert check_tests_weakened(checks.ctx()).ok  # by name, checks.py is code
    assert not check_tests_weakened(checks.ctx(tests=TestSet(frozenset({"checks.py"})))).ok


FOLDED = ("import pytest\nfrom m import f\n\n\n@pytest.mark.parametrize(('x', 'y'), [(1, 2), (2, 3)])\n"
          "def test_f(x, y):\n    assert f(x) == y\n")


def test_tests_folded_into_a_parametrized_test_are_not_lost():
    refusals, notes = compare("t.py", read_file(TWO), read_file(FOLDED), {})
    assert refusals == [] and notes == ["t.py: test_one folded into the parametrized test_f",
                                        "t.py: test_two folded into the parametrized test_f"]
    partial = FOLDED.replace("(2, 3)", "(5, 6)")  # the case test_two checked is gone
    refusals, _ = compare("t.py", read_file(TWO), read_file(partial), {})
    assert refusals == ["t.py: test_two (was line 8) deleted"]


def test_which_runner_a_verify_entry_reports_through():
    def runner(run: list[str], **kw: object) -> str | None:
        return runner_of(VerifyCommand(run=run, **kw))  # type: ignore[arg-type]

    assert runner(["python", "-m", "pytest", "-q"]) == "pytest"
    assert runner(["python3.12", "-X", "dev", "-m", "pytest"]) == "pytest"
    assert runner(["uv", "run", "pytest", "tests"]) == "pytest"
    assert runner(["cd sub && python -m pytest"], shell=True) == "pytest"
    assert runner(["python", "-m", "unittest", "discover"]) == "unittest"
    assert runner(["make", "check"]) is None and runner(["python", "check.py"]) is None
    assert runner(["python", "-c", "import pytest"]) is None
    assert runner(["./run.sh"], junit="out.xml") == "junit"


def test_a_test_that_fails_only_on_a_new_name_proves_nothing():
    new = introduced_names([("def add(a, b):\n    return a - b\n", "FIXED = 1\n\ndef add(a, b):\n    return a + b\n")],
                           ["pkg/extra.py"])
    assert {"FIXED", "extra", "pkg.extra"} <= new and "add" not in new
    assert classify("AttributeError: module 'calc' has no attribute 'FIXED'", False, None, new)[0] == NEW_NAME
    assert classify("ModuleNotFoundError: No module named 'pkg.extra'", False, None, new)[0] == NEW_NAME
    assert classify(None, True, None, new) == (NEW_NAME, "its module did not import without the change")
    in_fixture = 'failed on setup with "AttributeError: module \'calc\' has no attribute \'FIXED\'"'
    assert classify(in_fixture, False, None, new)[0] == NEW_NAME
    asks = "def test_x():\n    assert hasattr(calc, 'FIXED')\n"
    assert classify("AssertionError: assert False", False, asks, new)[0] == NEW_NAME
    assert classify("AssertionError: assert -1 == 5", False, "def test_x():\n    assert add(2, 3) == 5\n",
                    new) == (BEHAVIOUR, "")
    missing = "FileNotFoundError: [Errno 2] No such file or directory: '/w/data/table.json'"
    assert classify(missing, False, None, new, ["data/table.json"])[0] == NEW_NAME
    assert classify(missing, False, None, new, ["data/other.json"])[0] == BEHAVIOUR
    # An AttributeError about a name the change does not add is the bug itself.
    assert classify("AttributeError: 'NoneType' object has no attribute 'group'", False, None, new)[0] == BEHAVIOUR


def test_a_tests_source_is_read_by_its_qualified_name():
    text = "import pytest\n\n\nclass TestA:\n    @pytest.mark.slow\n    def test_b(self):\n        assert 1\n"
    assert source_of(text, "TestA.test_b") == "    @pytest.mark.slow\n    def test_b(self):\n        assert 1"
    assert source_of(text, "TestA.test_c") is None and source_of("def (", "x") is None
    long = "def test_l():\n" + "    x = 1\n" * 100
    assert source_of(long, "test_l", max_lines=5).endswith("[... 96 more lines]")
