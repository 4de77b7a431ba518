"""Which paths are tests, test harness or test data, by name alone: the fallback for files no
runner's report names (:mod:`bosun.gates.testset` puts the two together).

The names are at least as broad as the runners' own defaults, so a test the verify commands do not
select, or a run that reported nothing, is still seen as a test:

* A *test module* is a file a test runner collects: Python ``test*.py`` (unittest's default pattern,
  which covers pytest's ``test_*.py``, a root ``test.py`` and Django's ``tests.py``) and ``*_test.py``;
  JS/TS ``*.test.*``, ``*.spec.*`` and any script under ``__tests__/``; Go
  ``*_test.go``; Rust files under ``tests/``; Java/Kotlin ``*Test(s).java/.kt``; Ruby ``*_spec.rb``,
  ``test_*.rb`` and ``*_test.rb``.
* *Harness* is the code around the tests that runs with them: ``conftest.py`` anywhere, and every
  other Python or JS/TS module under a test directory (``__init__.py``, helpers, fixtures, setup files).
* *Test data* is anything else under a test directory (``.json``, ``.toml``, ``.txt``, snapshots ...).

Test directories are path components named ``tests``, ``test``, ``testing``, ``__tests__``, ``spec``,
``specs`` or ``testdata``.
"""

from __future__ import annotations

import re

JS_SUFFIXES = (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts")
TEST_DIRS = frozenset({"tests", "test", "testing", "__tests__", "spec", "specs", "testdata"})

_PY_TEST_NAME = re.compile(r"test.*\.py|.*_test\.py")
_JS_TEST_NAME = re.compile(r".*\.(?:test|spec)\.[cm]?[jt]sx?")
_OTHER_TEST_NAME = re.compile(r".*_test\.go|.*Tests?\.(?:java|kt)|.*_spec\.rb|test_.*\.rb|.*_test\.rb")
# Source files of languages whose tests the textual tripwire reads: under a test directory they
# are code (tests or harness), not data.
_CODE_SUFFIXES = (".py", *JS_SUFFIXES, ".go", ".rs", ".java", ".kt", ".rb")


def _split(path: str) -> tuple[list[str], str]:
    *dirs, name = path.split("/")
    return dirs, name


def in_test_dir(path: str) -> bool:
    dirs, _ = _split(path)
    return any(d in TEST_DIRS for d in dirs)


def is_python(path: str) -> bool:
    return path.endswith(".py")


def is_js(path: str) -> bool:
    return path.endswith(JS_SUFFIXES)


def is_test_module(path: str) -> bool:
    """A file the test runner collects tests from."""
    dirs, name = _split(path)
    if name.endswith(".py"):
        return bool(_PY_TEST_NAME.fullmatch(name))
    if name.endswith(JS_SUFFIXES):
        return bool(_JS_TEST_NAME.fullmatch(name)) or "__tests__" in dirs
    if name.endswith(".rs"):
        return "tests" in dirs
    return bool(_OTHER_TEST_NAME.fullmatch(name))


def is_harness(path: str) -> bool:
    """Code that runs with the tests without being collected as tests."""
    dirs, name = _split(path)
    if name == "conftest.py":
        return True
    return (is_python(name) or is_js(name)) and in_test_dir(path) and not is_test_module(path)


def is_test_file(path: str) -> bool:
    """A file whose tests and assertions TEST_WEAKENED judges: a test module or harness code."""
    return is_test_module(path) or is_harness(path)


def is_test_data(path: str) -> bool:
    """A non-code file under a test directory: cases, fixtures, expected outputs."""
    return in_test_dir(path) and not path.endswith(_CODE_SUFFIXES)
