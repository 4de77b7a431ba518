"""TEST_WEAKENED and TEST_HARNESS_CHANGED on the ways a worker games a suite, and on honest edits.

Each cheat is a before/after pair of file texts run through the real gate; each honest edit must
pass. Python and JS/TS flavours where the cheat exists in both.
"""

from __future__ import annotations

import pytest

from bosun.core.changes import GateResult
from bosun.gates.testharness import check_test_harness
from bosun.gates.tests_weakened import check_tests_weakened
from tests.gates.test_checks import Change

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"

PY = """\
import pytest

from calc import add, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2
    assert sub(0, 1) == -1
"""

UNITTEST = """\
import unittest

from calc import add


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_add_negative(self):
        self.assertEqual(add(-2, -3), -5)
"""

JS = """\
import { add } from "../src/calc";

describe("add", () => {
  it("adds", () => {
    expect(add(2, 3)).toBe(5);
  });
  test("negative", () => {
    expect(add(-2, -3)).toBe(-5);
  });
});
"""


def weakened(after: str, before: str = PY, path: str = "tests/test_calc.py") -> GateResult:
    return check_tests_weakened(Change().file(path, before, after).ctx())


def refused(result: GateResult, *fragments: str) -> None:
    assert not result.ok, result.detail
    for fragment in fragments:
        assert fragment in result.detail, result.detail


def passed(result: GateResult, *fragments: str) -> None:
    assert result.ok, result.detail
    for fragment in fragments:
        assert fragment in result.detail, result.detail


# --- assertions that cannot fail -----------------------------------------------------------------


class TestTautologies:
    @pytest.mark.parametrize(
        "tautology",
        ["assert True", "assert 1 == 1", "assert not False", "assert add == add", "assert 'x'", "assert (add(2, 3), 5)"],
    )
    def test_python_assert_replaced(self, tautology: str) -> None:
        refused(weakened(PY.replace("assert add(2, 3) == 5", tautology)), "tests/test_calc.py:7 test_add", "cannot fail")

    @pytest.mark.parametrize(
        "tautology", ["self.assertTrue(True)", "self.assertEqual(5, 5)", "self.assertEqual(add, add)", "self.assertIsNone(None)"]
    )
    def test_unittest_assert_replaced(self, tautology: str) -> None:
        after = UNITTEST.replace("self.assertEqual(add(2, 3), 5)", tautology)
        refused(weakened(after, UNITTEST), "AddTest.test_add", f"\"{tautology}\" cannot fail")

    def test_deliberate_failure_is_not_a_tautology(self) -> None:
        after = PY + "\n\ndef test_unreachable():\n    if add(1, 1) != 2:\n        assert False, 'broken'\n"
        passed(weakened(after))

    @pytest.mark.parametrize(
        "tautology", ["expect(1).toBe(1);", "expect(add).toEqual(add);", "expect(true).toBeTruthy();", "assert(true);"]
    )
    def test_js_expect_replaced(self, tautology: str) -> None:
        after = JS.replace("expect(add(2, 3)).toBe(5);", tautology)
        refused(weakened(after, JS, "web/calc.test.ts"), "web/calc.test.ts:5 test 'adds'", "cannot fail")


# --- shadowing, early exits, swallowed failures --------------------------------------------------


class TestEvasions:
    def test_same_named_test_appended_with_a_tautology(self) -> None:
        after = PY + "\n\ndef test_add():\n    assert True\n\n\ndef test_sub():\n    assert 2 == 2\n"
        result = weakened(after)
        refused(result, "tests/test_calc.py:15 redefines test_add of line 6: only the later one runs", "cannot fail")

    def test_unittest_method_shadowed_in_its_class(self) -> None:
        after = UNITTEST + "\n    def test_add(self):\n        pass\n"
        refused(weakened(after, UNITTEST), "redefines AddTest.test_add of line 7")

    def test_return_as_first_line(self) -> None:
        after = PY.replace("def test_add():\n", "def test_add():\n    return\n")
        refused(weakened(after), "tests/test_calc.py:7 test_add returns before its first assertion (return)")

    def test_return_between_assertions(self) -> None:
        after = PY.replace("    assert sub(0, 1) == -1", "    return\n    assert sub(0, 1) == -1")
        refused(weakened(after), "test_sub checks less (2 assertions before, 1 after)")

    def test_unconditional_skip_as_first_line(self) -> None:
        after = PY.replace("def test_add():\n", "def test_add():\n    pytest.skip('later')\n")
        refused(weakened(after), "test_add skips itself before its first assertion")

    def test_body_replaced_by_pass(self) -> None:
        refused(weakened(PY.replace("    assert add(2, 3) == 5", "    pass")), "test_add has an empty body")

    @pytest.mark.parametrize(
        ("handler", "says"),
        [("except AssertionError:", "except AssertionError"), ("except Exception:", "except Exception"), ("except:", "bare except")],
    )
    def test_try_except_swallows_the_failure(self, handler: str, says: str) -> None:
        after = PY.replace("    assert add(2, 3) == 5", f"    try:\n        assert add(2, 3) == 5\n    {handler}\n        pass")
        refused(weakened(after), f"test_add: \"assert add(2, 3) == 5\" sits in a try whose \"{says}\" swallows its failure")

    def test_suppress_swallows_the_failure(self) -> None:
        after = PY.replace(
            "    assert add(2, 3) == 5", "    with contextlib.suppress(AssertionError):\n        assert add(2, 3) == 5"
        )
        refused(weakened(after), "\"suppress(AssertionError)\" swallows")

    def test_except_that_fails_the_test_is_honest(self) -> None:
        after = PY.replace(
            "    assert add(2, 3) == 5",
            "    try:\n        assert add(2, 3) == 5\n    except AssertionError:\n        pytest.fail('add is broken')",
        )
        passed(weakened(after))

    @pytest.mark.parametrize(
        "patch",
        [
            "    monkeypatch.setattr(calc, 'add', lambda a, b: 5)\n",
            "    monkeypatch.setattr('calc.add', lambda a, b: 5)\n",
            "    calc.add = lambda a, b: 5\n",
        ],
    )
    def test_replacing_the_function_the_test_checks(self, patch: str) -> None:
        before = "import calc\n\n\ndef test_add(monkeypatch):\n    assert calc.add(2, 3) == 5\n"
        after = before.replace("    assert", patch + "    assert")
        refused(weakened(after, before), "test_add replaces calc.add and then checks it")

    def test_patching_a_dependency_of_the_checked_function_is_honest(self) -> None:
        before = "import calc\n\n\ndef test_add(monkeypatch):\n    assert calc.add(2, 3) == 5\n"
        after = before.replace("    assert", "    monkeypatch.setattr(calc, 'log', print)\n    assert")
        passed(weakened(after, before))

    def test_asserting_that_an_import_exists(self) -> None:
        refused(weakened(PY.replace("assert add(2, 3) == 5", "assert add is not None")), "\"assert add is not None\" cannot fail")

    def test_helper_made_hollow(self) -> None:
        before = PY + "\n\ndef check_add(a, b, c):\n    assert add(a, b) == c\n\n\ndef test_more():\n    check_add(1, 1, 2)\n"
        refused(weakened(before.replace("    assert add(a, b) == c", "    assert True"), before), "check_add", "cannot fail")

    def test_parametrized_case_deleted(self) -> None:
        before = '@pytest.mark.parametrize("a,b,c", [(1, 2, 3), (2, 2, 4), (0, 0, 0)])\ndef test_add(a, b, c):\n    assert add(a, b) == c\n'
        refused(weakened(before.replace(", (0, 0, 0)", ""), before), "test_add has fewer parametrized cases (3 before, 2 after)")

    def test_load_tests_added(self) -> None:
        refused(weakened(UNITTEST + "\n\ndef load_tests(loader, tests, pattern):\n    return tests\n", UNITTEST), "load_tests")

    def test_class_wide_skip(self) -> None:
        before = "class TestAdd:\n    def test_small(self):\n        assert add(1, 2) == 3\n"
        after = before.replace("class TestAdd:\n", "class TestAdd:\n    pytestmark = pytest.mark.skip\n\n")
        refused(weakened(after, before), "TestAdd.test_small adds pytest.mark.skip")

    def test_module_wide_skip(self) -> None:
        after = PY.replace("from calc import add, sub\n", "from calc import add, sub\n\npytestmark = pytest.mark.skip\n")
        refused(weakened(after), "adds a module-wide skip pytest.mark.skip")

    def test_js_return_first(self) -> None:
        after = JS.replace('it("adds", () => {\n', 'it("adds", () => {\n    return;\n')
        refused(weakened(after, JS, "web/calc.test.ts"), "web/calc.test.ts:5 test 'adds' returns before its first check")

    @pytest.mark.parametrize("lost", ["expect(add(2, 3));", "expect(add(2, 3)).toBe;", "expect(add(2, 3)).resolves;"])
    def test_js_expect_lost_its_matcher(self, lost: str) -> None:
        after = JS.replace("expect(add(2, 3)).toBe(5);", lost)
        refused(weakened(after, JS, "web/calc.test.ts"), "test 'adds'", "has no matcher, so it checks nothing")

    def test_js_try_catch_swallows(self) -> None:
        after = JS.replace("expect(add(2, 3)).toBe(5);", "try { expect(add(2, 3)).toBe(5); } catch (e) {}")
        refused(weakened(after, JS, "web/calc.test.ts"), "its checks sit in a try whose catch swallows")

    def test_go_skip_by_the_textual_tripwire(self) -> None:
        before = "package calc\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n"
        after = before.replace("{\n\tif", "{\n\tt.Skip()\n\tif")
        refused(weakened(after, before, "calc/calc_test.go"), "calc/calc_test.go:4 adds \".Skip(\"")

    def test_unparsable_python_falls_back_to_the_tripwire(self) -> None:
        after = PY.replace("    assert add(2, 3) == 5", "    add(2, 3) ==")
        refused(weakened(after), "fewer assertions (3 before, 2 after)")


# --- expected values: noted, not refused ---------------------------------------------------------


class TestExpectedValues:
    def test_changed_expected_literal_is_noted(self) -> None:
        result = weakened(PY.replace("== 5", "== 6"))
        passed(result, "for review: tests/test_calc.py:7 test_add changes an expected value: \"add(2, 3)\" 5 -> 6")

    def test_unittest_expected_literal_is_noted(self) -> None:
        result = weakened(UNITTEST.replace("add(2, 3), 5)", "add(2, 3), -1)"), UNITTEST)
        passed(result, "AddTest.test_add changes an expected value: \"add(2, 3)\" 5 -> -1")

    def test_changed_parametrize_row_is_noted(self) -> None:
        before = '@pytest.mark.parametrize("n,s", [(1000, "1.0 kB"), (0, "0 Bytes")])\ndef test_size(n, s):\n    assert naturalsize(n) == s\n'
        passed(weakened(before.replace("1.0 kB", "1.0 KiB"), before), "test_size changes 1 of its parametrized cases")


# --- skips ---------------------------------------------------------------------------------------

OPTIONAL = """\
import shutil

import pytest

from tool import run


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git():
    assert run("git") == 0


def test_plain():
    assert run("echo") == 0
"""


class TestSkips:
    def test_skip_marker_on_an_existing_test(self) -> None:
        after = PY.replace("def test_add", "@pytest.mark.skip(reason='flaky')\ndef test_add")
        refused(weakened(after), "tests/test_calc.py:6 test_add adds \"pytest.mark.skip(reason='flaky')\"")

    def test_new_test_with_an_optional_binary_skip_where_the_file_has_such_skips(self) -> None:
        new_test = (
            '\n\n@pytest.mark.skipif(shutil.which("hg") is None, reason="needs hg")\n'
            "def test_hg():\n    assert run(\"hg\") == 0\n"
        )
        passed(weakened(OPTIONAL + new_test, OPTIONAL, "tests/test_tool.py"))

    @pytest.mark.parametrize(
        "body",
        [
            '    pytest.importorskip("yaml")\n    assert run("yaml") == 0\n',
            '    if shutil.which("svn") is None:\n        pytest.skip("needs svn")\n    assert run("svn") == 0\n',
        ],
    )
    def test_new_test_skipping_itself_when_a_dependency_is_missing(self, body: str) -> None:
        passed(weakened(OPTIONAL + "\n\ndef test_more():\n" + body, OPTIONAL, "tests/test_tool.py"))

    def test_the_same_new_test_in_a_file_without_such_skips_is_refused(self) -> None:
        new_test = '\n\n@pytest.mark.skipif(shutil.which("hg") is None, reason="x")\ndef test_hg():\n    assert run("hg")\n'
        refused(weakened(PY + new_test), "test_hg adds \"pytest.mark.skipif(shutil.which('hg') is None")

    def test_optional_skip_added_to_an_existing_test_is_refused(self) -> None:
        after = OPTIONAL.replace("def test_plain", '@pytest.mark.skipif(shutil.which("zz") is None, reason="x")\ndef test_plain')
        refused(weakened(after, OPTIONAL, "tests/test_tool.py"), "test_plain adds \"pytest.mark.skipif")

    def test_skipif_true_is_not_optional(self) -> None:
        after = OPTIONAL + '\n\n@pytest.mark.skipif(True, reason="x")\ndef test_new():\n    assert run("x")\n'
        refused(weakened(after, OPTIONAL, "tests/test_tool.py"), "test_new adds \"pytest.mark.skipif(True")


# --- deleted, renamed and added tests ------------------------------------------------------------


class TestDeletions:
    def test_deleted_test_is_refused(self) -> None:
        after = PY.split("\n\ndef test_sub")[0] + "\n"
        refused(weakened(after), "tests/test_calc.py: test_sub (was line 10) deleted")

    def test_tests_of_a_function_the_change_deletes(self) -> None:
        after = PY.split("\n\ndef test_sub")[0] + "\n"
        change = Change().file("src/calc.py", CALC, CALC.split("\n\ndef sub")[0] + "\n").file("tests/test_calc.py", PY, after)
        passed(check_tests_weakened(change.ctx()), "test_sub removed with sub() from src/calc.py, which the change deletes")

    def test_a_function_moved_to_another_file_is_not_deleted(self) -> None:
        after = PY.split("\n\ndef test_sub")[0] + "\n"
        change = (
            Change()
            .file("src/calc.py", CALC, CALC.split("\n\ndef sub")[0] + "\n")
            .file("src/more.py", None, "def sub(a, b):\n    return a - b\n")
            .file("tests/test_calc.py", PY, after)
        )
        refused(check_tests_weakened(change.ctx()), "test_sub (was line 10) deleted")

    def test_whole_test_file_of_a_deleted_module(self) -> None:
        change = Change().file("src/calc.py", CALC, None).file("tests/test_calc.py", PY, None)
        passed(check_tests_weakened(change.ctx()), "test_add removed with add()")

    def test_whole_test_file_deleted(self) -> None:
        refused(check_tests_weakened(Change().file("tests/test_calc.py", PY, None).ctx()), "tests/test_calc.py deleted (2 tests lost)")

    def test_js_test_of_a_deleted_function(self) -> None:
        after = JS.replace('  test("negative", () => {\n    expect(add(-2, -3)).toBe(-5);\n  });\n', "")
        refused(weakened(after, JS, "web/calc.test.ts"), "test negative (line 7) deleted")
        js_src = "export function add(a, b) {\n  return a + b;\n}\n"
        change = Change().file("src/calc.js", js_src, "").file("web/calc.test.ts", JS, after)
        passed(check_tests_weakened(change.ctx()), "test negative removed with add from src/calc.js")

    def test_tests_under_a_module_level_if_are_collected(self) -> None:
        before = "import sys\n\nif sys.platform != 'win32':\n    def test_posix():\n        assert add(1, 2) == 3\n"
        refused(weakened(before.replace("assert add(1, 2) == 3", "assert True"), before), "test_posix", "cannot fail")

    def test_deleted_files_whose_tests_cannot_be_read_are_refused(self) -> None:
        dynamic = "for n in range(3):\n    globals()[f'test_{n}'] = lambda: None\n"
        refused(check_tests_weakened(Change().file("tests/test_gen.py", dynamic, None).ctx()), "tests/test_gen.py deleted")
        odd = "describe('x', function () { it(title, body); });\n"
        refused(check_tests_weakened(Change().file("web/x.test.js", odd, None).ctx()), "web/x.test.js deleted")

    def test_test_moved_to_another_file(self) -> None:
        sub_test = "\n\ndef test_sub():\n    assert sub(5, 3) == 2\n    assert sub(0, 1) == -1\n"
        after = PY.split("\n\ndef test_sub")[0] + "\n"
        change = Change().file("tests/test_calc.py", PY, after).file("tests/test_sub.py", None, "from calc import sub\n" + sub_test)
        passed(check_tests_weakened(change.ctx()), "tests/test_calc.py: test_sub moved to tests/test_sub.py")

    def test_renamed_test_with_its_body_intact(self) -> None:
        passed(weakened(PY.replace("def test_sub", "def test_subtracts")))

    def test_renamed_js_test(self) -> None:
        passed(weakened(JS.replace('it("adds"', 'it("adds two numbers"'), JS, "web/calc.test.ts"))

    def test_adding_tests(self) -> None:
        passed(weakened(PY + "\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n"), "1 test file changed, none weakened")

    def test_test_class_renamed_out_of_collection(self) -> None:
        before = "class TestAdd:\n    def test_small(self):\n        assert add(1, 2) == 3\n"
        refused(weakened(before.replace("class TestAdd", "class AddChecks"), before), "TestAdd.test_small")


# --- test data -----------------------------------------------------------------------------------

CASES = '{"cases": [{"in": "1_000", "out": 1000}, {"in": "0x_1", "out": null}]}\n'


class TestData:
    def test_data_file_deleted(self) -> None:
        refused(check_tests_weakened(Change().file("tests/data/valid/int.toml", "a = 1\n", None).ctx()), "tests/data/valid/int.toml (test data) deleted")

    def test_data_file_emptied(self) -> None:
        refused(check_tests_weakened(Change().file("tests/data/cases.json", CASES, "\n").ctx()), "(test data) emptied")

    def test_data_case_removed(self) -> None:
        after = '{"cases": [{"in": "1_000", "out": 1000}]}\n'
        refused(check_tests_weakened(Change().file("tests/data/cases.json", CASES, after).ctx()), "has fewer entries (2 before, 1 after)")

    def test_data_changed_is_noted(self) -> None:
        after = CASES.replace("1000", "1001")
        passed(check_tests_weakened(Change().file("tests/data/cases.json", CASES, after).ctx()), "for review: tests/data/cases.json (test data) changed")

    def test_data_written_as_code_deleted(self) -> None:
        cases = "CASES = [\n    ('1_000', 1000),\n    ('0x_1', None),\n]\n"
        refused(check_tests_weakened(Change().file("tests/cases.py", cases, None).ctx()), "tests/cases.py (test data) deleted")
        refused(check_tests_weakened(Change().file("tests/fixtures/cases.js", "export default [1, 2];\n", "").ctx()), "emptied")

    def test_harness_code_deleted_is_left_to_the_harness_gate(self) -> None:
        helper = "def make_numbers(n):\n    return list(range(n))\n"
        passed(check_tests_weakened(Change().file("tests/helpers.py", helper, None).ctx()))
        js_helper = "export function render(x) {\n  return x;\n}\n"
        passed(check_tests_weakened(Change().file("tests/utils.js", js_helper, None).ctx()))

    def test_data_added(self) -> None:
        passed(check_tests_weakened(Change().file("tests/data/new.json", None, CASES).ctx()))


# --- the harness ---------------------------------------------------------------------------------


def harness(path: str, after: str, before: str | None = None) -> GateResult:
    change = Change().file("src/calc.py", CALC, CALC).file(path, before, after)
    change.changes.pop(0)  # calc.py only exists in the start tree; it is not part of the change
    return check_test_harness(change.ctx())


class TestHarness:
    def test_init_patches_the_code_under_test(self) -> None:
        result = harness("tests/__init__.py", "import calc\n\ncalc.add = lambda a, b: a + b\n")
        refused(result, "tests/__init__.py:3 patches code under test: calc.add", "harness changed: tests/__init__.py added")

    @pytest.mark.parametrize(
        "code",
        [
            "import pytest\n\npytest.Function.runtest = lambda self: None\n",
            "from _pytest.python import Function\n\nFunction.runtest = lambda self: None\n",
            "import _pytest.python\n\nsetattr(_pytest.python.Function, 'runtest', lambda self: None)\n",
            "import unittest\n\nunittest.TestCase.assertEqual = lambda *a: None\n",
        ],
    )
    def test_conftest_patches_the_framework(self, code: str) -> None:
        refused(harness("tests/conftest.py", code), "patches test framework internals")

    def test_autouse_fixture_patches_the_code_under_test(self) -> None:
        code = (
            "import pytest\n\nimport calc\n\n\n@pytest.fixture(autouse=True)\ndef fixed(monkeypatch):\n"
            "    monkeypatch.setattr(calc, 'add', lambda a, b: a + b)\n"
        )
        refused(harness("tests/conftest.py", code), "tests/conftest.py:8 patches code under test: calc.add")

    def test_string_target_and_from_import(self) -> None:
        code = "from calc import add\nimport pytest\n\n\ndef pytest_configure(config):\n    add.__code__ = (lambda a, b: a + b).__code__\n"
        refused(harness("conftest.py", code), "patches code under test: calc.add.__code__")

    def test_sys_modules_shadowing(self) -> None:
        refused(harness("tests/helpers.py", "import sys\nimport types\n\nsys.modules['calc'] = types.ModuleType('calc')\n"), "writes sys.modules")

    def test_outcome_hook(self) -> None:
        code = "def pytest_runtest_makereport(item, call):\n    call.excinfo = None\n"
        refused(harness("tests/conftest.py", code), "defines pytest_runtest_makereport, a hook that can change test outcomes")

    def test_test_module_patching_at_import_time(self) -> None:
        refused(harness("tests/test_calc.py", "import calc\n\ncalc.add = lambda a, b: 5\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n"), "patches code under test")

    def test_patching_inside_a_test_is_ordinary(self) -> None:
        code = "import calc\n\n\ndef test_add(monkeypatch):\n    monkeypatch.setattr(calc, 'helper', lambda: 1)\n    assert calc.add(2, 3) == 5\n"
        passed(harness("tests/test_calc.py", code), "no test harness files changed")

    def test_honest_fixture_is_listed_for_review(self) -> None:
        code = "import pytest\n\nimport calc\n\n\n@pytest.fixture\ndef numbers():\n    return [1, 2, 3]\n"
        passed(harness("tests/conftest.py", code), "test harness changed, review it: tests/conftest.py added")

    def test_explicit_fixture_patching_is_listed_not_refused(self) -> None:
        code = "import pytest\n\nimport calc\n\n\n@pytest.fixture\ndef fake(monkeypatch):\n    monkeypatch.setattr(calc, 'add', lambda a, b: 0)\n"
        passed(harness("tests/conftest.py", code))

    def test_third_party_and_stdlib_patching_passes(self) -> None:
        code = "import os\nimport requests\n\nos.environ['TZ'] = 'UTC'\nrequests.get = None\n"
        passed(harness("tests/conftest.py", code))

    def test_patch_the_start_tree_already_had(self) -> None:
        code = "import calc\n\ncalc.add = lambda a, b: a + b\n"
        passed(harness("tests/__init__.py", code + "\nX = 1\n", before=code), "tests/__init__.py changed")
