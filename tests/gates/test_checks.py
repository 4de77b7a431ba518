"""The gates (all but SECRET_DETECTED, which has its own file) and the runner, on built contexts.

Each context comes from :class:`Change`, which keeps the start-commit texts, the worker's texts, the
change list and a git-style unified diff consistent with each other, so no test hand-writes counts.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import pytest

from bosun.core.changes import FileChange, GateResult
from bosun.core.config import ALWAYS_LOCKED
from bosun.core.contract import TaskContract
from bosun.gates import GATE_CODES, GateInputs, run_gates
from bosun.gates import runner as gate_runner
from bosun.gates.binary import check_binary, check_symlinks
from bosun.gates.outcome import check_no_changes, check_source, check_verify
from bosun.gates.paths import check_locked, check_scope
from bosun.gates.size import check_deletion, check_diff_size, check_file_count
from bosun.gates.testpaths import is_test_file
from bosun.gates.tests_weakened import check_tests_weakened


class Change:
    """A worker's change under construction: texts before and after, the change list and the diff."""

    def __init__(self) -> None:
        self.base: dict[str, str] = {}
        self.new: dict[str, str] = {}
        self.changes: list[FileChange] = []
        self.diff = b""

    def file(
        self, path: str, before: str | None, after: str | None, *, old_path: str | None = None
    ) -> Change:
        """Add a text change. ``before`` None: added; ``after`` None: deleted; ``old_path``: a rename."""
        src = old_path or path
        if before is not None:
            self.base[src] = before
        if after is not None:
            self.new[path] = after
        a, b = (before or "").splitlines(keepends=True), (after or "").splitlines(keepends=True)
        added = sum(1 for line in difflib.ndiff(a, b) if line.startswith("+ "))
        deleted = sum(1 for line in difflib.ndiff(a, b) if line.startswith("- "))
        status = "A" if before is None else "D" if after is None else "R" if old_path else "M"
        mode = "100644"
        self.changes.append(
            FileChange(
                path=path,
                status=status,
                added=added,
                deleted=deleted,
                old_path=old_path,
                old_mode="000000" if status == "A" else mode,
                new_mode="000000" if status == "D" else mode,
            )
        )
        self.diff += _unified(src, path, before, after)
        return self

    def binary(self, path: str, status: str = "A") -> Change:
        self.changes.append(FileChange(path=path, status=status, binary=True, new_mode="100644"))
        self.diff += f"diff --git a/{path} b/{path}\nBinary files a/{path} and b/{path} differ\n".encode()
        return self

    def raw(self, change: FileChange) -> Change:
        self.changes.append(change)
        return self

    def ctx(self, **kw: Any) -> GateInputs:
        task = kw.pop("task", None) or TaskContract(title="t", prompt="fix it", **kw.pop("task_fields", {}))
        return GateInputs(
            task=task,
            changes=self.changes,
            diff=self.diff,
            locked=kw.pop("locked", [*ALWAYS_LOCKED, *task.locked]),
            base_line_count=lambda p: None if p not in self.base else len(self.base[p].splitlines()),
            base_text=self.base.get,
            new_text=self.new.get,
            verification_passed=kw.pop("verification_passed", True),
            **kw,
        )


def _unified(src: str, dst: str, before: str | None, after: str | None) -> bytes:
    head = [f"diff --git a/{src} b/{dst}\n"]
    if before is None:
        head.append("new file mode 100644\n")
    elif after is None:
        head.append("deleted file mode 100644\n")
    elif src != dst:
        head += [f"rename from {src}\n", f"rename to {dst}\n"]
    body = list(
        difflib.unified_diff(
            (before or "").splitlines(keepends=True),
            (after or "").splitlines(keepends=True),
            "/dev/null" if before is None else f"a/{src}",
            "/dev/null" if after is None else f"b/{dst}",
        )
    )
    return "".join(head + body).encode()


def lines(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(n))


def task(**fields: Any) -> TaskContract:
    return TaskContract(title="t", prompt="fix it", **fields)


# --- NO_CHANGES, VERIFY_FAILED, SOURCE_CHANGED ---------------------------------------------------


class TestOutcome:
    def test_code_mode_needs_changes(self) -> None:
        assert not check_no_changes(Change().ctx()).ok
        ok = check_no_changes(Change().file("a.py", "x\n", "y\n").ctx())
        assert ok.ok and ok.detail == "1 file changed"

    @pytest.mark.parametrize("mode", ["explore", "review", "test"])
    def test_read_only_modes_must_not_change_files(self, mode: str) -> None:
        assert check_no_changes(Change().ctx(task=task(mode=mode))).ok
        bad = check_no_changes(Change().file("a.py", "x\n", "y\n").ctx(task=task(mode=mode)))
        assert not bad.ok and bad.detail.startswith(f"mode {mode} must not change files")
        assert "a.py" in bad.detail

    def test_verification(self) -> None:
        assert check_verify(Change().ctx(verification_passed=True)).ok
        failed = check_verify(
            Change().ctx(verification_passed=False, verification_summary="pytest: 2 failed")
        )
        assert not failed.ok and failed.detail == "pytest: 2 failed"
        unchecked = check_verify(Change().ctx(verification_passed=None))
        assert unchecked.ok and unchecked.detail == "no verify commands: nothing was checked"

    def test_source_changed(self) -> None:
        assert check_source(Change().ctx()).detail == "source branch unchanged"
        assert check_source(Change().ctx(source_detail="main moved 2 commits, no overlap")).ok
        bad = check_source(Change().ctx(source_conflicts=["src/a.py", "src/b.py"]))
        assert not bad.ok
        assert "src/a.py, src/b.py" in bad.detail and "re-run" in bad.detail


# --- LOCKED_PATH_CHANGED, OUT_OF_SCOPE --------------------------------------------------------------


class TestLocked:
    def test_unlocked_change_passes(self) -> None:
        assert check_locked(Change().file("src/a.py", "x\n", "y\n").ctx()).ok

    @pytest.mark.parametrize(
        "path", ["conftest.py", "tests/conftest.py", ".github/workflows/ci.yml", "deploy/.env", "bosun.toml"]
    )
    def test_always_locked(self, path: str) -> None:
        result = check_locked(Change().file(path, "x\n", "y\n").ctx())
        assert not result.ok and path in result.detail

    def test_task_locked_names_the_glob(self) -> None:
        result = check_locked(
            Change().file("tests/test_a.py", "x\n", "y\n").ctx(task_fields={"locked": ["tests/**"]})
        )
        assert not result.ok and "tests/test_a.py (locked by 'tests/**')" in result.detail

    def test_renaming_a_locked_file_away(self) -> None:
        change = Change().file("src/conf.py", "x\n", "x\n", old_path="conftest.py")
        result = check_locked(change.ctx())
        assert not result.ok and "conftest.py" in result.detail

    def test_pytest_options_in_pyproject_are_locked(self) -> None:
        before = '[project]\nname = "x"\ndependencies = []\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
        after = before.replace('addopts = "-q"', 'addopts = "-q --deselect tests/test_a.py"')
        result = check_locked(Change().file("pyproject.toml", before, after).ctx())
        assert not result.ok
        assert "pyproject.toml [tool.pytest.ini_options]" in result.detail

    def test_a_dependency_in_pyproject_is_not_locked(self) -> None:
        before = '[project]\nname = "x"\ndependencies = []\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
        after = before.replace("dependencies = []", 'dependencies = ["httpx>=0.27"]')
        after = after.replace('addopts = "-q"', "addopts = '-q'")  # reformatting is not a change
        assert check_locked(Change().file("pyproject.toml", before, after).ctx()).ok

    def test_adding_pytest_config_to_a_subproject(self) -> None:
        after = '[tool.pytest.ini_options]\ntestpaths = ["nothing"]\n'
        result = check_locked(Change().file("pkg/pyproject.toml", None, after).ctx())
        assert not result.ok and "pkg/pyproject.toml [tool.pytest.ini_options]" in result.detail

    def test_unparsable_pyproject(self) -> None:
        result = check_locked(Change().file("pyproject.toml", "[project]\n", "[project\n").ctx())
        assert not result.ok and "does not parse" in result.detail

    def test_setup_cfg_pytest_section(self) -> None:
        before = "[metadata]\nname = x\n\n[tool:pytest]\naddopts = -q\n"
        dep = before.replace("name = x", "name = x\nversion = 2")
        assert check_locked(Change().file("setup.cfg", before, dep).ctx()).ok
        bad = before.replace("addopts = -q", "addopts = -q -k 'not slow'")
        result = check_locked(Change().file("setup.cfg", before, bad).ctx())
        assert not result.ok and "setup.cfg [tool:pytest]" in result.detail

    def test_package_json_scripts(self) -> None:
        before = '{"name": "x", "scripts": {"test": "jest"}, "dependencies": {}}'
        dep = '{"name": "x", "scripts": {"test": "jest"}, "dependencies": {"left-pad": "1.0.0"}}'
        assert check_locked(Change().file("package.json", before, dep).ctx()).ok
        bad = '{"name": "x", "scripts": {"test": "true"}, "dependencies": {}}'
        result = check_locked(Change().file("web/package.json", before, bad).ctx())
        assert not result.ok and 'web/package.json "scripts"' in result.detail

    def test_many_offences_are_summarised(self) -> None:
        change = Change()
        for i in range(8):
            change.file(f"d{i}/conftest.py", "x\n", "y\n")
        result = check_locked(change.ctx())
        assert "and 3 more;" in result.detail and result.detail.endswith("names them in `permit`")


class TestScope:
    def test_no_scope_allows_everything(self) -> None:
        assert check_scope(Change().file("anything.py", "x\n", "y\n").ctx()).ok

    def test_in_and_out_of_scope(self) -> None:
        fields = {"scope": ["src/**"]}
        inside = check_scope(Change().file("src/a.py", "x\n", "y\n").ctx(task_fields=fields))
        assert inside.ok and inside.detail == "1 file, all in scope"
        outside = check_scope(
            Change().file("src/a.py", "x\n", "y\n").file("README.md", "x\n", "y\n").ctx(task_fields=fields)
        )
        assert (
            not outside.ok
            and "README.md" in outside.detail
            and "src/a.py" not in outside.detail.split(": ")[-1]
        )

    def test_rename_source_outside_scope(self) -> None:
        change = Change().file("src/util.py", "x\n", "x\n", old_path="lib/util.py")
        result = check_scope(change.ctx(task_fields={"scope": ["src/**"]}))
        assert not result.ok and "lib/util.py" in result.detail


# --- EXCESSIVE_DELETION, TOO_MANY_FILES, DIFF_TOO_LARGE -----------------------------------------


class TestSize:
    def test_one_line_fix_in_a_tiny_file_passes(self) -> None:
        assert check_deletion(Change().file("a.py", "a\nb\nc\n", "a\nB\nc\n").ctx()).ok

    def test_one_line_fix_passes_even_with_a_zero_limit(self) -> None:
        ctx = (
            Change()
            .file("a.py", "a\nb\nc\n", "a\nB\nc\n")
            .ctx(task_fields={"limits": {"max_deleted_lines": 0}})
        )
        assert check_deletion(ctx).ok

    def test_gutting_a_file_fails(self) -> None:
        result = check_deletion(Change().file("a.py", lines(100), lines(30)).ctx())
        assert not result.ok and "a.py (70 of 100 lines removed)" in result.detail

    def test_deleting_a_small_file_passes_and_a_large_one_fails(self) -> None:
        assert check_deletion(Change().file("small.py", lines(20), None).ctx()).ok
        result = check_deletion(Change().file("big.py", lines(21), None).ctx())
        assert not result.ok and "big.py (deleted, 21 lines)" in result.detail

    def test_ceiling_on_a_large_file(self) -> None:
        ctx = (
            Change()
            .file("a.py", lines(1000), lines(600))
            .ctx(task_fields={"limits": {"max_deleted_lines": 300}})
        )
        result = check_deletion(ctx)
        assert not result.ok and "400 lines deleted, limit 300" in result.detail

    def test_moderate_edit_of_a_large_file_passes(self) -> None:
        assert check_deletion(Change().file("a.py", lines(1000), lines(900)).ctx()).ok

    def test_file_count(self) -> None:
        change = Change()
        for i in range(3):
            change.file(f"f{i}.py", "x\n", "y\n")
        assert check_file_count(change.ctx(task_fields={"limits": {"max_files": 3}})).ok
        result = check_file_count(change.ctx(task_fields={"limits": {"max_files": 2}}))
        assert not result.ok and result.detail == "3 files changed, limit 2"

    def test_diff_size(self) -> None:
        change = Change().file("a.py", None, lines(50))
        size = len(change.diff)
        assert check_diff_size(change.ctx(task_fields={"limits": {"max_diff_bytes": size}})).ok
        assert not check_diff_size(change.ctx(task_fields={"limits": {"max_diff_bytes": size - 1}})).ok


# --- BINARY_CHANGE, SYMLINK_CHANGE ---------------------------------------------------------------


class TestKinds:
    def test_binary(self) -> None:
        assert check_binary(Change().file("a.py", "x\n", "y\n").ctx()).ok
        result = check_binary(Change().binary("logo.png").ctx())
        assert not result.ok and "logo.png" in result.detail

    def test_deleting_a_binary_is_not_a_binary_change(self) -> None:
        change = Change().raw(FileChange(path="old.png", status="D", binary=True, old_mode="100644"))
        assert check_binary(change.ctx()).ok

    def test_symlink_modes(self) -> None:
        for old, new in (("000000", "120000"), ("120000", "100644"), ("120000", "000000")):
            change = Change().raw(FileChange(path="link", status="M", old_mode=old, new_mode=new))
            result = check_symlinks(change.ctx())
            assert not result.ok and "link (symlink)" in result.detail
        assert check_symlinks(Change().file("a.py", "x\n", "y\n").ctx()).ok

    @pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
    def test_path_through_a_symlinked_directory(self, tmp_path: Path) -> None:
        worktree, outside = tmp_path / "wt", tmp_path / "outside"
        (worktree / "src").mkdir(parents=True)
        outside.mkdir()
        (worktree / "src" / "ok.py").write_text("x\n")
        os.symlink(outside, worktree / "vendor")
        change = Change().file("src/ok.py", "x\n", "y\n").file("vendor/evil.py", None, "y\n")
        result = check_symlinks(change.ctx(worktree=worktree))
        assert not result.ok
        assert "vendor/evil.py (resolves outside the worktree)" in result.detail
        assert "src/ok.py" not in result.detail

    def test_paths_inside_a_real_worktree_pass(self, tmp_path: Path) -> None:
        (tmp_path / "src").mkdir()
        (tmp_path / "src" / "a.py").write_text("y\n")
        assert check_symlinks(Change().file("src/a.py", "x\n", "y\n").ctx(worktree=tmp_path)).ok


# --- TEST_WEAKENED ------------------------------------------------------------------------------

PY_TEST = """\
import pytest


def test_one():
    assert f(1) == 2


def test_two():
    assert f(2) == 3
    with pytest.raises(ValueError):
        f(-1)
"""

JS_TEST = """\
describe("f", () => {
  it("adds", () => {
    expect(f(1)).toBe(2);
  });
  test("negative", () => {
    expect(() => f(-1)).toThrow();
  });
});
"""


class TestTestsWeakened:
    @pytest.mark.parametrize(
        ("path", "expected"),
        [
            ("tests/test_a.py", True),
            ("test_a.py", True),
            ("pkg/a_test.py", True),
            ("tests/helpers.py", True),
            # As broad as the runners' defaults: unittest's test*.py, and everything under testing/.
            ("test.py", True),
            ("tests.py", True),
            ("src/testing.py", True),
            ("pkg/testing/helpers.py", True),
            ("src/calc.py", False),
            ("tests/data.json", False),
            ("web/a.test.tsx", True),
            ("web/a.spec.js", True),
            ("web/__tests__/a.js", True),
            ("web/a.js", False),
        ],
    )
    def test_is_test_file(self, path: str, expected: bool) -> None:
        assert is_test_file(path) is expected

    def test_adding_a_test_passes(self) -> None:
        after = PY_TEST + "\n\ndef test_three():\n    assert f(3) == 4\n"
        result = check_tests_weakened(Change().file("tests/test_f.py", PY_TEST, after).ctx())
        assert result.ok and result.detail == "1 test file changed, none weakened"

    def test_no_test_files(self) -> None:
        assert (
            check_tests_weakened(Change().file("src/a.py", "x\n", "y\n").ctx()).detail
            == "no test files changed"
        )

    def test_deleting_a_test_file(self) -> None:
        result = check_tests_weakened(Change().file("tests/test_f.py", PY_TEST, None).ctx())
        assert not result.ok and "tests/test_f.py deleted" in result.detail

    def test_moving_a_test_out_of_the_suite(self) -> None:
        result = check_tests_weakened(
            Change().file("attic/f.py", PY_TEST, PY_TEST, old_path="tests/test_f.py").ctx()
        )
        assert not result.ok and "moved out of the tests" in result.detail

    @pytest.mark.parametrize(
        "marker",
        [
            '@pytest.mark.skip(reason="flaky")',
            "@pytest.mark.skipif(True, reason='x')",
            "@pytest.mark.xfail",
            "@unittest.skip('later')",
        ],
    )
    def test_added_python_skip_markers(self, marker: str) -> None:
        after = PY_TEST.replace("def test_two", f"{marker}\ndef test_two")
        result = check_tests_weakened(Change().file("tests/test_f.py", PY_TEST, after).ctx())
        assert not result.ok and "tests/test_f.py:8 test_two adds " in result.detail

    def test_skip_call_inside_a_test(self) -> None:
        after = PY_TEST.replace("    assert f(1) == 2", "    pytest.skip('broken')\n    assert f(1) == 2")
        result = check_tests_weakened(Change().file("tests/test_f.py", PY_TEST, after).ctx())
        assert not result.ok and "pytest.skip(" in result.detail

    def test_rewording_an_existing_skip_passes(self) -> None:
        before = PY_TEST.replace("def test_two", '@pytest.mark.skip(reason="slow")\ndef test_two')
        after = before.replace('reason="slow"', 'reason="needs network"')
        assert check_tests_weakened(Change().file("tests/test_f.py", before, after).ctx()).ok

    def test_fewer_assertions(self) -> None:
        after = PY_TEST.replace("    assert f(2) == 3\n", "    f(2)\n")
        result = check_tests_weakened(Change().file("tests/test_f.py", PY_TEST, after).ctx())
        assert not result.ok and "test_f.py:8 test_two checks less (2 assertions before, 1 after)" in result.detail

    def test_fewer_tests(self) -> None:
        after = PY_TEST.replace(
            "def test_one():\n    assert f(1) == 2\n", "def helper():\n    assert f(1) == 2\n"
        )
        result = check_tests_weakened(Change().file("tests/test_f.py", PY_TEST, after).ctx())
        assert not result.ok and "tests/test_f.py: test_one (was line 4) deleted" in result.detail

    def test_commented_out_assertion(self) -> None:
        after = PY_TEST.replace("    assert f(2) == 3", "    # assert f(2) == 3")
        assert not check_tests_weakened(Change().file("tests/test_f.py", PY_TEST, after).ctx()).ok

    @pytest.mark.parametrize(
        ("old", "new"),
        [
            ('it("adds"', 'it.skip("adds"'),
            ('it("adds"', 'xit("adds"'),
            ('it("adds"', 'it.only("adds"'),
            ('it("adds"', 'fit("adds"'),
            ('describe("f"', 'describe.only("f"'),
            ('describe("f"', 'xdescribe("f"'),
            ('test("negative"', 'test.skip("negative"'),
        ],
    )
    def test_js_skip_and_focus(self, old: str, new: str) -> None:
        result = check_tests_weakened(
            Change().file("web/f.test.ts", JS_TEST, JS_TEST.replace(old, new)).ctx()
        )
        assert not result.ok and "web/f.test.ts:" in result.detail

    def test_js_todo_and_fewer_expects(self) -> None:
        after = JS_TEST.replace("    expect(f(1)).toBe(2);\n", "") + 'test.todo("later");\n'
        result = check_tests_weakened(Change().file("web/f.test.ts", JS_TEST, after).ctx())
        assert not result.ok
        assert "adds test.todo" in result.detail
        assert "test 'adds' checks less (1 check before, 0 after)" in result.detail

    def test_model_fit_is_not_focus(self) -> None:
        before = "def test_model():\n    assert model is not None\n"
        after = before + "    model.fit(x)\n"
        assert check_tests_weakened(Change().file("tests/test_m.py", before, after).ctx()).ok


# --- the runner ----------------------------------------------------------------------------------


class TestRunner:
    def test_every_gate_once_in_order(self) -> None:
        results = run_gates(Change().file("src/a.py", "x\n", "y\n").ctx())
        assert [r.code for r in results] == list(GATE_CODES)
        assert len(set(GATE_CODES)) == len(GATE_CODES) == 20
        assert all(r.ok for r in results), [r for r in results if not r.ok]
        assert all(r.detail for r in results)

    def test_a_clean_change_in_scope(self) -> None:
        change = Change().file("src/a.py", lines(10), lines(10).replace("line 3", "line three"))
        results = {r.code: r for r in run_gates(change.ctx(task_fields={"scope": ["src/**"]}))}
        assert results["OUT_OF_SCOPE"].detail == "1 file, all in scope"

    def test_a_crashing_gate_fails_closed(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def boom(ctx: GateInputs) -> GateResult:
            raise RuntimeError("bug")

        gates = tuple((code, boom if code == "BINARY_CHANGE" else gate) for code, gate in gate_runner.GATES)
        monkeypatch.setattr(gate_runner, "GATES", gates)
        results = {r.code: r for r in run_gates(Change().file("src/a.py", "x\n", "y\n").ctx())}
        assert not results["BINARY_CHANGE"].ok
        assert results["BINARY_CHANGE"].detail == "gate could not run: RuntimeError: bug"
        assert results["NO_CHANGES"].ok


class TestPermit:
    def test_a_permitted_locked_path_is_a_reason_for_review(self) -> None:
        change = Change()
        change.file("tox.ini", "[tox]\n", "[tox]\nenvlist = py311\n")
        result = check_locked(change.ctx(task_fields={"permit": ["tox.ini"]}))
        assert result.ok and [r["code"] for r in result.review] == ["LOCKED_PATH_PERMITTED"]
        assert "tox.ini" in result.review[0]["sentence"]

    def test_permit_never_lifts_bosun_toml_or_git(self) -> None:
        change = Change()
        change.file("bosun.toml", "a = 1\n", "a = 2\n")
        assert not check_locked(change.ctx(task_fields={"permit": ["*"]})).ok

    def test_permit_never_lifts_the_pytest_section_of_a_permitted_file(self) -> None:
        base = "[tox]\nenvlist = py311\n\n[pytest]\naddopts = -q\n"
        change = Change()
        change.file("tox.ini", base, base.replace("addopts = -q", "addopts = -q -k 'not test_add'"))
        result = check_locked(change.ctx(task_fields={"permit": ["tox.ini"]}))
        assert not result.ok and "tox.ini [pytest]" in result.detail
        change = Change()
        change.file("tox.ini", base, base + "\n[testenv:lint]\ncommands = ruff check .\n")
        result = check_locked(change.ctx(task_fields={"permit": ["tox.ini"]}))
        assert result.ok and [r["code"] for r in result.review] == ["LOCKED_PATH_PERMITTED"]
