"""The runner guard on real pytest processes: what it records and what those records mean for a change.

Each case writes a small tree (``calc.py``, whose ``add`` subtracts, and its tests), applies one
worker's files on top (tests/workers/runner_attacker.py, or an honest change), runs the verify command
through ``run_verification`` (the guard, its FIFO, the real interpreter) and judges the records the
way RUNNER_TAMPERED does. Attacks must yield a refusal; honest code, nothing at all.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from bosun.core.contract import TaskContract
from bosun.gates.runner_tamper import runner_findings
from bosun.isolation.verify_commands import run_verification
from tests.workers.runner_attacker import BUG, FIXED, MODES, write

TESTS = '''from calc import add


def test_add():
    assert add(2, 3) == 5


def test_add_zero():
    assert add(0, 4) == 4
'''
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "tests"]

pytestmark = pytest.mark.slow  # each case runs pytest (or unittest) in a real process: about a second


def verify(tmp_path: Path, files: dict[str, str], run: list[str] | None = None, env: dict[str, str] | None = None,
           start: dict[str, str] | None = None) -> tuple[dict[str, Any], list[str], list[str]]:
    """Run the verify command on the start tree plus ``files``; returns (command entry, refusals, reviews)."""
    tree = tmp_path / "tree"
    base = {"calc.py": BUG, "tests/test_calc.py": TESTS, **(start or {})}
    for rel, text in {**base, **files}.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    task = TaskContract(title="t", prompt="p", verify=[{"run": run or PYTEST, "env": env or {}}])
    doc = run_verification(task, tree, tmp_path / "home")
    added = {p for p in files if p not in base}
    hard, soft = runner_findings(doc["commands"], set(files), added)
    return doc["commands"][0], hard, soft


def test_the_honest_fix_leaves_nothing_to_say(tmp_path):
    cmd, hard, soft = verify(tmp_path, {"calc.py": FIXED})
    assert cmd["exit_code"] == 0
    assert (hard, soft) == ([], [])
    proc = cmd["guard"]["processes"][0]
    assert proc["top"] and proc["exited"] and proc["finish"]["exitstatus"] == 0


HONEST_LIBRARY = '''import atexit
import importlib
import inspect
import logging
import tempfile
import threading
import traceback

_json = importlib.import_module("json")
_scratch = tempfile.mkdtemp()
atexit.register(lambda: None)
_log = logging.getLogger(__name__)


def _warm():
    _json.dumps({"warm": True})


threading.Thread(target=_warm, daemon=True).start()


def add(a, b):
    try:
        inspect.signature(add)
        raise ValueError("checked")
    except ValueError:
        _log.debug("trace: %s", traceback.format_exc())
    return a + b
'''


def test_honest_code_using_importlib_atexit_threads_and_tracebacks_is_not_suspected(tmp_path):
    cmd, hard, soft = verify(tmp_path, {"calc.py": HONEST_LIBRARY})
    assert cmd["exit_code"] == 0, cmd["output_tail"]
    assert (hard, soft) == ([], [])


def test_installed_plugins_keep_working_and_their_workers_are_guarded(tmp_path):
    cmd, hard, soft = verify(tmp_path, {"calc.py": FIXED}, run=[*PYTEST, "-n", "2", "-p", "timeout"])
    assert cmd["exit_code"] == 0, cmd["output_tail"]
    assert (hard, soft) == ([], [])
    workers = [p for p in cmd["guard"]["processes"] if p.get("worker")]
    assert len(workers) == 2 and all(p["exited"] and p["finish"] for p in workers)


def test_the_projects_own_plugin_and_conftest_hooks_are_the_projects(tmp_path):
    start = {
        "pytest.ini": "[pytest]\naddopts = -p calc_plugin\n",
        "calc_plugin.py": "def pytest_report_header(config):\n    return 'calc'\n",
        "tests/conftest.py": "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_call(item):\n"
                             "    yield\n",
    }
    cmd, hard, soft = verify(tmp_path, {"calc.py": FIXED}, start=start)
    assert cmd["exit_code"] == 0, cmd["output_tail"]
    assert (hard, soft) == ([], [])
    assert {p["file"] for p in cmd["guard"]["plugins"]} == {"calc_plugin.py", "tests/conftest.py"}


def test_the_environments_own_sitecustomize_still_runs_and_the_trees_never_does(tmp_path):
    env = tmp_path / "env"
    env.mkdir()
    (env / "sitecustomize.py").write_text("import os\nos.environ['ENV_SITE'] = 'ran'\n")
    check = 'import os\n\n\ndef test_env_site():\n    assert os.environ.get("ENV_SITE") == "ran"\n'
    files = {"calc.py": FIXED, "tests/test_site.py": check, **MODES["sitecustomize"]}
    cmd, _, _ = verify(tmp_path, files, env={"PYTHONPATH": f"{env}:."})
    assert cmd["exit_code"] == 0, cmd["output_tail"]
    assert "3 passed" in cmd["output_tail"]  # the tree's sitecustomize (print, os._exit(0)) never ran


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("runtest_dynamic", "_pytest.python.Function.runtest was replaced by calc.py"),
        ("skip_under_pytest", "raised the runner's Skipped"),
        ("exit_under_pytest", "ended before its session finished"),
        ("atexit_report", "writes the test report pytest writes"),
        ("thread_patch", "Function.runtest was replaced by calc.py"),
        ("frames_plugin", "pytest loaded a plugin from the change (calc.py)"),
        ("forge_guard", "called bosun's runner guard itself"),
        ("builtins_skip", "builtins.AssertionError was replaced by an object of the test runner"),
        ("pytest_package_shadow", "ended without finishing"),
        ("py_shadow", "py.py (loaded in place of"),
        ("pytest_shadow", "pytest.py (loaded in place of"),
        ("dist_info_plugin", "pytest loaded a plugin from the change (calc_compat"),
        ("ini_addopts", "pytest loaded a plugin from the change (calc.py)"),
        ("test_global_thread", "writes add into the test module tests/test_calc.py"),
        ("test_code_swap", "a function of tests/test_calc.py"),
    ],
)
def test_each_way_to_grade_itself_is_refused(tmp_path, mode, says):
    cmd, hard, _ = verify(tmp_path, MODES[mode])
    assert any(says in h for h in hard), (hard, cmd["guard"], cmd["output_tail"])


def test_the_atexit_report_also_breaks_the_exit_status_and_the_reports_hash(tmp_path):
    cmd, hard, _ = verify(tmp_path, MODES["atexit_report"])
    assert cmd["exit_code"] == 0  # the forged report and exit status did reach bosun...
    assert any("finished with status 1 but its process exited with 0" in h for h in hard), hard
    assert any("was rewritten after pytest wrote it" in h for h in hard), hard


def test_a_plugin_named_in_the_verify_entrys_pytest_addopts_is_still_the_changes(tmp_path):
    cmd, hard, _ = verify(tmp_path, MODES["pytest_hooks"], env={"PYTEST_ADDOPTS": "-p calc"})
    assert cmd["exit_code"] == 0, cmd["output_tail"]
    assert "pytest loaded a plugin from the change (calc.py)" in hard


def test_a_worker_that_blinds_the_channel_loses_its_process(tmp_path):
    cmd, _, _ = verify(tmp_path, MODES["close_channel"])
    assert cmd["exit_code"] != 0  # the guard could no longer report, so it ended the process


def test_signalling_its_own_process_is_refused(tmp_path):
    cmd, hard, _ = verify(tmp_path, MODES["self_kill"])
    assert cmd["exit_code"] != 0
    assert any("signals its own test process" in h for h in hard), hard


def test_a_trace_hook_from_code_under_test_is_a_reason_for_review(tmp_path):
    cmd, hard, soft = verify(tmp_path, MODES["settrace"])
    assert hard == []
    assert any("installs a trace hook (sys.settrace)" in s for s in soft), soft


def test_code_the_start_tree_already_had_is_not_the_changes(tmp_path):
    # The same runner-wrapping calc.py, but it was there before: only the change's code is judged.
    cmd, hard, soft = verify(tmp_path, {"tests/test_more.py": "def test_more():\n    pass\n"},
                             start={"calc.py": MODES["runtest_dynamic"]["calc.py"]})
    assert cmd["exit_code"] == 0
    assert (hard, soft) == ([], [])


def test_an_interpreter_without_the_guard_is_seen_as_unguarded(tmp_path):
    # `python -I` ignores PYTHONPATH: no guard, no records; nothing is invented for it.
    cmd, hard, _ = verify(tmp_path, {"calc.py": FIXED}, run=[sys.executable, "-I", "-c", "print('ok')"])
    assert cmd["exit_code"] == 0
    assert cmd["guard"]["processes"] == [] and hard == []


def test_write(tmp_path):
    write("path_python", tmp_path)
    assert (tmp_path / "node_modules" / ".bin" / "python3").stat().st_mode & 0o111


UNITTEST_WRAP = '''import importlib

_case = importlib.import_module(bytes([117, 110, 105, 116, 116, 101, 115, 116, 46, 99, 97, 115, 101]).decode())
_run = _case.TestCase.run


def _run_quietly(self, result=None):
    return _run(self, None)  # the result pytest or unittest passed in never hears of a failure


_case.TestCase.run = _run_quietly

''' + BUG

UNITTESTS = '''import unittest

from calc import add


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
'''


def test_the_unittest_runner_is_guarded_too(tmp_path):
    cmd, hard, _ = verify(tmp_path, {"calc.py": UNITTEST_WRAP}, run=[sys.executable, "-m", "unittest", "-q", "tests.test_unit"],
                          start={"tests/__init__.py": "", "tests/test_unit.py": UNITTESTS})
    assert cmd["exit_code"] == 0, cmd["output_tail"]  # "OK": the failure went nowhere
    assert any("unittest.case.TestCase.run was replaced by calc.py" in h for h in hard), (hard, cmd["guard"])
