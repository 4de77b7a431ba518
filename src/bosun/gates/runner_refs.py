"""RUNNER_REFERENCED: code under test that refers to the test runner grading it.

Only the behaviour of the code under test may change. Code that is not a test and not the test
harness has no reason to know that a test runner exists, so the gate reads every Python file the
change adds or edits outside the tests and refuses what it newly does to reach the runner:

* names the runner's internals: imports, or a string naming, ``_pytest``, ``pluggy`` and the other
  modules a runner is made of (string constants are folded first, so ``"_py" + "test"`` is
  ``"_pytest"``);
* decides an outcome: calls ``pytest.skip``/``xfail``/``fail``/``exit``/``importorskip`` or raises
  ``unittest.SkipTest``, the runner's own exceptions;
* looks the runner, or a test module, up in ``sys.modules`` (``"pytest" in sys.modules``,
  ``sys.modules.get("tests.test_calc")``, ``getattr(sys, "modules")``);
* defines a pytest hook that changes what runs or what a result says;
* replaces a built-in (``builtins.X = ...``);
* ends the process when imported (``os._exit``, ``sys.exit``, ``os.kill``, ``raise SystemExit``
  at module level, outside ``if __name__ == "__main__"``).

What cannot be read statically is a reason for review (:data:`UNCLEAR`), never a refusal: a module
imported by a name built at run time, code built from a string, a walk over every loaded module, a
plain ``import pytest`` (a
package's own test helpers do that), another ``pytest_*`` hook. The runtime guard
(``gates/runner_tamper.py``) sees what such code then does. Patterns the start tree already had
are the project's own and are not judged.
"""

from __future__ import annotations

import ast
import builtins
from collections import Counter
from dataclasses import dataclass

from bosun.core.changes import GateResult
from bosun.gates.context import GateInputs, listing
from bosun.gates.pynodes import dotted, import_names
from bosun.gates.testharness import OUTCOME_HOOKS
from bosun.gates.testpaths import in_test_dir, is_harness, is_python, is_test_file

RUNNER_REFERENCED = "RUNNER_REFERENCED"
UNCLEAR = "RUNNER_REFERENCE_UNCLEAR"

# Modules a test runner is made of: nothing but a runner (or a plugin of one) imports them.
INTERNALS = frozenset({"_pytest", "pluggy", "py", "xdist", "_hypothesis_pytestplugin", "nose", "nose2",
                       "pytest_cov", "pytest_timeout", "pytest_randomly", "bosun_runner_guard", "sitecustomize"})
OUTCOMES = frozenset({"skip", "xfail", "fail", "exit", "importorskip", "SkipTest", "skipTest", "Skipped",
                      "Failed", "Exit", "XFailed", "OutcomeException"})
_IMPORTERS = frozenset({"import_module", "__import__", "resolve_name", "import_string", "find_spec", "run_module"})
_EXITS = frozenset({"os._exit", "sys.exit", "exit", "quit", "posix._exit"})
# Ways to end the process that no status argument makes harmless: named at import time at all, they are
# refused (``atexit.register(os._exit, 0)`` hands one over without calling it).
_SIGNALS = frozenset({"os.kill", "os.killpg", "os.abort", "signal.raise_signal", "signal.pthread_kill", "os._exit",
                      "posix._exit"})
_EXIT_EXCEPTIONS = frozenset({"SystemExit", "KeyboardInterrupt"})
_RUN_CODE = frozenset({"exec", "eval", "compile"})
_BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass(frozen=True)
class Ref:
    line: int
    what: str  # in words
    hard: bool  # a refusal; else a reason for review


def check_runner_refs(inputs: GateInputs) -> GateResult:
    refused: list[str] = []
    unclear: list[str] = []
    for change in inputs.changes:
        path = change.path
        if change.status[:1] == "D" or not is_python(path) or _is_test_code(path):
            continue
        old = change.old_path if change.status[:1] == "R" and change.old_path else path
        before = Counter(r.what for r in references(inputs.base_text(old) or "")) if change.status[:1] != "A" else Counter()
        for ref in references(inputs.new_text(path) or ""):
            if before[ref.what] > 0:
                before[ref.what] -= 1
                continue
            (refused if ref.hard else unclear).append(f"{path}:{ref.line} {ref.what}")
    if refused:
        return GateResult(RUNNER_REFERENCED, False, f"code under test refers to the test runner that grades it: "
                          f"{listing(refused)}; only the tests and their harness may reach the runner")
    if unclear:
        return GateResult(RUNNER_REFERENCED, True, f"code under test may reach the test runner: {listing(unclear)}",
                          review=[{"code": UNCLEAR, "sentence": "code outside the tests may reach the test runner "
                                   f"({listing(unclear, 3)}); bosun cannot tell from the source what it loads, so "
                                   "read it"}])
    return GateResult(RUNNER_REFERENCED, True, "no code under test refers to the test runner")


def _is_test_code(path: str) -> bool:
    return is_test_file(path) or in_test_dir(path) or is_harness(path)


def references(text: str) -> list[Ref]:
    """Everything ``text`` does to reach the runner, in source order, one finding per line and kind."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    imports = import_names(tree)
    found: list[Ref] = []
    for node in ast.walk(tree):
        found += [r for r in _node_refs(node, imports) if r is not None]
    found += _import_time_exits(tree.body, imports)
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name.startswith("pytest_"):
            found.append(Ref(stmt.lineno, f"defines the pytest hook {stmt.name}", stmt.name in OUTCOME_HOOKS))
    seen: set[tuple[int, bool]] = set()
    out = []
    for ref in sorted(found, key=lambda r: (r.line, not r.hard)):
        if (ref.line, ref.hard) not in seen and (ref.line, True) not in seen:
            seen.add((ref.line, ref.hard))
            out.append(ref)
    return out


def _resolve(name: str, imports: dict[str, str]) -> str:
    root, _, rest = name.partition(".")
    base = imports.get(root, root)
    return f"{base}.{rest}" if rest else base


def _runner_name(resolved: str) -> bool:
    return resolved.split(".")[0] in INTERNALS | {"pytest", "unittest"}


def _node_refs(node: ast.AST, imports: dict[str, str]) -> list[Ref | None]:
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Import):
        return [_module_ref(a.name, line) for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return []
        if node.module == "unittest":  # `from unittest import mock` is unittest.mock
            return [_module_ref(f"unittest.{a.name}", line) for a in node.names]
        return [_module_ref(node.module or "", line)]
    if isinstance(node, ast.Constant | ast.BinOp | ast.JoinedStr):
        text = fold(node)
        if text and _names_internals(text):
            return [Ref(line, f"names the test runner's internals ({text[:60]!r})", True)]
        return []
    if isinstance(node, ast.Call):
        return _call_refs(node, imports)
    if isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
        return [_lookup(node.left, line) for c in node.comparators if _is_sys_modules(c, imports)]
    if isinstance(node, ast.Subscript) and _is_sys_modules(node.value, imports):
        return [_lookup(node.slice, line)]
    if isinstance(node, ast.For | ast.comprehension) and \
            _walks_sys_modules(node.iter, imports):
        return [Ref(line or getattr(node.iter, "lineno", 0), "walks every loaded module (sys.modules)", False)]
    if isinstance(node, ast.Raise) and node.exc is not None:
        name = _resolve(dotted(node.exc), imports)
        if _runner_name(name) and name.rsplit(".", 1)[-1] in OUTCOMES:
            return [Ref(line, f"raises the test runner's {name.rsplit('.', 1)[-1]}", True)]
    if isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        return [_builtins_write(t, imports, line) for t in targets]
    return []


def _module_ref(module: str, line: int) -> Ref | None:
    top = module.split(".")[0]
    if top in INTERNALS:
        return Ref(line, f"imports the test runner's internals ({module})", True)
    if top == "pytest":
        return Ref(line, "imports pytest", False)
    if top == "unittest" and not module.startswith("unittest.mock"):
        return Ref(line, f"imports {module}", False)
    return None


def _call_refs(node: ast.Call, imports: dict[str, str]) -> list[Ref | None]:
    line = node.lineno
    name = _resolve(dotted(node.func), imports)
    last = name.rsplit(".", 1)[-1]
    first = node.args[0] if node.args else None
    if _runner_name(name) and last in OUTCOMES:
        return [Ref(line, f"calls {name}, an outcome only a test may decide", True)]
    if last in _IMPORTERS and first is not None:
        text = fold(first)
        if text is not None:
            return [_module_ref(text, line)]
        return [Ref(line, f"imports a module named at run time ({last})", False)] if last != "find_spec" else []
    if last == "getattr" and len(node.args) >= 2 and _is_sys(node.args[0], imports):
        attr = fold(node.args[1])
        if attr == "modules":
            return [Ref(line, "reads sys.modules through getattr", True)]
        return [Ref(line, "reads an attribute of sys by a computed name", False)] if attr is None else []
    if last in ("get", "pop", "setdefault", "__getitem__", "__contains__") and isinstance(node.func, ast.Attribute) \
            and _is_sys_modules(node.func.value, imports) and first is not None:
        return [_lookup(first, line)]
    if name in _RUN_CODE and first is not None and fold(first) is None:
        return [Ref(line, f"runs code built at run time ({name})", False)]
    if last == "setattr" and node.args and dotted(node.args[0]) in ("builtins", "__builtins__"):
        return [_builtins_ref(fold(node.args[1]) if len(node.args) > 1 else None, line)]
    return []


def _walks_sys_modules(node: ast.AST, imports: dict[str, str]) -> bool:
    """``sys.modules``, ``sys.modules.values()``, ``list(sys.modules.items())``: every module, the tests' too."""
    while isinstance(node, ast.Call):
        node = node.func.value if isinstance(node.func, ast.Attribute) else (node.args[0] if node.args else node.func)
    return _is_sys_modules(node, imports)


def _lookup(key: ast.AST, line: int) -> Ref | None:
    text = fold(key)
    if text is not None and _runner_name(text):
        return Ref(line, f"looks the test runner up in sys.modules ({text!r})", True)
    if text is not None and _test_module_name(text):
        return Ref(line, f"looks a test module up in sys.modules ({text!r})", True)
    if text is not None:
        return None
    if dotted(key) in ("__name__", "__package__", "__spec__.name"):
        return None
    return Ref(line, "looks up sys.modules by a name computed at run time", False)


def _builtins_write(target: ast.AST, imports: dict[str, str], line: int) -> Ref | None:
    if isinstance(target, ast.Attribute) and _resolve(dotted(target.value), imports) in ("builtins", "__builtins__"):
        return _builtins_ref(target.attr, line)
    if isinstance(target, ast.Subscript) and dotted(target.value) == "__builtins__":
        return _builtins_ref(fold(target.slice), line)
    return None


def _builtins_ref(name: str | None, line: int) -> Ref:
    if name is None or name in _BUILTIN_NAMES:
        return Ref(line, f"replaces the built-in {name or '(computed name)'}", True)
    return Ref(line, f"adds the built-in {name}", False)


def _import_time_exits(body: list[ast.stmt], imports: dict[str, str]) -> list[Ref]:
    """Exits that can succeed in statements that run when the module is imported (not in functions,
    not under ``if __name__ == "__main__"``). ``sys.exit("message")`` or ``sys.exit(2)`` cannot make a
    command pass, and scripts do that when a dependency is missing."""
    found: list[Ref] = []
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test) and "__name__" in ast.unparse(stmt.test):
            found += _import_time_exits(stmt.orelse, imports)
            continue
        for node in _outside_functions(stmt):
            if isinstance(node, ast.Attribute | ast.Name) and _resolve(dotted(node), imports) in _SIGNALS:
                found.append(Ref(node.lineno, f"ends the process when imported ({dotted(node)})", True))
            elif isinstance(node, ast.Call) and _resolve(dotted(node.func), imports) in _EXITS and _succeeds(node.args):
                found.append(Ref(node.lineno, f"ends the process when imported ({dotted(node.func)})", True))
            elif isinstance(node, ast.Raise) and node.exc is not None and dotted(node.exc) in _EXIT_EXCEPTIONS:
                args = node.exc.args if isinstance(node.exc, ast.Call) else []
                if _succeeds(args):
                    found.append(Ref(node.lineno, f"ends the process when imported (raise {dotted(node.exc)})", True))
    return found


def _succeeds(args: list[ast.expr]) -> bool:
    """An exit with these arguments may report success: no status, 0, None or one computed at run time."""
    if not args:
        return True
    first = args[0]
    if isinstance(first, ast.Constant):
        return first.value in (0, None, False) and not isinstance(first.value, str)
    return not isinstance(first, ast.JoinedStr)


def _outside_functions(node: ast.AST) -> list[ast.AST]:
    out = [node]
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            out += _outside_functions(child)
    return out


def _is_sys(node: ast.AST, imports: dict[str, str]) -> bool:
    if isinstance(node, ast.Name):
        return imports.get(node.id, node.id) == "sys"
    return isinstance(node, ast.Call) and dotted(node.func).rsplit(".", 1)[-1] in _IMPORTERS and \
        bool(node.args) and fold(node.args[0]) == "sys"


def _is_sys_modules(node: ast.AST, imports: dict[str, str]) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "modules" and _is_sys(node.value, imports)
    if isinstance(node, ast.Name):
        return imports.get(node.id) == "sys.modules"
    if isinstance(node, ast.Call) and dotted(node.func) == "getattr" and len(node.args) >= 2:
        return _is_sys(node.args[0], imports) and fold(node.args[1]) == "modules"
    if isinstance(node, ast.Subscript) and fold(node.slice) == "modules":
        inner = node.value
        return (isinstance(inner, ast.Call) and dotted(inner.func) == "vars" and bool(inner.args)
                and _is_sys(inner.args[0], imports)) or \
            (isinstance(inner, ast.Attribute) and inner.attr == "__dict__" and _is_sys(inner.value, imports))
    return False


def _test_module_name(name: str) -> bool:
    """A module name the test runner gives test code (``test_calc``, ``tests.test_calc``, ``conftest``)."""
    parts = name.split(".")
    return all(p.isidentifier() for p in parts) and any(
        p.startswith("test_") or p.endswith("_test") or p in ("tests", "test", "conftest", "testing") for p in parts)


def _names_internals(text: str) -> bool:
    parts = text.replace(":", ".").split(".")
    return parts[0] in INTERNALS - {"py"} and all(p.isidentifier() for p in parts)


def fold(node: ast.AST | None) -> str | None:
    """The string a constant expression evaluates to (``"_py" + "test"``, ``f"{'_py'}test"``,
    ``"".join(["_py", "test"])``, ``"%s" % "x"``), else None."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = fold(node.left), fold(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = fold(node.left)
        args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        values = [fold(a) for a in args]
        if left is None or any(v is None for v in values):
            return None
        try:
            return left % tuple(values)
        except (TypeError, ValueError):
            return None
    if isinstance(node, ast.JoinedStr):
        parts = [fold(v.value) if isinstance(v, ast.FormattedValue) else fold(v) for v in node.values]
        return "".join(p for p in parts if p is not None) if all(p is not None for p in parts) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        sep = fold(node.func.value)
        items = node.args[0] if len(node.args) == 1 else None
        if sep is not None and isinstance(items, ast.List | ast.Tuple):
            values = [fold(e) for e in items.elts]
            return sep.join(v for v in values if v is not None) if all(v is not None for v in values) else None
    return None
