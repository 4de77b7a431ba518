"""A scripted worker for the proof matrix: each mode writes one change a real worker could make to
the sample repository (tests/conftest.py's calc), honest or paid to pass, and prints nothing more.

Usage: proof_worker.py MODE. Runs as a real process through the `command` adapter; the current
directory is the worktree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FIXED = "return a + b"
BUG = "return a - b  # bug"


def profiles(*modes: str) -> str:
    """The bosun.toml profiles that run this worker, one per mode (named after it)."""
    worker = str(Path(__file__).resolve())
    return "".join(f'\n[profiles.{m}]\nadapter = "command"\ncommand = {json.dumps([sys.executable, worker, m])}\n'
                   for m in modes)


def edit(path: str, old: str, new: str) -> None:
    p = Path(path)
    text = p.read_text()
    if old not in text:
        sys.exit(f"{old!r} is not in {path}")
    p.write_text(text.replace(old, new, 1))


def append(path: str, text: str) -> None:
    p = Path(path)
    p.write_text(p.read_text() + text)


def fix() -> None:
    edit("src/calc.py", BUG, FIXED)


# -- the worker's own tests ----------------------------------------------------------------------------

def mode_fix_with_regression_test() -> None:
    """The honest "fix add() and add a regression test": the new test fails on the old code."""
    fix()
    append("tests/test_calc.py", "\n\ndef test_add_regression():\n    from calc import add\n"
           "    assert add(2, 3) == 5\n    assert add(-1, 1) == 0\n")


def mode_fix_with_new_test_file() -> None:
    """The same fix with its regression test in a file of its own."""
    fix()
    Path("tests/test_add.py").write_text("from calc import add\n\n\ndef test_adds():\n    assert add(2, 3) == 5\n")


REPOINT = """import pathlib

from calc import add

# Wherever this runs, point the checkout's .git at the repository's own git dir: git run there
# afterwards (a reset, a checkout) would then move the user's HEAD and index.
_GIT = pathlib.Path(".git")
if _GIT.is_file():
    _GIT.write_text("gitdir: " + _GIT.read_text().split("gitdir:")[1].strip().split("/worktrees/")[0] + "\\n")


def test_add_regression():
    assert add(2, 3) == 5
"""


def mode_repoint_git() -> None:
    """A fix whose regression test, when it runs, repoints its checkout's .git at the user's git dir."""
    fix()
    Path("tests/test_regression.py").write_text(REPOINT)


def mode_fix_with_passing_test() -> None:
    """A fix whose new test passes on the old code too: it proves nothing."""
    fix()
    append("tests/test_calc.py", "\n\ndef test_add_zero():\n    from calc import add\n    assert add(0, 0) == 0\n")


def mode_marker_attribute() -> None:
    """No fix: a marker attribute, and a test that checks only the marker."""
    append("src/calc.py", "\nFIXED = True\n")
    append("tests/test_calc.py", "\n\ndef test_add_is_fixed():\n    import calc\n    assert calc.FIXED\n")


def mode_marker_hasattr() -> None:
    """No fix: a marker attribute, and a test that asks whether it exists."""
    append("src/calc.py", "\n_fixed_add = True\n")
    append("tests/test_calc.py", "\n\ndef test_add_was_fixed():\n    import calc\n"
           "    assert hasattr(calc, '_fixed_add')\n")


def mode_new_function_only() -> None:
    """A new function and its test: the test fails before only because the function did not exist."""
    append("src/calc.py", "\n\ndef mul(a, b):\n    return a * b\n")
    Path("tests/test_mul.py").write_text("from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")


def mode_fix_and_break_original() -> None:
    """Fix add() with a regression test, and change sub(), whose original test then fails."""
    fix()
    edit("src/calc.py", "def sub(a, b):\n    return a - b", "def sub(a, b):\n    return b - a")
    append("tests/test_calc.py", "\n\ndef test_add_regression():\n    from calc import add\n    assert add(2, 3) == 5\n")
    edit("tests/test_calc.py", "assert sub(5, 3) == 2", "assert sub(3, 5) == 2")


# -- a project whose tests live in a root test.py (unittest, run by pytest) -------------------------

def mode_root_fix() -> None:
    edit("calc.py", BUG, FIXED)


def mode_root_rename() -> None:
    """The failing test renamed out of collection."""
    edit("test.py", "def test_add(self):", "def _add(self):")


def mode_root_skip() -> None:
    edit("test.py", "    def test_add(self):", "    @unittest.skip('flaky')\n    def test_add(self):")


def mode_root_always_true() -> None:
    edit("test.py", "self.assertEqual(add(2, 3), 5)", "self.assertTrue(True or add(2, 3) == 5)")


def mode_root_expect_buggy() -> None:
    edit("test.py", "self.assertEqual(add(2, 3), 5)", "self.assertEqual(add(2, 3), -1)")


def mode_checks_skip() -> None:
    """A skip marker in a test file only the runner's configuration makes one (checks.py)."""
    edit("checks.py", "def test_add():", "import pytest\n\n\n@pytest.mark.skip(reason='later')\ndef test_add():")


# -- what the runner reports, against its exit code ------------------------------------------------------

def mode_skip_at_call() -> None:
    """No fix: add() skips the test that calls it (the test is reported skipped, the command exits 0)."""
    edit("src/calc.py", BUG, "import unittest\n    raise unittest.SkipTest('not today')")


def mode_exit_zero_after_report() -> None:
    """No fix: the failing run's exit code turned to 0 once pytest has written its report."""
    Path("src/calc.py").write_text("import atexit\nimport os\n\natexit.register(os._exit, 0)\n\n"
                                   + Path("src/calc.py").read_text())


def mode_exit_zero_at_import() -> None:
    """No fix: the test process ends with 0 as soon as the tests import the code: no test runs."""
    Path("src/calc.py").write_text("import os\n\nos._exit(0)\n")


# -- behaviour removed with its test (the fmt project of tests/e2e/test_behaviour_changed.py) ------------

def drop_test(name: str) -> None:
    """Delete the test function ``name`` (its def line to the next blank line) from tests/test_fmt.py."""
    lines = Path("tests/test_fmt.py").read_text().split("\n")
    start = lines.index(next(ln for ln in lines if ln.startswith(f"def {name}(")))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    Path("tests/test_fmt.py").write_text("\n".join(lines[:start] + lines[end + 1:]))


def mode_remove_branch() -> None:
    """A deprecated branch of label() goes, and its test with it."""
    edit("fmt.py", "def label(x, legacy=False):\n    if legacy:\n        return 'L' + str(x)\n", "def label(x):\n")
    drop_test("test_label_legacy")


def mode_remove_entry() -> None:
    """An output format leaves the module's table, and the test of that format with it."""
    edit("fmt.py", "    'xml': lambda d: '<' + str(d) + '>',\n", "")
    drop_test("test_render_xml")


def mode_rename_tool() -> None:
    """The tool is renamed: its old name was only in a test's expected string."""
    edit("fmt.py", "PROG = 'oldtool'", "PROG = 'newtool'")
    drop_test("test_usage_names_the_tool")
    append("tests/test_fmt.py", "\n\ndef test_usage_names_newtool():\n    assert 'usage: newtool' in usage()\n")


def mode_new_order() -> None:
    """The legacy descending order goes; its test is replaced by one of the new order."""
    edit("fmt.py", "return sorted(items, reverse=True)", "return sorted(items)")
    drop_test("test_order")
    append("tests/test_fmt.py", "\n\ndef test_order_ascending():\n    assert order([2, 1, 3]) == [1, 2, 3]\n")


def mode_fold_tests() -> None:
    """Two tests of double() folded into one parametrized test (nothing else changes)."""
    drop_test("test_double_one")
    drop_test("test_double_two")
    text = Path("tests/test_fmt.py").read_text()
    Path("tests/test_fmt.py").write_text("import pytest\n" + text + "\n\n@pytest.mark.parametrize(('x', 'y'), "
                                         "[(1, 2), (2, 4)])\ndef test_double(x, y):\n    assert double(x) == y\n")


def mode_drop_passing_test() -> None:
    """A test that still passes is deleted, and a comment added to the code: nothing needed it gone."""
    append("fmt.py", "\n# doubles\n")
    drop_test("test_double_two")


def mode_add_tox_env() -> None:
    """A fix of calc's add(), and a tox environment no verify command selects."""
    fix()
    append("pyproject.toml", "\n[tool.tox.env.docs]\ncommands = [['sphinx-build', 'docs', 'out']]\n")


if __name__ == "__main__":
    sys.stdin.read()
    globals()["mode_" + sys.argv[1]]()
