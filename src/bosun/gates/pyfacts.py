"""What a Python test file holds, read with :mod:`ast` the way pytest and unittest would collect it.

:func:`read_file` turns source text into :class:`PyFile`: every function (tests and helpers), keyed by
qualified name ("TestX.test_y"), where a later definition of a name shadows the earlier one as it
does at import time, and for each function the facts the comparison in :mod:`.pytests` needs: its
assertions (and which of them cannot fail, are swallowed by a ``try``, or are never reached), skip
markers, the names it calls and a fingerprint of its body.

Collection follows the defaults: module-level functions named ``test*``; methods named ``test*`` of
classes named ``Test*`` without ``__init__`` (pytest) or of ``TestCase`` subclasses (unittest), nested
test classes included.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

SKIP_NAMES = frozenset(
    {"skip", "skipif", "xfail", "skipIf", "skipUnless", "expectedFailure", "importorskip", "skipTest", "SkipTest"}
)
# Probes for an optional binary or module: a skip conditioned on one of these is honest.
_PROBES = frozenset({"which", "find_spec", "find_library", "find_executable", "importorskip", "find_loader"})
_EQ_METHODS = frozenset(
    {
        "assertEqual", "assertEquals", "assertIs", "assertListEqual", "assertDictEqual", "assertTupleEqual",
        "assertSetEqual", "assertSequenceEqual", "assertCountEqual", "assertMultiLineEqual",
        "assertAlmostEqual", "assertAlmostEquals", "assertLessEqual", "assertGreaterEqual", "assert_equal",
        "assert_array_equal", "assert_allclose", "assert_almost_equal", "assert_frame_equal",
        "assert_series_equal",
    }
)
# Mock assertions depend on the mock, not on their (often literal) arguments.
_MOCK_ASSERT = re.compile(r"assert_(?:called|any_call|has_calls|not_called|awaited|any_await|has_awaits|not_awaited)")
_CHECK_CONTEXTS = frozenset({"raises", "warns", "deprecated_call", "assertRaises", "assertRaisesRegex",
                             "assertWarns", "assertWarnsRegex", "assertLogs", "assertNoLogs"})
_SWALLOWING = frozenset({"AssertionError", "Exception", "BaseException"})
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


@dataclass(frozen=True)
class Check:
    """One assertion: an ``assert``, an ``assert*``/``fail`` call, a ``pytest.raises`` block."""

    line: int
    text: str
    trivial: bool = False  # cannot fail whatever the code under test does
    swallowed: str = ""  # what swallows its failure ("except Exception"), or ""
    dead: bool = False  # after an unconditional return or skip
    expect: tuple[str, str] | None = None  # (what is checked, the literal it must equal)
    calls: frozenset[str] = frozenset()  # dotted names the assertion calls


@dataclass(frozen=True)
class Marker:
    """A skip/xfail marker or call on a test (or module)."""

    line: int
    text: str
    optional: bool = False  # conditioned on an optional binary or module being missing
    key: str = ""  # the marker without its reason, so rewording a reason is not a new marker


@dataclass
class Func:
    name: str
    line: int
    is_test: bool
    checks: list[Check] = field(default_factory=list)
    exit: tuple[int, str] | None = None  # unconditional return/skip before the first check
    exit_first: bool = False  # ... as the very first statement
    empty: bool = False  # the body is only ``pass``, ``...`` or a docstring
    markers: list[Marker] = field(default_factory=list)
    calls: frozenset[str] = frozenset()
    fingerprint: str = ""
    self_patched: list[tuple[int, str]] = field(default_factory=list)  # (line, target) patched, then checked
    cases: list[str] | None = None  # rows of a literal @pytest.mark.parametrize

    @property
    def live(self) -> list[Check]:
        """Checks that can fail a test: reached, not swallowed, not trivial."""
        return [c for c in self.checks if not (c.trivial or c.swallowed or c.dead)]


@dataclass
class PyFile:
    funcs: dict[str, Func] = field(default_factory=dict)
    shadowed: list[tuple[str, int, int]] = field(default_factory=list)  # (name, first line, later line)
    module_markers: list[Marker] = field(default_factory=list)
    load_tests: bool = False

    @property
    def tests(self) -> dict[str, Func]:
        return {k: f for k, f in self.funcs.items() if f.is_test}

    @property
    def has_optional_skips(self) -> bool:
        return any(m.optional for f in self.funcs.values() for m in f.markers) or any(
            m.optional for m in self.module_markers
        )


def read_file(text: str, collect: bool = True) -> PyFile | None:
    """The facts of one file, or None when it does not parse.

    ``collect`` False reads a harness module (conftest, helpers): pytest collects no tests from it,
    but its functions' assertions still count.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    reader = _Reader(tree)
    reader.read_scope(tree.body, prefix="", collect=collect, class_markers=[])
    reader.finish()
    return reader.out


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain (calls in the chain keep their name), else ""."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        else:
            return ".".join(reversed(parts))


def last_name(node: ast.AST) -> str:
    return dotted(node).rsplit(".", 1)[-1]


def literal(node: ast.AST) -> tuple[bool, object]:
    """(True, value) when ``node`` is a constant expression: literals and operators on them."""
    if isinstance(node, ast.Compare):
        ok, left = literal(node.left)
        if not ok:
            return False, None
        result = True
        for op, comp in zip(node.ops, node.comparators, strict=True):
            ok, right = literal(comp)
            if not ok:
                return False, None
            try:
                result = result and _compare(op, left, right)
            except Exception:  # a type error between literals: not a constant after all
                return False, None
            left = right
        return True, result
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        ok, value = literal(node.operand)
        return (True, not value) if ok else (False, None)
    if isinstance(node, ast.BoolOp):
        values = [literal(v) for v in node.values]
        if all(ok for ok, _ in values):
            vals = [v for _, v in values]
            return True, (all(vals) if isinstance(node.op, ast.And) else any(vals))
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


_COMPARES = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}  # fmt: skip


def _compare(op: ast.cmpop, a: object, b: object) -> bool:
    return bool(_COMPARES[type(op)](a, b))


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def _snippet(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


class _Reader:
    """One pass over a module: collection, then per-function facts."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.out = PyFile()
        self.testcase_classes: set[str] = set()
        self.optional_names = _optional_names(tree)
        self.bound = _bound_names(tree) - self.optional_names
        self.helpers_with_checks: set[str] = set()
        self._pending: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, bool, list[ast.expr]]] = []

    # --- collection --------------------------------------------------------------------------

    def read_scope(self, body: list[ast.stmt], prefix: str, collect: bool, class_markers: list[ast.expr]) -> None:
        seen: dict[str, int] = {}
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + stmt.name
                is_test = collect and stmt.name.startswith("test")
                self._shadow(seen, name, stmt.lineno, is_test)
                self._pending = [p for p in self._pending if p[0] != name]
                self._pending.append((name, stmt, is_test, class_markers))
                if not prefix and stmt.name == "load_tests":
                    self.out.load_tests = True
            elif isinstance(stmt, ast.ClassDef):
                self._read_class(stmt, prefix, collect, seen, class_markers)
            else:
                for target in _assigned_names(stmt):
                    name = prefix + target
                    if name in seen:  # `test_x = None` removes the test as surely as a redefinition
                        self._shadow(seen, name, stmt.lineno, True)
                        self._pending = [p for p in self._pending if p[0] != name]
                if not prefix:
                    self._module_markers(stmt)

    def _shadow(self, seen: dict[str, int], name: str, line: int, is_test: bool) -> None:
        if name in seen and is_test:
            self.out.shadowed.append((name, seen[name], line))
        seen[name] = line

    def _read_class(
        self, node: ast.ClassDef, prefix: str, collect: bool, seen: dict[str, int], outer: list[ast.expr]
    ) -> None:
        name = prefix + node.name
        bases = {last_name(b) for b in node.bases}
        is_case = any(b.endswith("TestCase") or b in self.testcase_classes for b in bases)
        if is_case:
            self.testcase_classes.add(node.name)
        has_init = any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in node.body)
        collected = collect and (is_case or (node.name.startswith("Test") and not has_init))
        if name in seen and collected:
            self.out.shadowed.append((name, seen[name], node.lineno))
            self._pending = [p for p in self._pending if not p[0].startswith(name + ".")]
        seen[name] = node.lineno
        self.read_scope(node.body, name + ".", collected, [*outer, *node.decorator_list])

    def _module_markers(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets):
            self.out.module_markers += self._markers_in(stmt.value, conditional=None)
            return
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
            return
        for node, cond in _walk_with_condition(stmt, None):
            if isinstance(node, ast.Call) and last_name(node.func) in {"skip", "importorskip", "SkipTest", "xfail"}:
                self.out.module_markers.append(self._marker(node, cond))

    # --- per-function facts ------------------------------------------------------------------

    def finish(self) -> None:
        # Helpers that assert make their callers check: two rounds cover a helper calling a helper.
        for _ in range(2):
            self.helpers_with_checks = {
                name.rsplit(".", 1)[-1] for name, node, _, _ in self._pending if any(self._checks(node.body))
            }
        for name, node, is_test, class_markers in self._pending:
            self.out.funcs[name] = self._func(name, node, is_test, class_markers)

    def _func(
        self, name: str, node: ast.FunctionDef | ast.AsyncFunctionDef, is_test: bool, class_markers: list[ast.expr]
    ) -> Func:
        body = _without_docstring(node.body)
        func = Func(name=name, line=node.lineno, is_test=is_test)
        func.empty = all(_is_filler(s) for s in body)
        stop = next((i for i, s in enumerate(body) if _is_exit(s)), len(body))
        reached = self._checks(body[:stop])
        func.checks = reached + [replace(c, dead=True) for c in self._checks(body[stop + 1 :])]
        if stop < len(body) and not reached:
            func.exit, func.exit_first = (body[stop].lineno, _snippet(body[stop])), stop == 0
        markers: list[Marker] = []
        for deco in [*class_markers, *node.decorator_list]:
            markers += self._markers_in(deco, conditional=None)
        for sub, cond in _walk_with_condition(ast.Module(body=body, type_ignores=[]), None):
            if isinstance(sub, ast.Call) and last_name(sub.func) in SKIP_NAMES:
                markers.append(self._marker(sub, cond))
            elif isinstance(sub, ast.Raise) and sub.exc is not None and last_name(sub.exc) in SKIP_NAMES:
                markers.append(self._marker(sub, cond))
        func.markers = markers
        func.calls = frozenset(last_name(n.func) for s in body for n in ast.walk(s) if isinstance(n, ast.Call))
        func.fingerprint = "|".join(ast.dump(n) for n in [*node.decorator_list, *body])
        func.cases = _cases(node.decorator_list)
        targets = _patch_targets([*node.decorator_list, *body])
        func.self_patched = [
            (c.line, t) for c in func.live for t in targets if any(_same_target(t, call) for call in c.calls)
        ]
        return func

    def _checks(self, body: list[ast.stmt]) -> list[Check]:
        found: list[Check] = []
        for stmt in body:
            self._collect(stmt, "", found)
        return found

    def _collect(self, node: ast.AST, swallowed: str, found: list[Check]) -> None:
        if isinstance(node, ast.Try | ast.TryStar):
            catcher = _swallower(node.handlers)
            for s in node.body:
                self._collect(s, catcher or swallowed, found)
            for part in (*node.handlers, *node.orelse, *node.finalbody):
                self._collect(part, swallowed, found)
            return
        if isinstance(node, ast.With | ast.AsyncWith):
            suppress = _suppressor(node.items)
            for item in node.items:
                context = self._context_check(item.context_expr, node)
                if context:
                    found.append(Check(node.lineno, context[0], context[1], swallowed))
            for s in node.body:
                self._collect(s, suppress or swallowed, found)
            return
        check = self._check(node)
        if check is not None:
            text, trivial, expect = check
            calls = frozenset(dotted(n.func) for n in ast.walk(node) if isinstance(n, ast.Call))
            found.append(Check(getattr(node, "lineno", 0), text, trivial, swallowed, False, expect, calls))
        for child in ast.iter_child_nodes(node):
            self._collect(child, swallowed, found)

    def _check(self, node: ast.AST) -> tuple[str, bool, tuple[str, str] | None] | None:
        if isinstance(node, ast.Assert):
            trivial = _assert_trivial(node.test) or _about_a_definition(node.test, self.bound)
            return _snippet(node), trivial, _expectation(node.test)
        if isinstance(node, ast.Raise) and node.exc is not None and last_name(node.exc) == "AssertionError":
            return _snippet(node), False, None
        if not isinstance(node, ast.Call):
            return None
        name = last_name(node.func)
        if name in _CHECK_CONTEXTS:  # as a context manager the With counts it; this is `raises(E, f, *args)`
            return (_snippet(node), False, None) if len(node.args) >= 2 else None
        if name.startswith("assert") or name == "fail":
            return _snippet(node), _call_trivial(name, node), _call_expectation(name, node)
        if name in self.helpers_with_checks and isinstance(node.func, ast.Name | ast.Attribute):
            return _snippet(node), False, None
        return None

    def _context_check(self, expr: ast.expr, with_node: ast.With | ast.AsyncWith) -> tuple[str, bool] | None:
        if not (isinstance(expr, ast.Call) and last_name(expr.func) in _CHECK_CONTEXTS):
            return None
        # `with pytest.raises(E): raise E` checks nothing but itself.
        body = _without_docstring(with_node.body)
        trivial = (
            len(body) == 1
            and isinstance(body[0], ast.Raise)
            and body[0].exc is not None
            and bool(expr.args)
            and last_name(body[0].exc) == last_name(expr.args[0])
        )
        return _snippet(expr), trivial

    # --- markers -------------------------------------------------------------------------------

    def _markers_in(self, node: ast.AST, conditional: ast.expr | None) -> list[Marker]:
        funcs = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
        found: list[Marker] = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and last_name(sub.func) in SKIP_NAMES:
                found.append(self._marker(sub, conditional))
            elif isinstance(sub, ast.Attribute | ast.Name) and id(sub) not in funcs and last_name(sub) in SKIP_NAMES:
                found.append(self._marker(sub, conditional))
        return found

    def _marker(self, node: ast.AST, cond: ast.expr | None) -> Marker:
        name = last_name(node.func) if isinstance(node, ast.Call) else last_name(node)
        optional = False
        if name == "importorskip":
            optional = True
        elif isinstance(node, ast.Call) and name in {"skipif", "skipIf", "skipUnless"}:
            test = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "condition"), None)
            optional = test is not None and self._probes_optional(test)
        elif cond is not None:
            optional = self._probes_optional(cond)
        return Marker(getattr(node, "lineno", 0), _snippet(node), optional, _marker_key(node))

    def _probes_optional(self, expr: ast.AST) -> bool:
        for sub in ast.walk(expr):
            if isinstance(sub, ast.Call) and last_name(sub.func) in _PROBES:
                return True
            if isinstance(sub, ast.Name) and sub.id in self.optional_names:
                return True
        return False


# --- helpers on nodes ----------------------------------------------------------------------------


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            return body[1:]
    return body


def _is_filler(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Pass) or (
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is ...
    )


def _is_exit(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Return):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return last_name(stmt.value.func) in {"skip", "skipTest", "xfail", "exit"}
    return isinstance(stmt, ast.Raise) and stmt.exc is not None and last_name(stmt.exc) in SKIP_NAMES


def _assigned_names(stmt: ast.stmt) -> Iterator[str]:
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Delete):
        targets = stmt.targets
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name):
                yield n.id


def _handler_names(handler: ast.ExceptHandler) -> set[str]:
    if handler.type is None:
        return {"BaseException"}
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {last_name(t) for t in types}


def _swallower(handlers: list[ast.ExceptHandler]) -> str:
    """What in these handlers swallows an assertion's failure: "except Exception", or ""."""
    for h in handlers:
        caught = _handler_names(h) & _SWALLOWING
        reraises = any(isinstance(n, ast.Raise) for s in h.body for n in ast.walk(s))
        fails = any(isinstance(n, ast.Call) and last_name(n.func) in {"fail", "skip"} for s in h.body for n in ast.walk(s))
        if caught and not reraises and not fails:
            return "bare except" if h.type is None else f"except {sorted(caught)[0]}"
    return ""


def _suppressor(items: list[ast.withitem]) -> str:
    for item in items:
        expr = item.context_expr
        if isinstance(expr, ast.Call) and last_name(expr.func) == "suppress":
            caught = {last_name(a) for a in expr.args} & _SWALLOWING
            if caught:
                return f"suppress({sorted(caught)[0]})"
    return ""


def _walk_with_condition(node: ast.AST, cond: ast.expr | None) -> Iterator[tuple[ast.AST, ast.expr | None]]:
    """Every node below ``node`` with the nearest enclosing ``if`` test or ``except ImportError`` guard."""
    yield node, cond
    if isinstance(node, ast.If):
        yield from _walk_with_condition(node.test, cond)
        for s in [*node.body, *node.orelse]:
            yield from _walk_with_condition(s, node.test)
        return
    if isinstance(node, ast.Try | ast.TryStar):
        for part in [*node.body, *node.orelse, *node.finalbody]:
            yield from _walk_with_condition(part, cond)
        for h in node.handlers:
            guard = _IMPORT_GUARD if _handler_names(h) & _IMPORT_ERRORS else cond
            for s in h.body:
                yield from _walk_with_condition(s, guard)
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_with_condition(child, cond)


# A skip under `except ImportError:` is conditioned on a missing module.
_IMPORT_GUARD: ast.expr = ast.Call(func=ast.Name(id="find_spec"), args=[], keywords=[])


def _optional_names(tree: ast.Module) -> set[str]:
    """Module-level names that say whether an optional module or binary is there."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Try) and any(_handler_names(h) & (_IMPORT_ERRORS | {"Exception"}) for h in stmt.handlers):
            for s in [*stmt.body, *(b for h in stmt.handlers for b in h.body)]:
                names |= set(_assigned_names(s))
                if isinstance(s, ast.Import | ast.ImportFrom):
                    names |= {(a.asname or a.name).split(".")[0] for a in s.names}
        elif isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            if any(isinstance(n, ast.Call) and last_name(n.func) in _PROBES for n in ast.walk(stmt.value)):
                names |= set(_assigned_names(stmt))
    return names


def _patch_targets(nodes: list[ast.AST]) -> set[str]:
    """Dotted names a test replaces: ``monkeypatch.setattr(mod, "f", ...)``, ``patch("pkg.mod.f")``,
    ``mod.f = ...``."""
    targets: set[str] = set()
    for n in (sub for node in nodes for sub in ast.walk(node)):
        if isinstance(n, ast.Assign):
            targets |= {dotted(t) for t in n.targets if isinstance(t, ast.Attribute)}
        if not (isinstance(n, ast.Call) and n.args and last_name(n.func) in {"setattr", "patch", "object"}):
            continue
        first, second = n.args[0], n.args[1] if len(n.args) > 1 else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            targets.add(first.value)
        elif isinstance(second, ast.Constant) and isinstance(second.value, str) and dotted(first):
            targets.add(f"{dotted(first)}.{second.value}")
    return targets - {""}


def _same_target(target: str, call: str) -> bool:
    return "." in call and (target == call or target.endswith("." + call))


def _bound_names(tree: ast.Module) -> set[str]:
    """Names bound at module level to an import, a function or a class: never None, always true."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"}
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
    return names


def _about_a_definition(test: ast.expr, bound: set[str]) -> bool:
    """``assert URL``, ``assert URL is not None``, ``assert callable(add)``: true whatever the code does."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot):
        if isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
            test = test.left
    elif isinstance(test, ast.Call) and dotted(test.func) == "callable" and len(test.args) == 1:
        test = test.args[0]
    return isinstance(test, ast.Name) and test.id in bound


def _assert_trivial(test: ast.expr) -> bool:
    ok, value = literal(test)
    if ok:
        return bool(value)  # `assert False` always fails: deliberate, not a weakening
    if isinstance(test, ast.Tuple) and test.elts:
        return True  # `assert (x, "message")`: a non-empty tuple is always true
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(_truthy_literal(v) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        return isinstance(test.ops[0], ast.Eq | ast.Is | ast.LtE | ast.GtE) and _same(test.left, test.comparators[0])
    return False


def _marker_key(node: ast.AST) -> str:
    if isinstance(node, ast.Raise) and node.exc is not None:
        node = node.exc
    if not isinstance(node, ast.Call):
        return ast.unparse(node)
    args = [a for a in node.args if not (isinstance(a, ast.Constant) and isinstance(a.value, str))]
    keywords = [k for k in node.keywords if k.arg not in {"reason", "msg"}]
    return ast.unparse(ast.Call(func=node.func, args=args, keywords=keywords))


def _truthy_literal(node: ast.expr) -> bool:
    ok, value = literal(node)
    return ok and bool(value)


def _call_trivial(name: str, call: ast.Call) -> bool:
    if _MOCK_ASSERT.match(name) or name == "fail" or not call.args:
        return False
    args = call.args
    if name in _EQ_METHODS and len(args) >= 2 and _same(args[0], args[1]):
        return True
    values = [literal(a) for a in args]
    if not all(ok for ok, _ in values):
        return False
    vals = [v for _, v in values]
    # An all-literal assertion is decided before the code under test runs. One that always fails is
    # deliberate (a marker of unreachable code), so only the always-passing ones count as trivial.
    if name in {"assertTrue", "assert_"}:
        return bool(vals[0])
    if name == "assertFalse":
        return not vals[0]
    if name == "assertIsNone":
        return vals[0] is None
    if name == "assertIsNotNone":
        return vals[0] is not None
    if name in _EQ_METHODS and len(vals) >= 2:
        return bool(vals[0] == vals[1])
    return True


def _expectation(test: ast.expr) -> tuple[str, str] | None:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right = test.left, test.comparators[0]
    lit_left, lit_right = literal(left)[0], literal(right)[0]
    if lit_left == lit_right:
        return None
    subject, expected = (right, left) if lit_left else (left, right)
    return f"{type(test.ops[0]).__name__} {ast.unparse(subject)}", ast.unparse(expected)


def _call_expectation(name: str, call: ast.Call) -> tuple[str, str] | None:
    if name not in _EQ_METHODS or len(call.args) < 2:
        return None
    a, b = call.args[0], call.args[1]
    lit_a, lit_b = literal(a)[0], literal(b)[0]
    if lit_a == lit_b:
        return None
    subject, expected = (b, a) if lit_a else (a, b)
    return f"{name} {ast.unparse(subject)}", ast.unparse(expected)


def _cases(decorators: list[ast.expr]) -> list[str] | None:
    """The rows of a ``@pytest.mark.parametrize(names, [rows])`` whose rows are written out."""
    rows: list[str] = []
    found = False
    for deco in decorators:
        if isinstance(deco, ast.Call) and last_name(deco.func) == "parametrize":
            values = deco.args[1] if len(deco.args) > 1 else next(
                (k.value for k in deco.keywords if k.arg == "argvalues"), None
            )
            if isinstance(values, ast.List | ast.Tuple):
                found = True
                rows += [ast.unparse(e) for e in values.elts]
    return rows if found else None
