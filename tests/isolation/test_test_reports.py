"""Reading what a test runner reported: pytest's JUnit XML as a real pytest writes it, unittest's summary."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from bosun.isolation.test_reports import read_junit, read_unittest, report_path
from bosun.isolation.verify_commands import disagrees

CALC = "def add(a, b):\n    return a - b\n"
TESTS = """import pytest

import calc


@pytest.mark.parametrize("a", [1, 2])
def test_p(a):
    assert calc.add(a, 0) == a


@pytest.mark.xfail
def test_xf():
    assert 0


@pytest.mark.skip
def test_skipped():
    pass


def test_fails():
    assert calc.add(2, 3) == 5


class TestK:
    def test_k(self):
        assert calc.add(1, 0) == 1
"""


def junit(tmp_path: Path, files: dict[str, str], *args: str, cwd: str = "") -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    out = tmp_path / "report.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                    f"--junitxml={out}", "--rootdir", str(tmp_path), *args], cwd=tmp_path / cwd,
                   capture_output=True, check=False, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)})
    return out


def test_each_test_is_named_by_its_file_from_the_repository_root(tmp_path):
    out = junit(tmp_path, {"calc.py": CALC, "tests/test_calc.py": TESTS}, "tests")
    report = read_junit(out, tmp_path, tmp_path)
    assert report is not None
    assert report["passed"] == ["tests/test_calc.py::test_p[1]", "tests/test_calc.py::test_p[2]",
                                "tests/test_calc.py::TestK::test_k"]
    assert report["failed"] == ["tests/test_calc.py::test_fails"]
    assert report["skipped"] == ["tests/test_calc.py::test_xf", "tests/test_calc.py::test_skipped"]
    assert report["files"] == ["tests/test_calc.py"] and report["count"] == 6
    assert report["messages"]["tests/test_calc.py::test_fails"].startswith("assert -1 == 5")


def test_a_command_run_from_a_subdirectory_still_names_repository_paths(tmp_path):
    out = junit(tmp_path, {"calc.py": CALC, "pkg/tests/test_calc.py": TESTS}, "tests", cwd="pkg")
    report = read_junit(out, tmp_path, tmp_path / "pkg")
    assert report is not None and report["files"] == ["pkg/tests/test_calc.py"]
    assert "pkg/tests/test_calc.py::test_fails" in report["failed"]


def test_a_module_that_does_not_import_is_a_collection_error_of_its_file(tmp_path):
    out = junit(tmp_path, {"calc.py": CALC, "tests/test_new.py": "from calc import mul\n\ndef test_mul():\n    pass\n"},
                "tests")
    report = read_junit(out, tmp_path, tmp_path)
    assert report is not None
    assert report["collect_errors"] == ["tests/test_new.py"] and report["files"] == ["tests/test_new.py"]
    assert report["count"] == 0 and report["failed"] == []
    assert disagrees(0, report) == "exited 0, but its report lists 1 failing test(s)"
    assert disagrees(2, report) is None


def test_doctests_do_not_make_their_module_a_test_file(tmp_path):
    doc = 'def add(a, b):\n    """\n    >>> add(1, 1)\n    2\n    """\n    return a + b\n'
    out = junit(tmp_path, {"calc.py": doc}, "--doctest-modules", "calc.py")
    report = read_junit(out, tmp_path, tmp_path)
    assert report is not None and report["count"] == 1 and report["files"] == []


def test_a_missing_or_linked_report_is_none(tmp_path):
    assert read_junit(tmp_path / "none.xml", tmp_path, tmp_path) is None
    (tmp_path / "real.xml").write_text("<testsuites><testsuite><testcase classname='a' name='t'/></testsuite></testsuites>")
    (tmp_path / "link.xml").symlink_to(tmp_path / "real.xml")
    assert read_junit(tmp_path / "link.xml", tmp_path, tmp_path) is None
    plain = read_junit(tmp_path / "real.xml")
    assert plain is not None and plain["passed"] == ["a::t"]  # no file: the runner's own names


def test_an_exit_code_that_contradicts_an_all_passed_report_is_noted():
    report = {"count": 2, "counts": {"passed": 2, "failed": 0, "skipped": 0}, "collect_errors": []}
    assert disagrees(1, report) == "its report lists every test as passed or skipped, but it exited 1"
    assert disagrees(0, report) is None


def test_a_commands_own_junit_path_is_found():
    assert report_path(["pytest", "--junitxml", "out.xml"]) == "out.xml"
    assert report_path(["pytest", "--junit-xml=r/x.xml", "-q"]) == "r/x.xml"
    assert report_path(["pytest", "-q"]) is None


VERBOSE = """test_add (tests.test_calc.TestCalc.test_add) ... FAIL
test_skip (tests.test_calc.TestCalc.test_skip) ... skipped 'later'
test_sub (tests.test_calc.TestCalc.test_sub) ... ok

======================================================================
FAIL: test_add (tests.test_calc.TestCalc.test_add)
----------------------------------------------------------------------
AssertionError: -1 != 5

----------------------------------------------------------------------
Ran 3 tests in 0.001s

FAILED (failures=1, skipped=1)
"""


def test_unittest_verbose_output_names_each_test(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text("")
    report = read_unittest(VERBOSE, tmp_path, tmp_path)
    assert report is not None and report["ids"] is True
    assert report["failed"] == ["tests/test_calc.py::TestCalc::test_add"]
    assert report["skipped"] == ["tests/test_calc.py::TestCalc::test_skip"]
    assert report["files"] == ["tests/test_calc.py"]


def test_unittest_quiet_output_gives_counts_only():
    report = read_unittest("..s\n----------------------------------------------------------------------\n"
                           "Ran 3 tests in 0.000s\n\nOK (skipped=1)\n")
    assert report is not None and report["ids"] is False
    assert report["counts"] == {"passed": 2, "failed": 0, "skipped": 1} and report["count"] == 3
    assert read_unittest("no summary here") is None
    nothing = read_unittest("\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n")
    assert nothing is not None and nothing["count"] == 0


def test_the_own_tests_run_leaves_out_the_test_modules_the_change_does_not_touch(tmp_path):
    from bosun.isolation.own_tests import MAX_IGNORED_CHARS, pytest_options

    out = junit(tmp_path, {"calc.py": CALC, "tests/test_calc.py": TESTS, "tests/test_b.py": "def test_b():\n    pass\n"},
                *shlex.split(pytest_options(["tests/test_calc.py"]).replace("{tree}", str(tmp_path))))  # as pytest reads it
    report = read_junit(out, tmp_path, tmp_path)
    assert report is not None and report["passed"] == ["tests/test_b.py::test_b"]
    assert pytest_options([]) == "--continue-on-collection-errors"
    many = [f"tests/test_{i:05}_{'x' * 40}.py" for i in range(2000)]
    assert pytest_options(many) == "--continue-on-collection-errors"  # too long for one environment string
    assert MAX_IGNORED_CHARS < 128 * 1024


def test_unittest_files_are_found_as_its_discovery_finds_them(tmp_path):
    from bosun.isolation.test_reports import unittest_files

    for name in ("tests/__init__.py", "tests/test_a.py", "tests/check_b.py", "tests/sub/__init__.py",
                 "tests/sub/check_c.py", "tests/loose/check_d.py", "test_root.py", "pkg/mod.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert unittest_files([], tmp_path, tmp_path) == ["test_root.py", "tests/test_a.py"]
    assert unittest_files(["discover", "-s", "tests", "-p", "check_*.py"], tmp_path, tmp_path) == [
        "tests/check_b.py", "tests/sub/check_c.py"]  # loose/ is no package: discovery does not enter it
    assert unittest_files(["discover", "tests", "check_*.py"], tmp_path, tmp_path) == [
        "tests/check_b.py", "tests/sub/check_c.py"]
    assert unittest_files(["-v", "tests.test_a", "pkg/mod.py"], tmp_path, tmp_path) == ["pkg/mod.py", "tests/test_a.py"]
    assert unittest_files(["discover", "-s", "../elsewhere"], tmp_path, tmp_path) == []
