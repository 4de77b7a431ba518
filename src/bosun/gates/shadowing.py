"""MODULE_SHADOWED: a new top-level module whose name hides one the verify environment imports.

Python imports the first ``pytest`` it finds on ``sys.path``, and the directories verification puts
first on it are the repository's: a new ``pytest.py`` (or ``_pytest/__init__.py``, ``unittest.py``,
``json.py``) that exits 0 or patches the runner makes any test suite "pass". The gate fails when the
change adds, or renames into place, a module or regular package:

* named like a standard-library module (``sys.stdlib_module_names``), a module installed beside
  bosun's own interpreter (the top-level names in its site-packages, the names
  ``importlib.metadata.packages_distributions()`` maps, read from the directories directly because
  that is much faster), a test runner's (pytest, _pytest, pluggy, unittest, nose, hypothesis...), or
  anything importable from the directories outside the tree that the runner guard saw on a verify
  interpreter's ``sys.path`` (the environment the tests really ran in: a pytest plugin's
  dependencies, whatever interpreter the task names);
* at a place that is on ``sys.path`` when a verify command runs: the repository root, ``src/``, each
  verify command's directory and the ``PYTHONPATH`` entries it sets, pytest's ``pythonpath``
  setting (in ``pyproject.toml``, ``pytest.ini`` or ``setup.cfg`` beside a verify command), and
  every directory holding test files together with the first directory above it that is not a
  package (where pytest's default ``prepend`` import mode inserts it).

A module counts as ``NAME.py``, ``NAME.pyc``, ``NAME.pyw``, an extension (``NAME.so``,
``NAME.cpython-312-x86_64-linux-gnu.so``, ``NAME.pyd``) or a package's ``NAME/__init__.*``. A
directory without ``__init__`` is a namespace package and loses to any regular one, so it cannot
shadow. Existing modules the change only edits are the project's own and are not judged here.

The runner guard also reports which top-level modules each verify interpreter loaded from the tree:
a new one named like a module of its environment was loaded in its place, and that is shadowing
observed rather than inferred.
"""

from __future__ import annotations

import configparser
import os
import posixpath
import site
import sys
import tomllib
from functools import lru_cache
from typing import Any

from bosun.core.changes import GateResult
from bosun.core.quoting import quoted
from bosun.gates.context import GateInputs, listing
from bosun.gates.invocations import invocations, pythonpath_dirs

MODULE_SHADOWED = "MODULE_SHADOWED"

# Test runners and the machinery they import first, whether or not bosun's interpreter has them.
RUNNER_MODULES = frozenset(
    """pytest _pytest py pluggy iniconfig unittest nose nose2 hypothesis _hypothesis_pytestplugin
    coverage pytest_cov xdist execnet tox nox mock doctest setuptools pkg_resources _distutils_hack
    distutils pip site typing_extensions""".split()
)
# Names some distributions ship by mistake that are also ordinary project directories: a project's
# own tests/ or docs/ package is not shadowing anything the verify environment needs.
_GENERIC = frozenset("test tests testing doc docs example examples script scripts src bench benchmarks tools".split())
# Start-up hooks have a gate of their own (PYTHON_STARTUP_CHANGED) that names them better.
_STARTUP_HOOKS = frozenset({"sitecustomize", "usercustomize"})
_SOURCE_SUFFIXES = (".py", ".pyc", ".pyw")
_EXTENSION_SUFFIXES = (".so", ".pyd")
_TEST_FILE = ("test_", "conftest.py")


def check_shadowing(inputs: GateInputs) -> GateResult:
    # Only a new file named like a shadowable module can shadow: find those first, so an ordinary
    # change never pays for reading the start tree's listing.
    known = shadowable() | (environment_names(inputs.verification) - _GENERIC - _STARTUP_HOOKS)
    suspects = []
    for change in _added(inputs):
        directory, _, filename = change.rpartition("/")
        name = _module_file(filename)
        if name == "__init__":
            name = directory.rpartition("/")[2] or None
        if name is not None and name in known:
            suspects.append(change)
    found = _loaded_in_place(inputs, known)
    if not suspects and not found:
        return GateResult(MODULE_SHADOWED, True, "no new module is named like one verification imports")
    roots = import_roots(inputs) if suspects else set()
    for path in suspects:
        name = module_name(path, roots)
        if name is not None and not any(f.startswith(quoted(path) + " ") for f in found):
            found.append(f"{quoted(path)} (shadows {_origin(name)} module {quoted(name)})")
    if found:
        return GateResult(
            MODULE_SHADOWED,
            False,
            f"the worker added modules that hide ones verification imports: {listing(found)}; "
            "Python would load these instead. Rename them, or waive MODULE_SHADOWED if that is intended",
        )
    return GateResult(
        MODULE_SHADOWED,
        True,
        f"new modules named like imported ones are not on an import path: {listing(quoted(p) for p in suspects)}",
    )


def _added(inputs: GateInputs) -> list[str]:
    """Paths the change adds, or renames or copies into place."""
    return [c.path for c in inputs.changes if c.status[:1] in ("A", "R", "C")
            and not (c.status[:1] in ("R", "C") and c.old_path == c.path)]


def _loaded_in_place(inputs: GateInputs, known: frozenset[str]) -> list[str]:
    added = set(_added(inputs))
    return list(dict.fromkeys(f for runner in _runners(inputs.verification) for f in loaded_in_place(runner, added, known)))


def loaded_in_place(runner: dict[str, Any], added: set[str], known: frozenset[str] | None = None) -> list[str]:
    """New modules the runner guard saw a verify interpreter load from the tree under a name its
    environment also provides: shadowing observed, whatever the path rules above would say."""
    if known is None:
        known = shadowable() | (_names_on(runner.get("path") or []) - _GENERIC - _STARTUP_HOOKS)
    return [f"{path} (loaded in place of {_origin(name)} module {name!r})"
            for name, path in (runner.get("modules") or {}).items() if path in added and name in known]


def import_roots(inputs: GateInputs) -> set[str]:
    """Repo-relative directories on ``sys.path`` while verification runs ("" is the root)."""
    roots = {"", "src"}
    for inv in invocations(inputs.task):
        roots.add(inv.cwd)
        roots.update(pythonpath_dirs(inv))
    for directory in list(roots):
        roots.update(_pytest_pythonpath(inputs, directory))
    paths = _new_tree_paths(inputs)
    test_dirs = set()
    for path in paths:
        if "test" in path and path.endswith(".py"):  # cheap filter first: trees hold many files
            directory, _, name = path.rpartition("/")
            if name.startswith(_TEST_FILE) or name.endswith("_test.py"):
                test_dirs.add(directory)
    for directory in test_dirs:
        roots.add(directory)
        roots.add(_pytest_basedir(directory, paths))
    return roots | set(runtime_roots(inputs.verification))


def _runners(verification: dict[str, Any]) -> list[dict[str, Any]]:
    runs = [verification, verification.get("heldout") or {}]
    return [c["guard"] for run in runs for c in run.get("commands") or [] if isinstance(c.get("guard"), dict)]


def runtime_roots(verification: dict[str, Any]) -> list[str]:
    """Directories of the tree the runner guard saw on a verify interpreter's ``sys.path``."""
    return [str(p) for r in _runners(verification) for p in r.get("tree_path") or []]


def environment_names(verification: dict[str, Any]) -> frozenset[str]:
    """Every top-level name importable from the directories outside the tree that the runner guard saw
    on a verify interpreter's ``sys.path``: the environment the tests really ran in."""
    return frozenset(name for runner in _runners(verification) for name in _names_on(runner.get("path") or []))


def _names_on(directories: list[str]) -> frozenset[str]:
    names: set[str] = set()
    for directory in directories:
        names |= _listed(str(directory))
    return frozenset(names)


def module_name(path: str, roots: set[str]) -> str | None:
    """The top-level module name ``path`` defines when its directory is one of ``roots``, else None."""
    directory, filename = posixpath.split(path)
    name = _module_file(filename)
    if directory in roots and name is not None and name != "__init__":
        return name
    parent, package = posixpath.split(directory)
    if directory and parent in roots and name == "__init__":
        return package
    return None


def _module_file(filename: str) -> str | None:
    stem, _, rest = filename.partition(".")
    if not stem or not rest:
        return None
    if "." + rest in _SOURCE_SUFFIXES:
        return stem
    if filename.endswith(_EXTENSION_SUFFIXES):
        return stem  # NAME.so or NAME.<abi tag>.so
    return None


def _pytest_pythonpath(inputs: GateInputs, directory: str) -> set[str]:
    """Directories pytest's ``pythonpath`` setting adds, from the config files in ``directory``."""
    entries: list[str] = []
    for name in ("pyproject.toml", "pytest.ini", "setup.cfg"):
        path = posixpath.join(directory, name)
        for text in (inputs.base_text(path), inputs.new_text(path)):
            if text:
                entries += _pythonpath_setting(name, text)
    roots = set()
    for entry in entries:
        joined = posixpath.normpath(posixpath.join(directory, entry)) if entry else directory
        if not posixpath.isabs(entry) and not joined.startswith(".."):
            roots.add("" if joined == "." else joined)
    return roots


def _pythonpath_setting(name: str, text: str) -> list[str]:
    try:
        if name == "pyproject.toml":
            value = tomllib.loads(text).get("tool", {}).get("pytest", {}).get("ini_options", {}).get("pythonpath")
            return [str(v) for v in value] if isinstance(value, list) else str(value or "").split()
        parser = configparser.RawConfigParser()
        parser.read_string(text)
        section = "pytest" if name == "pytest.ini" else "tool:pytest"
        return parser.get(section, "pythonpath", fallback="").split()
    except (tomllib.TOMLDecodeError, configparser.Error, AttributeError):
        return []


def _new_tree_paths(inputs: GateInputs) -> set[str]:
    paths = set(inputs.start_paths)
    for change in inputs.changes:
        if change.status[:1] == "D":
            paths.discard(change.path)
        elif change.status[:1] == "R" and change.old_path:
            paths.discard(change.old_path)
        if change.status[:1] != "D":
            paths.add(change.path)
    return paths


def _pytest_basedir(directory: str, paths: set[str]) -> str:
    """The first directory at or above ``directory`` that is not a package (pytest's rootdir-less basedir)."""
    while directory and posixpath.join(directory, "__init__.py") in paths:
        directory = posixpath.dirname(directory)
    return directory


@lru_cache(maxsize=1)
def shadowable() -> frozenset[str]:
    """Top-level module names a verify command's interpreter may import."""
    names = set(sys.stdlib_module_names) | RUNNER_MODULES | installed_modules()
    return frozenset(names - _GENERIC - _STARTUP_HOOKS)


def _origin(name: str) -> str:
    if name in sys.stdlib_module_names:
        return "the standard library's"
    if name in RUNNER_MODULES:
        return "a test runner's"
    return "an installed"  # beside bosun, or where the verify interpreter found its own packages


def installed_modules() -> frozenset[str]:
    """Top-level names importable from the site-packages directories of bosun's interpreter."""
    dirs = set(site.getsitepackages()) | {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    names: set[str] = set()
    for directory in dirs:
        names |= _listed(directory)
    return frozenset(names)


def _listed(directory: str) -> frozenset[str]:
    try:
        mtime = os.stat(directory).st_mtime_ns
    except OSError:
        return frozenset()
    return _listing(directory, mtime)


@lru_cache(maxsize=64)
def _listing(directory: str, mtime: int) -> frozenset[str]:
    """Top-level module names in one directory of ``sys.path`` (cached while it is unchanged)."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return frozenset()
    names = set()
    for entry in entries:
        stem, dot, rest = entry.partition(".")
        if not dot:
            if stem.isidentifier() and stem != "__pycache__":
                names.add(stem)  # a package (regular or namespace)
        elif entry.endswith((".py", ".pyc", *_EXTENSION_SUFFIXES)) and stem.isidentifier():
            names.add(stem)
    return frozenset(names)
