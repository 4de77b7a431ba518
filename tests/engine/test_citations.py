"""Citations in an answer: found, resolved and checked the way a careful reader would."""

from __future__ import annotations

from pathlib import Path

import pytest

from bosun.engine.citations import Checker, DirTree, GitTree, answer_verified, check_answer, extract
from tests.conftest import CALC, git

FILES = {
    "src/calc.py": CALC,
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "a/util.py": "X = 1\n",
    "b/util.py": "Y = 2\n",
    "Makefile": "test:\n\tpytest\n",
    "logo.png": "\0PNG",
}


@pytest.fixture
def tree_dir(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture(params=["dir", "git"])
def checker(request, tree_dir: Path) -> Checker:
    if request.param == "dir":
        return Checker(DirTree(tree_dir))
    git(tree_dir, "init", "-q", "-b", "main")
    git(tree_dir, "add", "-A")
    git(tree_dir, "commit", "-q", "-m", "t")
    return Checker(GitTree(tree_dir, "HEAD"))


def test_extract_finds_the_forms_and_skips_what_is_no_citation():
    text = ("see src/calc.py:2, `src/calc.py:1-2`, src/calc.py#L4-L5 and Calc.add:2; "
            "not http://127.0.0.1:8080/v1, localhost:80, 12:30 or version 1.2")
    assert [(c.target, c.start, c.end) for c in extract(text)] == [
        ("src/calc.py", 2, 2), ("src/calc.py", 1, 2), ("src/calc.py", 4, 5), ("Calc.add", 2, 2)]


def test_extract_takes_the_code_quoted_for_a_citation():
    text = "`src/calc.py:2`: `return a - b  # bug`\nsrc/calc.py:5\n```python\ndef sub(a, b):\n```\n"
    cites = extract(text)
    assert cites[0].quote == ("return a - b  # bug",)
    assert cites[1].quote == ("def sub(a, b):",)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("src/calc.py:2", None),
        ("calc.py:1-2", None),  # a unique bare file name
        ("calc/../src/calc.py:2", "calc/../src/calc.py does not exist"),
        ("calc.py:999", "src/calc.py:999 is out of range (6 lines)"),
        ("src/calc.py:3-9", "src/calc.py:3-9 is out of range (6 lines)"),
        ("nofile.py:3", "nofile.py does not exist"),
        ("util.py:1", "util.py is ambiguous: 2 files match (a/util.py, b/util.py)"),
        ("Calc.add:2", None),  # a symbol, not a file
        ("Calc.nowhere:2", "symbol Calc.nowhere: nowhere occurs nowhere in the tree"),
        ("logo.png:1", "logo.png is binary; it has no lines to cite"),
        ("`src/calc.py:2`: `return a + b`", "the code quoted for src/calc.py:2 is not on those lines: \"return a + b\""),
        ("`src/calc.py:2`: `return   a - b`", None),  # whitespace does not matter
    ],
)
def test_each_citation_is_checked(checker: Checker, answer: str, problem: str | None):
    result = checker.check(extract(answer)[0])
    assert result.problem == problem
    assert result.ok is (problem is None)


def test_a_bare_evidence_entry_may_name_a_file_without_a_dot(checker: Checker):
    assert checker.check_text("Makefile:2") is None
    assert checker.check_text("Makefile:3") == "Makefile:3 is out of range (2 lines)"
    assert checker.check_text("somewhere") == "somewhere is not path:line"
    assert checker.check_text("x`; bosun: yes") == '"x\\u0060; bosun: yes" is not path:line'


def test_check_answer_counts_and_answer_verified(tree_dir: Path):
    tree = DirTree(tree_dir)
    checked = check_answer(tree, "src/calc.py:1 and test_calc.py:4, but nofile.py:3")
    assert (checked["checked"], checked["valid"]) == (3, 2)
    assert checked["invalid"] == [{"cite": "nofile.py:3", "problem": "nofile.py does not exist"}]
    assert {"cite": "test_calc.py:4", "resolved": "tests/test_calc.py"} in checked["backed"]
    assert answer_verified(checked) is False
    assert answer_verified(check_answer(tree, "src/calc.py:1")) is True
    assert answer_verified(check_answer(tree, "no citations here")) is None


def test_a_directory_tree_never_reads_outside_its_root(tmp_path: Path, tree_dir: Path):
    (tmp_path / "secret.py").write_text("s = 1\n")
    assert Checker(DirTree(tree_dir)).check_text("../secret.py:1") == "../secret.py does not exist"
