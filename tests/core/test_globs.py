"""bosun.core.globs: the glob dialect of scope, locked paths and the always-locked defaults."""

from __future__ import annotations

import fnmatch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bosun.core.config import ALWAYS_LOCKED
from bosun.core.globs import match, match_any

# Names built from letters, digits and a few punctuation marks; "." and ".." are not file names.
NAME = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))
DIRS = st.lists(NAME, min_size=0, max_size=4)
GLOB_SEGMENT = st.text(alphabet="abc.*?[]!-", min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        # no slash: a name at any depth
        ("conftest.py", "conftest.py", True),
        ("a/b/conftest.py", "conftest.py", True),
        ("a/b/conftest.pyc", "conftest.py", False),
        ("deploy/.env.prod", ".env*", True),
        (".env", ".env*", True),
        ("certs/server.pem", "*.pem", True),
        ("server.pem.txt", "*.pem", False),
        # a slash anchors at the root
        ("src/a.py", "src/*.py", True),
        ("lib/src/a.py", "src/*.py", False),
        ("a/conftest.py", "./conftest.py", False),
        ("conftest.py", "./conftest.py", True),
        # * ? [...] never cross "/"
        ("src/sub/a.py", "src/*.py", False),
        ("src/a/b", "src/a?b", False),
        ("src/a/b", "src/a[/]b", False),
        ("src/axb", "src/a[!y]b", True),
        ("src/a/b", "src/a[!y]b", False),
        # ** spans whole directories
        ("src/a/b/c.py", "src/**", True),
        ("srcx/a.py", "src/**", False),
        ("test_a.py", "**/test_*.py", True),
        ("x/y/test_a.py", "**/test_*.py", True),
        ("x/y/a_test_a.py", "**/test_*.py", False),
        ("a/b", "a/**/b", True),
        ("a/x/y/b", "a/**/b", True),
        ("a/xb", "a/**/b", False),
        ("a/b/c", "a**/c", False),  # "**" inside a segment is just "*", which does not cross "/"
        ("abc/d", "a**/d", True),
        (".github/workflows/ci.yml", ".github/workflows/**", True),
        (".git/config", ".git/**", True),
        # a matched directory covers everything below it
        ("docs/a/b.md", "docs", True),
        ("pkg/docs/a.md", "docs", True),
        ("docs/a/b.md", "docs/", True),
        ("src/gen/a/b.py", "src/gen", True),
        ("src/generated/a.py", "src/gen", False),
        ("x/src/gen/a.py", "src/gen", False),
        # degenerate input
        ("a", "", False),
        ("./src/a.py", "src/*.py", True),
    ],
)
def test_examples(path: str, pattern: str, expected: bool) -> None:
    assert match(path, pattern) is expected


def test_match_any_returns_the_first_matching_pattern() -> None:
    assert match_any("a/b/conftest.py", ["src/**", "conftest.py", "**/*.py"]) == "conftest.py"
    assert match_any("README.md", ["src/**", "*.py"]) is None
    assert match_any("x.py", []) is None


def test_always_locked_covers_what_it_says() -> None:
    for path in (
        ".github/workflows/ci.yml",
        "pkg/conftest.py",
        ".env.local",
        "deploy/id_rsa.pub",
        "bosun.toml",
    ):
        assert match_any(path, ALWAYS_LOCKED), path
    for path in ("src/app.py", "tests/test_app.py", "pyproject.toml", ".github/CODEOWNERS", "environment.py"):
        assert match_any(path, ALWAYS_LOCKED) is None, path


@given(DIRS, NAME)
def test_double_star_name_matches_at_any_depth(dirs: list[str], name: str) -> None:
    assert match("/".join([*dirs, name]), "**/" + name)


@given(DIRS, NAME)
def test_slashless_name_matches_at_any_depth(dirs: list[str], name: str) -> None:
    assert match("/".join([*dirs, name]), name)


@given(st.lists(NAME, min_size=1, max_size=5))
def test_literal_path_matches_itself(parts: list[str]) -> None:
    path = "/".join(parts)
    assert match(path, path)


@given(NAME, NAME, st.lists(NAME, min_size=1, max_size=3))
def test_never_matches_a_sibling_directory(top: str, sibling: str, rest: list[str]) -> None:
    if top == sibling:
        return
    pattern = f"{top}/" + "/".join(rest)
    assert not match("/".join([sibling, *rest]), pattern)
    assert not match("/".join([sibling, *rest]), f"{top}/**")


@given(NAME, NAME, NAME)
def test_star_never_crosses_a_slash(a: str, b: str, c: str) -> None:
    # "top/*" covers the directory "top/a", hence everything below it, but "top/*/x" needs exactly one
    # segment between "top" and "x".
    assert not match(f"top/{a}/{b}/{c}", f"top/*/{c}") or b == c
    # NAME has no lowercase "x" or "y", so only a "*" spanning the slash could match these.
    assert not match(f"x{a}/{b}y", "x*y")
    assert not match(f"d/x{a}/{b}y", "d/x*y")
    assert not match(f"d/x{a}/{b}y", "d/x?*y")


@given(NAME, GLOB_SEGMENT)
def test_agrees_with_fnmatch_on_single_names(name: str, pattern: str) -> None:
    assert match(name, pattern) == fnmatch.fnmatchcase(name, pattern)


@given(st.lists(NAME, min_size=1, max_size=3), st.lists(NAME, min_size=1, max_size=3))
def test_a_matched_directory_covers_everything_below(dir_parts: list[str], below: list[str]) -> None:
    directory = "/".join(dir_parts)
    for pattern in (directory, directory + "/"):
        assert match(directory + "/" + "/".join(below), pattern)


@given(DIRS, NAME)
def test_match_any_agrees_with_match(dirs: list[str], name: str) -> None:
    path = "/".join([*dirs, name])
    patterns = ["nope/**", name, "**"]
    assert match_any(path, patterns) == next(p for p in patterns if match(path, p))
