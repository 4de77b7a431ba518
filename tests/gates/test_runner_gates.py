"""The gates that keep the code under test from grading itself, on change lists and recorded runs:
RUNNER_REFERENCED (the source), RUNNER_TAMPERED (what the runner guard recorded), PACKAGE_METADATA_ADDED
and MODULE_SHADOWED's reading of the environment the guard saw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bosun.gates.harness import check_package_metadata
from bosun.gates.runner_refs import check_runner_refs, fold, references
from bosun.gates.runner_tamper import check_runner_tamper, runner_findings
from bosun.gates.shadowing import check_shadowing
from tests.gates.test_harness import Tree

BUG = "def add(a, b):\n    return a - b\n"


def refs(text: str) -> list[tuple[str, bool]]:
    return [(r.what, r.hard) for r in references(text)]


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("from _pytest.python import Function\n", "imports the test runner's internals (_pytest.python)"),
        ("import importlib\nm = importlib.import_module('_py' + 'test.runner')\n", "imports the test runner's internals"),
        ("import importlib\nm = importlib.import_module(''.join(['_py', 'test']))\n", "imports the test runner's internals"),
        ("m = __import__(f\"{'_py'}test\")\n", "imports the test runner's internals (_pytest)"),
        ("import sys\nif 'pytest' in sys.modules:\n    pass\n", "looks the test runner up in sys.modules ('pytest')"),
        ("import sys\nm = getattr(sys, 'mod' + 'ules')\n", "reads sys.modules through getattr"),
        ("m = __import__('sys').modules.get('pluggy')\n", "looks the test runner up in sys.modules ('pluggy')"),
        ("import sys\nm = vars(sys)['modules']['_pytest']\n", "looks the test runner up in sys.modules"),
        ("import sys\nt = sys.modules['tests.test_calc']\n", "looks a test module up in sys.modules"),
        ("import pytest\ndef add(a, b):\n    pytest.skip('no')\n", "calls pytest.skip"),
        ("from unittest import SkipTest\ndef add(a, b):\n    raise SkipTest('no')\n", "raises the test runner's SkipTest"),
        ("import builtins\nbuiltins.AssertionError = Exception\n", "replaces the built-in AssertionError"),
        ("setattr(__builtins__, name, 1)\n", "replaces the built-in (computed name)"),
        ("import os\nos._exit(0)\n", "ends the process when imported (os._exit)"),
        ("import atexit, os\natexit.register(os._exit, 0)\n", "ends the process when imported (os._exit)"),
        ("import sys\nsys.exit()\n", "ends the process when imported (sys.exit)"),
        ("raise SystemExit\n", "ends the process when imported (raise SystemExit)"),
        ("def pytest_runtest_makereport(item, call):\n    pass\n", "defines the pytest hook pytest_runtest_makereport"),
        ("x = '_pytest.python.Function.runtest'\n", "names the test runner's internals"),
        ("import sys\nm = sys.modules['bosun_runner_guard']\n", "looks the test runner up in sys.modules"),
    ],
)
def test_reaching_the_runner_from_code_under_test_is_a_refusal(source: str, what: str) -> None:
    found = refs(source)
    assert any(what in w and hard for w, hard in found), found


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("import importlib\ndef load(name):\n    return importlib.import_module(name)\n", "imports a module named at run time"),
        ("import pytest\n", "imports pytest"),
        ("import sys\nfor m in list(sys.modules.values()):\n    pass\n", "walks every loaded module"),
        ("import sys\nm = sys.modules[key]\n", "looks up sys.modules by a name computed at run time"),
        ("def run(src):\n    exec(src)\n", "runs code built at run time (exec)"),
        ("def pytest_report_header(config):\n    return 'x'\n", "defines the pytest hook pytest_report_header"),
        ("import builtins\nbuiltins.tr = str\n", "adds the built-in tr"),
    ],
)
def test_what_the_source_cannot_settle_is_a_reason_for_review(source: str, what: str) -> None:
    found = refs(source)
    assert any(what in w and not hard for w, hard in found), found
    assert not any(hard for _, hard in found), found


HONEST = '''import atexit
import importlib
import json
import sys
import threading
from unittest import mock

_here = sys.modules[__name__]
_codec = importlib.import_module("json")
atexit.register(lambda: None)
threading.Thread(target=lambda: None).start()

try:
    import numpy
except ImportError:
    sys.exit("needs numpy")


def main():
    sys.exit(0)


if __name__ == "__main__":
    sys.exit(main())
'''


def test_honest_code_is_not_suspected() -> None:
    assert refs(HONEST) == []


def test_fold_reads_constant_strings_only() -> None:
    import ast

    assert fold(ast.parse("'%s%s' % ('_py', 'test')", mode="eval").body) == "_pytest"
    assert fold(ast.parse("'_py' + name", mode="eval").body) is None


def test_the_gate_judges_new_non_test_code_only() -> None:
    cheat = "import sys\nif 'pytest' in sys.modules:\n    import os\n    os._exit(0)\n" + BUG
    tree = Tree().put("calc.py", cheat, before=BUG)
    tree.put("tests/helpers.py", "import pytest\nimport _pytest.python\n")  # the tests' own: the test gates judge it
    result = check_runner_refs(tree.ctx())
    assert not result.ok
    assert "calc.py:2 looks the test runner up in sys.modules" in result.detail and "calc.py:4 ends the process" in result.detail
    assert "tests/helpers.py" not in result.detail
    # What the start tree already did is the project's own.
    again = check_runner_refs(Tree().put("calc.py", cheat + "\nX = 1\n", before=cheat).ctx())
    assert again.ok and again.detail == "no code under test refers to the test runner"


def test_an_unclear_reference_is_one_reason_for_review() -> None:
    result = check_runner_refs(Tree().put("plugins.py", "import importlib\ndef load(n):\n    return importlib.import_module(n)\n").ctx())
    assert result.ok
    assert [r["code"] for r in result.review] == ["RUNNER_REFERENCE_UNCLEAR"]
    assert "plugins.py:3 imports a module named at run time" in result.review[0]["sentence"]


# --- RUNNER_TAMPERED, from recorded runs ------------------------------------------------------------------


def command(exit_code: int = 0, **runner: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"processes": [], "findings": [], "plugins": [], "modules": {}, "path": []}
    return {"argv": ["python", "-m", "pytest"], "exit_code": exit_code, "guard": {**base, **runner}}


def session(**over: Any) -> dict[str, Any]:
    proc = {"pid": 7, "depth": 0, "started": True, "session": True, "worker": "", "top": True, "exited": True,
            "finish": {"exitstatus": 0, "collected": 2, "failed": 0, "seen_failed": 0}}
    proc.update(over)
    return proc


def findings(*cmds: dict[str, Any], changed: tuple[str, ...] = ("calc.py",), added: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    return runner_findings(list(cmds), set(changed), set(added))


def test_a_clean_guarded_run_says_so() -> None:
    tree = Tree().put("calc.py", BUG.replace("-", "+"), before=BUG)
    ctx = tree.ctx()
    ctx.verification = {"commands": [command(processes=[session()])]}
    result = check_runner_tamper(ctx)
    assert result.ok and result.detail == "the test runner ran untouched (1 guarded process(es))"


@pytest.mark.parametrize(
    ("cmd", "says"),
    [
        (command(processes=[session(finish=None, exited=False)]), "ended before its session finished"),
        (command(exit_code=0, processes=[session(finish={"exitstatus": 1})]), "finished with status 1 but its process exited with 0"),
        (command(processes=[session(finish={"exitstatus": 0, "seen_failed": 2})]), "reported 2 failure(s) but its session ended with status 0"),
        (command(processes=[{"pid": 3, "top": True, "started": True, "exited": False}]), "ended without finishing"),
        (command(forged=3), "3 record(s) on bosun's guard channel were not written by bosun's guard"),
        (command(overflow=True), "flooded"),
        (command(reports_rewritten=["0.xml"]), "the test report 0.xml was rewritten"),
        (command(findings=[{"kind": "integrity", "target": "_pytest.python.Function.runtest", "origin": "calc.py:5"}]),
         "_pytest.python.Function.runtest was replaced by calc.py:5"),
        (command(findings=[{"kind": "integrity", "target": "pytest hook pytest_runtest_call", "origin": None}]),
         "pytest hook pytest_runtest_call was replaced"),
        (command(findings=[{"kind": "integrity", "target": "builtins.AssertionError", "origin": "runner"}]),
         "builtins.AssertionError was replaced by an object of the test runner"),
        (command(findings=[{"kind": "outcome", "outcome": "Skipped", "at": "calc.py:4", "test": "t::x"}]),
         "calc.py:4 raised the runner's Skipped in t::x"),
        (command(findings=[{"kind": "event", "event": "self_kill", "what": "signals its own test process", "hard": True,
                            "at": ["calc.py:3", "tests/test_calc.py:5"]}]), "calc.py:3 signals its own test process"),
        (command(findings=[{"kind": "event", "event": "forged_guard", "what": "called bosun's runner guard itself",
                            "hard": True, "at": []}]), "called bosun's runner guard itself"),
        (command(plugins=[{"file": "calc.py", "name": "flip", "conftest": False}]), "pytest loaded a plugin from the change (calc.py)"),
    ],
)
def test_what_the_guard_saw_refuses(cmd: dict[str, Any], says: str) -> None:
    hard, _ = findings(cmd)
    assert any(says in h for h in hard), hard


@pytest.mark.parametrize(
    "cmd",
    [
        # The start tree's own code, the tests' own code, the environment's own patches, xdist workers.
        command(findings=[{"kind": "integrity", "target": "_pytest.config.Config._getini_unknown_type", "origin": ""}]),
        command(findings=[{"kind": "integrity", "target": "_pytest.python.Function.runtest", "origin": "helpers.py:3"}]),
        command(findings=[{"kind": "outcome", "outcome": "Skipped", "at": "tests/helpers.py:4", "test": "t::x"}]),
        command(findings=[{"kind": "event", "event": "frames", "what": "reads the call stack", "hard": False,
                           "at": ["boltons/typeutils.py:98", "calc.py:48"]}]),
        command(plugins=[{"file": "tests/conftest.py", "name": "c", "conftest": True},
                         {"file": "calc_plugin.py", "name": "calc_plugin", "conftest": False}]),
        command(processes=[session(worker="gw0", finish=None, exited=False)]),
        command(exit_code=1, processes=[session(finish=None, exited=False)]),
    ],
)
def test_what_is_not_the_changes_doing_is_left_alone(cmd: dict[str, Any]) -> None:
    assert findings(cmd) == ([], [])


def test_introspection_by_the_change_is_a_reason_for_review() -> None:
    cmd = command(findings=[{"kind": "event", "event": "gc", "what": "walks the garbage collector", "hard": False,
                             "at": ["calc.py:9"]}])
    tree = Tree().put("calc.py", "import gc\n", before=BUG)
    ctx = tree.ctx()
    ctx.verification = {"commands": [cmd]}
    result = check_runner_tamper(ctx)
    assert result.ok and [r["code"] for r in result.review] == ["RUNNER_INTROSPECTED"]
    assert "calc.py:9 walks the garbage collector" in result.review[0]["sentence"]


def test_the_held_out_run_is_judged_too() -> None:
    cmd = command(findings=[{"kind": "integrity", "target": "_pytest.runner.CallInfo.from_call", "origin": "calc.py:2"}])
    tree = Tree().put("calc.py", "x\n", before=BUG)
    ctx = tree.ctx()
    ctx.verification = {"commands": [command()], "heldout": {"commands": [cmd]}}
    assert not check_runner_tamper(ctx).ok


# --- what the interpreter loads from outside the code under test ------------------------------------------------


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        ("calc_compat-1.0.dist-info/entry_points.txt", True),
        ("src/evil.egg-info/PKG-INFO", True),
        ("tests/plug-1.0.dist-info/METADATA", True),  # a test directory is on the path under pytest's prepend mode
        ("docs/fixtures/pkg-1.0.dist-info/METADATA", False),
        ("fixtures/data/x.egg-link", False),
    ],
)
def test_package_metadata_on_the_interpreters_path_is_refused(path: str, refused: bool) -> None:
    tree = Tree("tests/test_x.py").put(path, "Name: x\n")
    result = check_package_metadata(tree.ctx())
    assert result.ok is not refused, result.detail


def test_metadata_under_a_directory_the_guard_saw_on_sys_path_is_refused() -> None:
    tree = Tree().put("vendor/plug-1.0.dist-info/entry_points.txt", "[pytest11]\n")
    ctx = tree.ctx()
    assert check_package_metadata(ctx).ok
    ctx.verification = {"commands": [command(tree_path=["vendor"])]}
    assert not check_package_metadata(ctx).ok


def test_shadowing_reads_the_environment_the_tests_ran_in(tmp_path: Path) -> None:
    env = tmp_path / "env"
    env.mkdir()
    (env / "fakedep.py").write_text("VALUE = 1\n")
    tree = Tree().put("fakedep.py", "import calc\ncalc.add = lambda a, b: a + b\n")
    ctx = tree.ctx()
    assert check_shadowing(ctx).ok  # bosun's own interpreter has no fakedep
    ctx.verification = {"commands": [command(path=[str(env)])]}
    result = check_shadowing(ctx)
    assert not result.ok and "fakedep.py (shadows an installed module fakedep)" in result.detail


def test_a_module_the_guard_saw_loaded_in_place_is_shadowing_wherever_it_is(tmp_path: Path) -> None:
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "fakedep.py").write_text("")
    tree = Tree().put("lib/odd/fakedep.py", "x = 1\n")
    ctx = tree.ctx()
    ctx.verification = {"commands": [command(path=[str(tmp_path / "env")], modules={"fakedep": "lib/odd/fakedep.py"})]}
    result = check_shadowing(ctx)
    assert not result.ok and "lib/odd/fakedep.py (loaded in place of an installed module 'fakedep')" in result.detail
