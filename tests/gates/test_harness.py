"""Gates on the harness a diff can reach: git's rule files, Python start-up hooks, shadowing modules,
what the verify commands run, binaries found by content, and replaced versus removed lines."""

from __future__ import annotations

import difflib
import sys
from typing import Any

import pytest

from bosun.core.changes import FileChange
from bosun.core.config import ALWAYS_LOCKED
from bosun.core.contract import TaskContract
from bosun.core.globs import match_any
from bosun.gates import GATE_CODES, GateInputs, run_gates
from bosun.gates.binary import check_binary
from bosun.gates.entrypoints import check_entry_points
from bosun.gates.harness import check_git_rules, check_python_startup
from bosun.gates.invocations import invocations, pythonpath_dirs
from bosun.gates.paths import check_locked
from bosun.gates.shadowing import check_shadowing, shadowable
from bosun.gates.size import check_deletion
from bosun.gates.testconfig import ANY_ENV, tox_selected_envs


class Tree:
    """A start tree and a worker's change to it, with a consistent change list, diff and byte view."""

    def __init__(self, *base_paths: str) -> None:
        self.start: dict[str, bytes] = {p: b"x\n" for p in base_paths}
        self.new: dict[str, bytes] = dict(self.start)
        self.changes: list[FileChange] = []
        self.diff = b""

    def put(self, path: str, data: bytes | str, before: bytes | str | None = None, old_path: str | None = None) -> Tree:
        data = data.encode() if isinstance(data, str) else data
        if before is not None:
            self.start[old_path or path] = before.encode() if isinstance(before, str) else before
        existed = (old_path or path) in self.start
        status = "R" if old_path else "M" if existed else "A"
        if old_path:
            self.new.pop(old_path, None)
        self.new[path] = data
        a = self.start.get(old_path or path, b"").decode(errors="replace").splitlines() if existed else []
        b = data.decode(errors="replace").splitlines()
        marks = [line[:1] for line in difflib.ndiff(a, b)]
        self.changes.append(
            FileChange(path, status, marks.count("+"), marks.count("-"), old_path=old_path, new_mode="100644")
        )
        if b"\0" not in data:
            old = self.start.get(old_path or path, b"").decode()
            self.diff += _unified(old_path or path, path, old if existed else None, data.decode())
        return self

    def delete(self, path: str) -> Tree:
        self.new.pop(path, None)
        self.changes.append(FileChange(path=path, status="D", old_mode="100644"))
        return self

    def ctx(self, **task_fields: Any) -> GateInputs:
        task = TaskContract(title="t", prompt="fix it", **task_fields)
        return GateInputs(
            task=task,
            changes=self.changes,
            diff=self.diff,
            locked=[*ALWAYS_LOCKED, *task.locked],
            base_line_count=lambda p: len(self.start[p].splitlines()) if p in self.start else None,
            base_text=lambda p: self.start[p].decode() if p in self.start else None,
            new_text=lambda p: self.new[p].decode() if p in self.new and b"\0" not in self.new[p] else None,
            verification_passed=True,
            new_bytes=self.new.get,
            base_paths=lambda: list(self.start),
        )


def _unified(src: str, dst: str, before: str | None, after: str) -> bytes:
    head = f"diff --git a/{src} b/{dst}\n" + ("new file mode 100644\n" if before is None else "")
    body = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        "/dev/null" if before is None else f"a/{src}",
        f"b/{dst}",
    )
    return (head + "".join(body)).encode()


PY = "import sys\nsys.exit(0)\n"


# --- always locked: git's rule files and Python start-up hooks ------------------------------------


@pytest.mark.parametrize("name", [".gitattributes", ".gitmodules", ".gitignore"])
@pytest.mark.parametrize("where", ["", "lib/", "a/b/c/"])
def test_git_rule_files_fail_at_any_depth(name: str, where: str) -> None:
    result = check_git_rules(Tree("src/a.py").put(f"{where}{name}", "* text\n").ctx())
    assert not result.ok
    assert f"{where}{name} (added)" in result.detail
    assert "git's rules" in result.detail


def test_git_rule_file_deleted_or_edited_fails_too() -> None:
    tree = Tree(".gitignore", "sub/.gitattributes").delete(".gitignore").put("sub/.gitattributes", "*.so -diff\n")
    result = check_git_rules(tree.ctx())
    assert not result.ok and ".gitignore (deleted)" in result.detail and "sub/.gitattributes (modified)" in result.detail


@pytest.mark.parametrize("path", ["sitecustomize.py", "src/sitecustomize.py", "a/b/usercustomize.py", "x.pth", "lib/deep/evil.pth"])
def test_python_startup_files_fail_anywhere(path: str) -> None:
    ctx = Tree().put(path, "import os\n").ctx(verify=[{"run": "python -m pytest", "env": {"PYTHONPATH": "src"}}])
    result = check_python_startup(ctx)
    assert not result.ok and path in result.detail and "start-up" in result.detail
    assert check_shadowing(ctx).ok  # named once, by the gate that says what it is


def test_harness_files_are_always_locked_but_reported_under_their_own_code() -> None:
    for path in (".gitignore", "x/.gitattributes", "src/sitecustomize.py", "a/b.pth"):
        assert match_any(path, ALWAYS_LOCKED), path
        ctx = Tree().put(path, "x\n").ctx()
        assert check_locked(ctx).ok, path  # not reported twice
        results = {r.code: r for r in run_gates(ctx)}
        assert not (results["GIT_RULES_CHANGED"].ok and results["PYTHON_STARTUP_CHANGED"].ok), path


def test_ordinary_files_pass_the_harness_gates() -> None:
    ctx = Tree("src/calc.py").put("src/calc.py", "def add(a, b):\n    return a + b\n").put("docs/gitignore.md", "x\n").ctx()
    assert check_git_rules(ctx).ok and check_python_startup(ctx).ok


# --- MODULE_SHADOWED ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "pytest.py",
        "_pytest/__init__.py",
        "unittest.py",
        "pluggy/__init__.py",
        "json.py",
        "src/pytest.py",
        "src/unittest/__init__.py",
        "pytest.cpython-311-x86_64-linux-gnu.so",
        "tests/pytest.py",  # tests/ holds test files: pytest's prepend mode puts it on sys.path
    ],
)
def test_new_top_level_module_that_shadows_fails(path: str) -> None:
    tree = Tree("tests/test_calc.py", "src/calc.py").put(path, PY)
    result = check_shadowing(tree.ctx(verify=["python -m pytest -q tests"]))
    assert not result.ok, result.detail
    assert path in result.detail and "shadows" in result.detail


def test_installed_distributions_count() -> None:
    # The test runner and a dependency of bosun's own are installed beside this interpreter.
    assert {"pytest", "_pytest", "pydantic", "yaml", "os", "json"} <= shadowable()
    assert "tests" not in shadowable() and "docs" not in shadowable()


def test_pythonpath_and_cwd_of_verify_commands_are_roots() -> None:
    verify = [{"run": "python -m pytest", "env": {"PYTHONPATH": "lib:vendor/py"}, "cwd": "pkg"}]
    for path in ("pkg/lib/pytest.py", "pkg/vendor/py/pluggy/__init__.py", "pkg/unittest.py"):
        result = check_shadowing(Tree().put(path, PY).ctx(verify=verify))
        assert not result.ok, path
    # The same names elsewhere, inside a package, are the project's own submodules.
    assert check_shadowing(Tree("pkg/lib/x.py").put("other/lib/pytest.py", PY).ctx(verify=verify)).ok


def test_package_test_dirs_use_pytests_basedir() -> None:
    # tests/ is a package: pytest inserts the first directory above it that is not one (the root).
    tree = Tree("app/__init__.py", "app/tests/__init__.py", "app/tests/test_x.py")
    assert not check_shadowing(tree.put("app/tests/json.py", PY).ctx()).ok
    tree = Tree("app/__init__.py", "app/tests/__init__.py", "app/tests/test_x.py", "app/core.py")
    assert check_shadowing(tree.put("app/json.py", PY).ctx()).ok  # app is a package, never a root


@pytest.mark.parametrize(
    "path",
    ["src/calc_utils.py", "helpers.py", "src/mypkg/json.py", "src/mypkg/__init__.py", "tests/helpers.py", "pytest_notes.md"],
)
def test_honest_new_modules_pass(path: str) -> None:
    tree = Tree("src/calc.py", "tests/test_calc.py").put(path, "VALUE = 1\n")
    assert check_shadowing(tree.ctx(verify=["python -m pytest -q tests"])).ok


def test_editing_an_existing_module_of_that_name_is_not_shadowing() -> None:
    # A project may own a top-level `types.py`; editing it is the project's business.
    assert check_shadowing(Tree("types.py").put("types.py", "X = 2\n").ctx()).ok


def test_renaming_into_a_shadowing_name_fails() -> None:
    tree = Tree().put("pytest.py", PY, before="x = 1\n", old_path="tools/fake.py")
    assert not check_shadowing(tree.ctx()).ok


# --- VERIFY_ENTRY_CHANGED -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verify", "path"),
    [
        ("make test", "Makefile"),
        ("make test", "GNUmakefile"),
        ("make -C sub check", "sub/rules.mk"),
        ("make test", "test"),  # a plain file named like the target satisfies make
        ("make -f ci/build.make test", "ci/build.make"),
        ("just test", "justfile"),
        ("tox -e py311", "tox.toml"),
        ("nox -s tests", "noxfile.py"),
        ("yarn test", ".yarnrc.yml"),
        ("./run_tests.sh", "run_tests.sh"),
        ("python scripts/check.py", "scripts/check.py"),
        ("bash ci.sh", "ci.sh"),
        ("python -m pytest -c ci/pytest.cfg", "ci/pytest.cfg"),
        ("mypy --config-file=ci/mypy.ini src", "ci/mypy.ini"),
        ("python -m tools.runner", "tools/runner.py"),
        ("env PYTHONPATH=src timeout 60 uv run --with x python check.py", "check.py"),
    ],
)
def test_changing_what_verify_runs_fails(verify: str, path: str) -> None:
    tree = Tree().put(path, "test:\n\t@echo ok\n", before="test:\n\tpytest\n")
    result = check_entry_points(tree.ctx(verify=[verify]))
    assert not result.ok, (verify, path)
    assert path in result.detail and "verify commands run" in result.detail


def test_shell_commands_and_cwd_are_followed() -> None:
    verify = [{"run": "cd sub && ./check.sh; make -s lint", "shell": True}]
    for path in ("sub/check.sh", "Makefile", "deep/x.mk"):
        assert not check_entry_points(Tree().put(path, "x\n").ctx(verify=verify)).ok, path
    verify2 = [{"run": ["bash", "-c", "scripts/t.sh && echo done"], "cwd": "pkg"}]
    assert not check_entry_points(Tree().put("pkg/scripts/t.sh", "x\n").ctx(verify=verify2)).ok
    assert check_entry_points(Tree().put("scripts/t.sh", "x\n").ctx(verify=verify2)).ok


def test_entry_points_only_matter_for_the_tools_verify_runs() -> None:
    tree = Tree("Makefile", "src/calc.py").put("Makefile", "all:\n\techo\n").put("src/calc.py", "x = 1\n")
    assert check_entry_points(tree.ctx(verify=["python -m pytest -q tests"])).ok
    assert check_entry_points(tree.ctx()).ok
    honest = Tree("src/calc.py").put("src/calc.py", "x = 2\n")
    assert check_entry_points(honest.ctx(verify=["make test", "python -m pytest tests"])).ok


@pytest.mark.parametrize("verify", ["test -f out/report.txt", "[ -f out/report.txt ]", "test -s out/report.txt",
                                    "sh -c 'test -f out/report.txt && grep -q ok out/report.txt'"])
def test_a_file_a_test_command_checks_is_the_work_not_what_verify_runs(verify: str) -> None:
    """``test -f PATH``: ``-f`` is a file test there, not ``make -f``; the worker making PATH is the task."""
    tree = Tree().put("out/report.txt", "ok\n")
    assert check_entry_points(tree.ctx(verify=[verify])).ok, verify
    assert not check_entry_points(Tree().put("ci/t.sh", "x\n").ctx(verify=["./ci/t.sh", verify])).ok


def test_invocations_peel_wrappers_and_keep_environment() -> None:
    task = TaskContract(
        title="t",
        prompt="p",
        verify=[
            {"run": "PYTHONPATH=src:lib poetry run pytest -q", "shell": True},
            {"run": ["env", "-u", "X", "PYTHONPATH=vendor", "python", "-m", "pytest"], "cwd": "pkg"},
        ],
    )
    invs = invocations(task)
    assert [inv.argv[0] for inv in invs] == ["pytest", "python"]
    assert pythonpath_dirs(invs[0]) == ["src", "lib"]
    assert pythonpath_dirs(invs[1]) == ["pkg/vendor"]


# --- BINARY_CHANGE by content ---------------------------------------------------------------------


def test_nul_bytes_make_a_binary_whatever_gitattributes_say() -> None:
    so = b"\x7fELF" + b"\0" * 4096
    tree = Tree().put("lib/.gitattributes", "*.so text\n").put("lib/native.so", so)
    # git, following the worker's .gitattributes, would call it text: the change list says so too.
    ctx = tree.ctx()
    assert not any(c.binary for c in ctx.changes)
    result = check_binary(ctx)
    assert not result.ok and "lib/native.so" in result.detail
    assert not check_git_rules(ctx).ok


def test_nul_after_the_sniffed_prefix_and_text_files_pass() -> None:
    assert check_binary(Tree().put("a.txt", "plain text\n").ctx()).ok
    assert check_binary(Tree().put("late.txt", b"a" * 9000 + b"\0").ctx()).ok  # git's own 8000-byte test
    assert check_binary(Tree("gone.bin").delete("gone.bin").ctx()).ok


# --- EXCESSIVE_DELETION: replaced lines are not removed lines --------------------------------------


def _header(word: str, n: int) -> str:
    return "".join(f"# {word} header line {i}\n" for i in range(n))


def test_header_only_rewrite_of_a_small_file_passes() -> None:
    body = "".join(f"x{i} = {i}\n" for i in range(15))
    before, after = _header("old", 25) + body, _header("new licence", 25) + body
    result = check_deletion(Tree().put("src/m.py", after, before=before).ctx())
    assert result.ok, result.detail


def test_replacing_code_with_blank_lines_is_still_removal() -> None:
    body = "".join(f"x{i} = {i}\n" for i in range(40))
    result = check_deletion(Tree().put("src/m.py", "\n" * 40, before=body).ctx())
    assert not result.ok and "40 of 40 lines removed" in result.detail


def test_a_rewrite_beyond_the_ceiling_still_fails() -> None:
    before = "".join(f"a{i} = {i}\n" for i in range(50))
    after = "".join(f"b{i} = {i}\n" for i in range(50))
    ctx = Tree().put("src/m.py", after, before=before).ctx(limits={"max_deleted_lines": 30})
    assert not check_deletion(ctx).ok


# --- tox environments: additions, not tampering ---------------------------------------------------

PYPROJECT = '[project]\nname = "x"\n\n[tool.tox]\nenv_list = ["py"]\n\n[tool.tox.env.py]\ncommands = [["pytest"]]\n'


def test_a_new_tox_environment_no_verify_command_selects_is_a_reason_for_review() -> None:
    # Locked test configuration that changes nothing any verify command runs is for a person, not refused.
    after = PYPROJECT + '\n[tool.tox.env.docs]\ncommands = [["sphinx-build", "docs", "out"]]\n'
    result = check_locked(Tree().put("pyproject.toml", after, before=PYPROJECT).ctx(verify=["tox -e py"]))
    assert result.ok, result.detail
    assert [r["code"] for r in result.review] == ["TEST_ENV_ADDED"]
    assert "pyproject.toml [tool.tox.env.docs]" in result.review[0]["sentence"]


def test_a_new_tox_environment_in_a_locked_tox_ini_is_a_reason_for_review() -> None:
    before = "[tox]\nenvlist = py\n\n[testenv]\ncommands = pytest\n"
    after = before + "\n# docs\n[testenv:docs]\ncommands = sphinx-build docs out\n"
    result = check_locked(Tree().put("tox.ini", after, before=before).ctx(verify=["python -m pytest -q"]))
    assert result.ok and [r["code"] for r in result.review] == ["TEST_ENV_ADDED"], result.detail
    # Anything else changed in the same file is the locked file changed.
    for edited in (after.replace("envlist = py", "envlist = py,docs"), after + "\n[pytest]\naddopts = -q\n"):
        result = check_locked(Tree().put("tox.ini", edited, before=before).ctx(verify=["python -m pytest -q"]))
        assert not result.ok and "tox.ini" in result.detail


def test_a_new_tox_environment_that_verify_selects_is_tampering() -> None:
    after = PYPROJECT + '\n[tool.tox.env.ci]\ncommands = [["true"]]\n'
    for verify in ("tox -e ci", "tox -m fast", "tox -e ALL"):
        result = check_locked(Tree().put("pyproject.toml", after, before=PYPROJECT).ctx(verify=[verify]))
        assert not result.ok and result.detail.startswith("locked paths changed"), verify


def test_editing_an_existing_tox_environment_is_tampering() -> None:
    after = PYPROJECT.replace('[["pytest"]]', '[["true"]]')
    result = check_locked(Tree().put("pyproject.toml", after, before=PYPROJECT).ctx(verify=["tox"]))
    assert not result.ok and "locked paths changed" in result.detail and "[tool.tox.env.py]" in result.detail


def test_tox_selection_is_read_from_argv_and_toxenv() -> None:
    assert tox_selected_envs([(("tox", "-e", "py311,lint"), {})]) == {"py311", "lint"}
    assert tox_selected_envs([(("tox", "-epy"), {"TOXENV": "docs"})]) == {"py", "docs"}
    assert tox_selected_envs([(("tox", "run", "-m", "x"), {})]) == {ANY_ENV}
    assert tox_selected_envs([(("tox",), {})]) == {ANY_ENV}  # its env_list or the default: bosun does not read which
    assert tox_selected_envs([(("pytest",), {})]) == set()


# --- the runner knows every new code ---------------------------------------------------------------


def test_new_codes_are_registered_in_order() -> None:
    new = ["GIT_RULES_CHANGED", "PYTHON_STARTUP_CHANGED", "MODULE_SHADOWED", "VERIFY_ENTRY_CHANGED"]
    positions = [GATE_CODES.index(code) for code in new]
    assert positions == sorted(positions) and GATE_CODES.index("LOCKED_PATH_CHANGED") < positions[0]


def test_a_clean_change_passes_every_gate() -> None:
    tree = Tree("src/calc.py", "tests/test_calc.py", "Makefile").put("src/calc.py", "def add(a, b):\n    return a + b\n")
    results = run_gates(tree.ctx(verify=["make test", f"{sys.executable} -m pytest -q tests"]))
    assert all(r.ok for r in results), [r for r in results if not r.ok]


def test_operands_a_tool_only_checks_are_not_entry_points() -> None:
    fix = Tree("src/calc.py", "tests/test_calc.py").put("src/calc.py", "x = 2\n").put("tests/test_calc.py", "y\n")
    verify = ["mypy src/calc.py", "ruff check src/calc.py", "python -m pytest tests/test_calc.py"]
    assert check_entry_points(fix.ctx(verify=verify)).ok
    # ...but the script an interpreter runs is one, whatever its name.
    assert not check_entry_points(fix.ctx(verify=["python src/calc.py"])).ok
    assert not check_entry_points(Tree().put("setup.js", "x\n").ctx(verify=["node -r ./setup.js t.js"])).ok


def test_pytest_pythonpath_setting_is_a_root() -> None:
    pyproject = '[tool.pytest.ini_options]\npythonpath = ["lib", "."]\n'
    tree = Tree("pyproject.toml").put("lib/json.py", PY)
    tree.start["pyproject.toml"] = tree.new["pyproject.toml"] = pyproject.encode()
    assert not check_shadowing(tree.ctx()).ok
    ini = Tree("pytest.ini").put("vendor/pluggy.py", PY)
    ini.start["pytest.ini"] = ini.new["pytest.ini"] = b"[pytest]\npythonpath = vendor\n"
    assert not check_shadowing(ini.ctx()).ok


def test_environments_and_node_modules_in_the_repo_are_entry_points() -> None:
    venv = Tree().put(".venv/lib/python3.11/site-packages/_pytest/main.py", PY)
    assert not check_entry_points(venv.ctx(verify=[".venv/bin/python -m pytest"])).ok
    assert check_entry_points(venv.ctx(verify=["python -m pytest"])).ok
    jest = Tree().put("node_modules/.bin/jest", "#!/bin/sh\nexit 0\n")
    assert not check_entry_points(jest.ctx(verify=["npm test"])).ok


def test_scripts_a_recipe_runs_are_entry_points() -> None:
    makefile = "PY ?= python\n\ntest: build\n\t@./scripts/test.sh -q\n\t$(PY) tools/check.py\n\nbuild: src/calc.py\n\techo\n"
    for path in ("scripts/test.sh", "tools/check.py"):
        tree = Tree("Makefile", "src/calc.py").put(path, "exit 0\n")
        tree.start["Makefile"] = tree.new["Makefile"] = makefile.encode()
        result = check_entry_points(tree.ctx(verify=["make test"]))
        assert not result.ok and f"{path} (run by `make test` through Makefile)" in result.detail
    # A prerequisite the recipe only names is the code under test.
    fix = Tree("Makefile", "src/calc.py").put("src/calc.py", "x = 2\n")
    fix.start["Makefile"] = fix.new["Makefile"] = makefile.encode()
    assert check_entry_points(fix.ctx(verify=["make test"])).ok
    pkg = Tree("web/package.json").put("web/scripts/run-tests.js", "process.exit(0)\n")
    pkg.start["web/package.json"] = b'{"scripts": {"test": "node scripts/run-tests.js"}}'
    assert not check_entry_points(pkg.ctx(verify=[{"run": "npm test", "cwd": "web"}])).ok
    just = Tree("justfile").put("ci/run.sh", "exit 0\n")
    just.start["justfile"] = b"test:\n    bash ci/run.sh\n"
    assert not check_entry_points(just.ctx(verify=["just test"])).ok
