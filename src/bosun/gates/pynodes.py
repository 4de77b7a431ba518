"""What single Python AST nodes mean to a test: names, constants, assertions that cannot fail,
handlers that swallow failures, skip conditions, patch targets. Used by :mod:`.pyfacts`."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

SKIP_NAMES = frozenset(
    {"skip", "skipif", "xfail", "skipIf", "skipUnless", "expectedFailure", "importorskip", "skipTest", "SkipTest"}
)
# Probes for an optional binary or module: a skip conditioned on one of these is honest.
PROBES = frozenset({"which", "find_spec", "find_library", "find_executable", "importorskip", "find_loader"})
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
CHECK_CONTEXTS = frozenset({"raises", "warns", "deprecated_call", "assertRaises", "assertRaisesRegex",
                             "assertWarns", "assertWarnsRegex", "assertLogs", "assertNoLogs"})
_SWALLOWING = frozenset({"AssertionError", "Exception", "BaseException"})
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


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


def referenced_names(node: ast.AST) -> set[str]:
    """Every name and attribute ``node`` refers to (``calc.add(x)``: ``calc``, ``add``, ``x``)."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


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
            except Exception:  # noqa: BLE001 - a type error between literals: not a constant after all
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


def same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def snippet(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            return body[1:]
    return body


def is_filler(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Pass) or (
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is ...
    )


def is_exit(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Return):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return last_name(stmt.value.func) in {"skip", "skipTest", "xfail", "exit"}
    return isinstance(stmt, ast.Raise) and stmt.exc is not None and last_name(stmt.exc) in SKIP_NAMES


def assigned_names(stmt: ast.stmt) -> Iterator[str]:
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


def handler_names(handler: ast.ExceptHandler) -> set[str]:
    if handler.type is None:
        return {"BaseException"}
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {last_name(t) for t in types}


def swallower(handlers: list[ast.ExceptHandler]) -> str:
    """What in these handlers swallows an assertion's failure: "except Exception", or ""."""
    for h in handlers:
        caught = handler_names(h) & _SWALLOWING
        reraises = any(isinstance(n, ast.Raise) for s in h.body for n in ast.walk(s))
        fails = any(isinstance(n, ast.Call) and last_name(n.func) in {"fail", "skip"} for s in h.body for n in ast.walk(s))
        if caught and not reraises and not fails:
            return "bare except" if h.type is None else f"except {sorted(caught)[0]}"
    return ""


def suppressor(items: list[ast.withitem]) -> str:
    for item in items:
        expr = item.context_expr
        if isinstance(expr, ast.Call) and last_name(expr.func) == "suppress":
            caught = {last_name(a) for a in expr.args} & _SWALLOWING
            if caught:
                return f"suppress({sorted(caught)[0]})"
    return ""


def walk_with_condition(node: ast.AST, cond: ast.expr | None) -> Iterator[tuple[ast.AST, ast.expr | None]]:
    """Every node below ``node`` with the nearest enclosing ``if`` test or ``except ImportError`` guard."""
    yield node, cond
    if isinstance(node, ast.If):
        yield from walk_with_condition(node.test, cond)
        for s in [*node.body, *node.orelse]:
            yield from walk_with_condition(s, node.test)
        return
    if isinstance(node, ast.Try | ast.TryStar):
        for part in [*node.body, *node.orelse, *node.finalbody]:
            yield from walk_with_condition(part, cond)
        for h in node.handlers:
            guard = _IMPORT_GUARD if handler_names(h) & _IMPORT_ERRORS else cond
            for s in h.body:
                yield from walk_with_condition(s, guard)
        return
    for child in ast.iter_child_nodes(node):
        yield from walk_with_condition(child, cond)


def skip_guards(body: list[ast.stmt]) -> dict[int, str]:
    """The guard of each skip call in ``body``, by the call's node id: the nearest enclosing ``if`` test
    or ``except`` clause, as text (``except FileNotFoundError``, ``if sys.platform == 'win32'``).
    Unguarded skips are left out: a skip that always runs guards nothing."""
    guards: dict[int, str] = {}

    def walk(node: ast.AST, guard: str) -> None:
        if isinstance(node, ast.Call | ast.Raise) and guard:
            guards[id(node)] = guard
        if isinstance(node, ast.If):
            walk(node.test, guard)
            for s in [*node.body, *node.orelse]:
                walk(s, f"if {ast.unparse(node.test)}")
            return
        if isinstance(node, ast.Try | ast.TryStar):
            for part in [*node.body, *node.orelse, *node.finalbody]:
                walk(part, guard)
            for h in node.handlers:
                for s in h.body:
                    walk(s, "except " + ", ".join(sorted(handler_names(h))))
            return
        for child in ast.iter_child_nodes(node):
            walk(child, guard)

    for stmt in body:
        walk(stmt, "")
    return guards


# A skip under `except ImportError:` is conditioned on a missing module.
_IMPORT_GUARD: ast.expr = ast.Call(func=ast.Name(id="find_spec"), args=[], keywords=[])


def optional_names(tree: ast.Module) -> set[str]:
    """Module-level names that say whether an optional module or binary is there."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Try) and any(handler_names(h) & (_IMPORT_ERRORS | {"Exception"}) for h in stmt.handlers):
            for s in [*stmt.body, *(b for h in stmt.handlers for b in h.body)]:
                names |= set(assigned_names(s))
                if isinstance(s, ast.Import | ast.ImportFrom):
                    names |= {(a.asname or a.name).split(".")[0] for a in s.names}
        elif isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            if any(isinstance(n, ast.Call) and last_name(n.func) in PROBES for n in ast.walk(stmt.value)):
                names |= set(assigned_names(stmt))
    return names


def patch_targets(nodes: list[ast.AST]) -> set[str]:
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


def same_target(target: str, call: str) -> bool:
    return "." in call and (target == call or target.endswith("." + call))


def bound_names(tree: ast.Module) -> set[str]:
    """Names bound at module level to an import, a function or a class: never None, always true."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"}
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
    return names


def about_a_definition(test: ast.expr, bound: set[str]) -> bool:
    """``assert URL``, ``assert URL is not None``, ``assert callable(add)``: true whatever the code does."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot):
        if isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
            test = test.left
    elif isinstance(test, ast.Call) and dotted(test.func) == "callable" and len(test.args) == 1:
        test = test.args[0]
    return isinstance(test, ast.Name) and test.id in bound


def assert_trivial(test: ast.expr) -> bool:
    ok, value = literal(test)
    if ok:
        return bool(value)  # `assert False` always fails: deliberate, not a weakening
    if isinstance(test, ast.Tuple) and test.elts:
        return True  # `assert (x, "message")`: a non-empty tuple is always true
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(_truthy_literal(v) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        return isinstance(test.ops[0], ast.Eq | ast.Is | ast.LtE | ast.GtE) and same(test.left, test.comparators[0])
    return False


def marker_key(node: ast.AST) -> str:
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


def call_trivial(name: str, call: ast.Call) -> bool:
    if _MOCK_ASSERT.match(name) or name == "fail" or not call.args:
        return False
    args = call.args
    if name in {"assertTrue", "assert_"} and assert_trivial(args[0]):
        return True  # `assertTrue(True or add(2, 3) == 5)`: true before the code under test runs
    if name in _EQ_METHODS and len(args) >= 2 and same(args[0], args[1]):
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


def expectation(test: ast.expr) -> tuple[str, str] | None:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right = test.left, test.comparators[0]
    lit_left, lit_right = literal(left)[0], literal(right)[0]
    if lit_left == lit_right:
        return None
    subject, expected = (right, left) if lit_left else (left, right)
    return f"{type(test.ops[0]).__name__} {ast.unparse(subject)}", ast.unparse(expected)


def call_expectation(name: str, call: ast.Call) -> tuple[str, str] | None:
    if name not in _EQ_METHODS or len(call.args) < 2:
        return None
    a, b = call.args[0], call.args[1]
    lit_a, lit_b = literal(a)[0], literal(b)[0]
    if lit_a == lit_b:
        return None
    subject, expected = (b, a) if lit_a else (a, b)
    return f"{name} {ast.unparse(subject)}", ast.unparse(expected)


def cases_of(decorators: list[ast.expr]) -> list[str] | None:
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


def import_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted module (or module.attr) it was imported as; relative ones start with "."."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for a in node.names:
                names[a.asname or a.name] = f"{base}.{a.name}" if base and not base.endswith(".") else base + a.name
    return names
