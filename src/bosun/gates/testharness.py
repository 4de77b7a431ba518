"""TEST_HARNESS_CHANGED: the code that runs around the tests, changed.

``conftest.py``, a package's ``tests/__init__.py``, helpers and fixtures under a test directory run
with every test without being tests, so a worker can make a failing suite pass there without
touching a single test: replace the function under test at import time, or patch pytest so every
test "passes". Every added, changed or deleted harness file is listed in the detail for the
reviewer (the gate stays green: fixtures change honestly all the time). The gate fails when a
harness file (or a test module's top level) newly

* patches code under test: assigns an attribute of, ``setattr``/``monkeypatch.setattr``/``patch``es a
  module of the repository (found in the start or changed tree), at import time, in an autouse
  fixture or a pytest hook (a test module: at its top level or in a class body only, where no test
  asked for it);
* patches the test framework: ``pytest``, ``_pytest`` (``Function.runtest``), ``unittest``,
  ``builtins``, ``pluggy``;
* writes ``sys.modules`` (one module shadowing another);
* defines a pytest hook that can change what runs or what a result says
  (``pytest_runtest_makereport``, ``pytest_collection_modifyitems``, ``pytest_pyfunc_call`` ...).

Patching that the start tree already had is not new and does not fail.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache

from bosun.core.changes import FileChange, GateResult
from bosun.core.quoting import quoted
from bosun.gates.context import GateInputs, listing
from bosun.gates.pynodes import dotted, import_names
from bosun.gates.testpaths import TEST_DIRS, is_python
from bosun.gates.testset import TestSet

TEST_HARNESS_CHANGED = "TEST_HARNESS_CHANGED"

FRAMEWORK = frozenset({"pytest", "_pytest", "unittest", "builtins", "pluggy", "doctest"})
OUTCOME_HOOKS = frozenset(
    {
        "pytest_runtest_makereport", "pytest_runtest_call", "pytest_runtest_protocol", "pytest_runtest_setup",
        "pytest_pyfunc_call", "pytest_collection_modifyitems", "pytest_ignore_collect", "pytest_collect_file",
        "pytest_pycollect_makeitem", "pytest_pycollect_makemodule", "pytest_itemcollected", "pytest_deselected",
        "pytest_report_teststatus", "pytest_runtest_logreport", "pytest_sessionfinish",
        "pytest_collection_finish", "pytest_exception_interact",
    }
)  # fmt: skip
_PATCHERS = frozenset({"setattr", "delattr", "patch", "object", "dict", "multiple", "setitem", "delitem"})


@dataclass(frozen=True)
class Tamper:
    line: int
    what: str  # in words
    key: str  # the same finding in another version of the file (lines move)


def check_test_harness(inputs: GateInputs) -> GateResult:
    is_project = _project_probe(inputs)
    tests = inputs.tests
    refusals: list[str] = []
    changed: list[str] = []
    for change in inputs.changes:
        old = change.old_path if change.status[:1] == "R" and change.old_path else change.path
        harness = tests.is_harness(change.path) or tests.is_harness(old)
        if harness:
            changed.append(f"{quoted(change.path)} {_verb(change)}")
        if change.status[:1] == "D" or not is_python(change.path):
            continue
        if not (harness or tests.is_test_module(change.path)):
            continue
        before = inputs.base_text(old) if change.status[:1] != "A" else None
        had = {t.key for t in tampering(before or "", change.path, is_project, tests)}
        for t in tampering(inputs.new_text(change.path) or "", change.path, is_project, tests):
            if t.key not in had:
                refusals.append(f"{quoted(change.path)}:{t.line} {t.what}")
    review = f"; harness changed: {listing(changed)}" if changed else ""
    if refusals:
        return GateResult(TEST_HARNESS_CHANGED, False, f"the test harness tampers with the tests: {listing(refusals)}{review}")
    if changed:
        return GateResult(TEST_HARNESS_CHANGED, True, f"test harness changed, review it: {listing(changed)}")
    return GateResult(TEST_HARNESS_CHANGED, True, "no test harness files changed")


def _verb(change: FileChange) -> str:
    return {"A": "added", "D": "deleted", "R": "renamed"}.get(change.status[:1], "changed")


def tampering(text: str, path: str, is_project: Callable[[str], bool], tests: TestSet | None = None) -> list[Tamper]:
    """What ``text`` (the file at ``path``) does to the code under test or the framework."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    harness = (tests or TestSet()).is_harness(path)
    imports = import_names(tree)
    found: list[Tamper] = []
    for stmt in _scope(tree, harness):
        for node in ast.walk(stmt):
            line = getattr(node, "lineno", 0)
            for target in _patched(node, imports):
                why = _why(target, is_project)
                if why:
                    found.append(Tamper(line, f"{why}: {target}", f"{why}: {target}"))
            if _writes_sys_modules(node):
                found.append(Tamper(line, "writes sys.modules, shadowing a module", ast.unparse(node)))
    if harness:
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name in OUTCOME_HOOKS:
                found.append(Tamper(stmt.lineno, f"defines {stmt.name}, a hook that can change test outcomes", stmt.name))
    return found


def _scope(tree: ast.Module, harness: bool) -> Iterator[ast.stmt]:
    """Statements that run without a test asking for them: import time, class bodies and, in a
    harness module, autouse fixtures, hooks and functions the module calls itself."""
    called = {
        dotted(n.func)
        for s in tree.body
        if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        for n in ast.walk(s)
        if isinstance(n, ast.Call)
    }
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if harness and (stmt.name.startswith("pytest_") or stmt.name in called or _autouse(stmt)):
                yield from stmt.body
        elif isinstance(stmt, ast.ClassDef):
            yield from (s for s in stmt.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef))
        else:
            yield stmt


def _autouse(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(d, ast.Call) and any(k.arg == "autouse" and ast.unparse(k.value) == "True" for k in d.keywords)
        for d in func.decorator_list
    )


def _patched(node: ast.AST, imports: dict[str, str]) -> list[str]:
    """Dotted targets ``node`` replaces: ``calc.add = ...``, ``setattr(calc, "add", ...)``, ..."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = node.targets
    out = [_resolve(dotted(t), imports) for t in targets if isinstance(t, ast.Attribute)]
    if isinstance(node, ast.Call) and node.args and dotted(node.func).rsplit(".", 1)[-1] in _PATCHERS:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            out.append(first.value)  # monkeypatch.setattr("calc.add", ...), patch("calc.add")
        elif isinstance(first, ast.Name | ast.Attribute):
            name = dotted(first)
            attr = node.args[1] if len(node.args) > 1 else None
            suffix = f".{attr.value}" if isinstance(attr, ast.Constant) and isinstance(attr.value, str) else ""
            out.append(_resolve(name, imports) + suffix)
    return [t for t in out if t]


def _resolve(name: str, imports: dict[str, str]) -> str:
    """``calc.add`` where ``calc`` was imported; "" when the root is not an imported name."""
    root, _, rest = name.partition(".")
    if root not in imports:
        return ""
    return imports[root] + (f".{rest}" if rest else "")


def _why(target: str, is_project: Callable[[str], bool]) -> str:
    top = target.lstrip(".").split(".")[0]
    if top in FRAMEWORK:
        return "patches test framework internals"
    if target.startswith(".") or (top not in TEST_DIRS and top not in sys.stdlib_module_names and is_project(top)):
        return "patches code under test"
    return ""


def _writes_sys_modules(node: ast.AST) -> bool:
    if isinstance(node, ast.Assign | ast.Delete):
        return any(isinstance(t, ast.Subscript) and dotted(t.value) == "sys.modules" for t in node.targets)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = dotted(node.func.value)
        if owner == "sys.modules" and node.func.attr in {"update", "setdefault", "__setitem__", "pop"}:
            return True
        return node.func.attr in {"setitem", "delitem"} and bool(node.args) and dotted(node.args[0]) == "sys.modules"
    return False


def _project_probe(inputs: GateInputs) -> Callable[[str], bool]:
    """Whether a top-level module name is the repository's own code (start tree or change).

    Looked for at the repository root and beside each test directory the change touches (a
    monorepo's ``pkg/tests`` imports from ``pkg/``), each with the flat, ``src/`` and ``lib/``
    layouts: a few reads of the start tree per patched name, cached.
    """
    changed = {c.path for c in inputs.changes} | {c.old_path for c in inputs.changes if c.old_path}
    roots = {""}
    for path in changed:
        parts = path.split("/")
        cut = next((i for i, d in enumerate(parts[:-1]) if d in TEST_DIRS), None)
        if cut:
            roots.add("/".join(parts[:cut]))

    @cache
    def probe(top: str) -> bool:
        for root in sorted(roots)[:5]:
            for layout in ("", "src/", "lib/"):
                base = f"{root}/{layout}{top}" if root else f"{layout}{top}"
                for candidate in (f"{base}.py", f"{base}/__init__.py"):
                    if candidate in changed or inputs.new_text(candidate) is not None or inputs.base_text(candidate) is not None:
                        return True
        return False

    return probe
