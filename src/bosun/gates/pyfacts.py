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
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

from bosun.gates.pynodes import (
    CHECK_CONTEXTS,
    PROBES,
    SKIP_NAMES,
    about_a_definition,
    assert_trivial,
    assigned_names,
    bound_names,
    call_expectation,
    call_trivial,
    cases_of,
    dotted,
    expectation,
    is_exit,
    is_filler,
    last_name,
    marker_key,
    optional_names,
    patch_targets,
    same_target,
    skip_guards,
    snippet,
    suppressor,
    swallower,
    walk_with_condition,
    without_docstring,
)


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
    guard: str = ""  # a skip call's condition and the call without its reason ("except OSError: pytest.skip()")


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
    literals: frozenset[str] = frozenset()  # the constants its body and its parametrize rows hold

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

    @cached_property
    def tests(self) -> dict[str, Func]:
        """The collected tests (read only once the file has been read whole)."""
        return {k: f for k, f in self.funcs.items() if f.is_test}

    @property
    def guards(self) -> set[str]:
        """The skip guards the file's functions have (see ``Marker.guard``)."""
        return {m.guard for f in self.funcs.values() for m in f.markers if m.guard}

    @property
    def has_optional_skips(self) -> bool:
        return any(m.optional for f in self.funcs.values() for m in f.markers) or any(
            m.optional for m in self.module_markers
        )


@lru_cache(maxsize=64)
def read_file(text: str, collect: bool = True) -> PyFile | None:
    """The facts of one file, or None when it does not parse.

    ``collect`` False reads a harness module (conftest, helpers): pytest collects no tests from it,
    but its functions' assertions still count. Cached: the gate reads each text more than once.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    reader = _Reader(tree)
    reader.read_scope(tree.body, prefix="", collect=collect, class_markers=[])
    reader.finish()
    return reader.out

class _Reader:
    """One pass over a module: collection, then per-function facts."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.out = PyFile()
        self.testcase_classes: set[str] = set()
        self.optional_names = optional_names(tree)
        self.bound = bound_names(tree) - self.optional_names
        self.helpers_with_checks: set[str] = set()
        # name -> (node, is_test, class markers); a redefinition replaces the entry and moves it last.
        self._pending: dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool, list[ast.expr]]] = {}

    # --- collection --------------------------------------------------------------------------

    def read_scope(
        self,
        body: list[ast.stmt],
        prefix: str,
        collect: bool,
        class_markers: list[ast.expr],
        seen: dict[str, int] | None = None,
    ) -> None:
        # Module-level markers are read once, from the outermost statement that holds them.
        top = seen is None and not prefix
        seen = {} if seen is None else seen
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + stmt.name
                is_test = collect and stmt.name.startswith("test")
                self._shadow(seen, name, stmt.lineno, is_test)
                self._pending.pop(name, None)
                self._pending[name] = (stmt, is_test, class_markers)
                if not prefix and stmt.name == "load_tests":
                    self.out.load_tests = True
            elif isinstance(stmt, ast.ClassDef):
                self._read_class(stmt, prefix, collect, seen, class_markers)
            elif isinstance(stmt, ast.If | ast.Try | ast.TryStar | ast.With):
                # Tests defined under `if sys.version_info ...:` or `try:` are collected too. Each
                # branch gets its own view of earlier names: two exclusive branches are no shadowing.
                for branch in _branches(stmt):
                    self.read_scope(branch, prefix, collect, class_markers, dict(seen))
                if top:
                    self._module_markers(stmt)
            else:
                for target in assigned_names(stmt):
                    name = prefix + target
                    if name in seen:  # `test_x = None` removes the test as surely as a redefinition
                        self._shadow(seen, name, stmt.lineno, True)
                        self._pending.pop(name, None)
                if top:
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
            for gone in [p for p in self._pending if p.startswith(name + ".")]:
                del self._pending[gone]
        seen[name] = node.lineno
        # `pytestmark = pytest.mark.skip` in a class body marks every test of the class.
        marks = [
            s.value
            for s in node.body
            if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in s.targets)
        ]
        self.read_scope(node.body, name + ".", collected, [*outer, *node.decorator_list, *marks])

    def _module_markers(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets):
            self.out.module_markers += self._markers_in(stmt.value, conditional=None)
            return
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
            return
        defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        inside = {id(n) for d in ast.walk(stmt) if isinstance(d, defs) for n in ast.walk(d)}
        for node, cond in walk_with_condition(stmt, None):
            if id(node) in inside:
                continue
            if isinstance(node, ast.Call) and last_name(node.func) in {"skip", "importorskip", "SkipTest", "xfail"}:
                self.out.module_markers.append(self._marker(node, cond))

    # --- per-function facts ------------------------------------------------------------------

    def finish(self) -> None:
        # Helpers that assert make their callers check: two rounds cover a helper calling a helper.
        helpers = [(name.rsplit(".", 1)[-1], node) for name, (node, is_test, _) in self._pending.items() if not is_test]
        for _ in range(2):
            self.helpers_with_checks |= {name for name, node in helpers if self._asserts(node)}
        for name, (node, is_test, class_markers) in self._pending.items():
            self.out.funcs[name] = self._func(name, node, is_test, class_markers)

    def _func(
        self, name: str, node: ast.FunctionDef | ast.AsyncFunctionDef, is_test: bool, class_markers: list[ast.expr]
    ) -> Func:
        body = without_docstring(node.body)
        func = Func(name=name, line=node.lineno, is_test=is_test)
        func.empty = all(is_filler(s) for s in body)
        stop = next((i for i, s in enumerate(body) if is_exit(s)), len(body))
        reached = self._checks(body[:stop])
        func.checks = reached + [replace(c, dead=True) for c in self._checks(body[stop + 1 :])]
        if stop < len(body) and not reached:
            func.exit, func.exit_first = (body[stop].lineno, snippet(body[stop])), stop == 0
        markers: list[Marker] = []
        for deco in [*class_markers, *node.decorator_list]:
            markers += self._markers_in(deco, conditional=None)
        guards = skip_guards(body)
        for sub, cond in walk_with_condition(ast.Module(body=body, type_ignores=[]), None):
            skip = (isinstance(sub, ast.Call) and last_name(sub.func) in SKIP_NAMES) or (
                isinstance(sub, ast.Raise) and sub.exc is not None and last_name(sub.exc) in SKIP_NAMES)
            if skip:
                marker = self._marker(sub, cond)
                guard = guards.get(id(sub), "")
                markers.append(replace(marker, guard=f"{guard}: {marker.key}") if guard else marker)
        func.markers = markers
        func.calls = frozenset(last_name(n.func) for s in body for n in ast.walk(s) if isinstance(n, ast.Call))
        if is_test:  # only tests are matched across renames and moves
            func.fingerprint = "|".join(ast.dump(n) for n in [*node.decorator_list, *body])
        func.cases = cases_of(node.decorator_list)
        if is_test:
            func.literals = frozenset(ast.unparse(n) for part in [*node.decorator_list, *body]
                                      for n in ast.walk(part) if isinstance(n, ast.Constant))
        targets = patch_targets([*node.decorator_list, *body])
        func.self_patched = [
            (c.line, t) for c in func.live for t in targets if any(same_target(t, call) for call in c.calls)
        ]
        return func

    def _asserts(self, node: ast.AST) -> bool:
        """Whether a function asserts anything (or calls a helper that does): a cheap pre-pass."""
        for n in ast.walk(node):
            if isinstance(n, ast.Assert):
                return True
            if isinstance(n, ast.Call):
                name = last_name(n.func)
                if name.startswith("assert") or name in CHECK_CONTEXTS or name == "fail" or name in self.helpers_with_checks:
                    return True
        return False

    def _checks(self, body: list[ast.stmt]) -> list[Check]:
        found: list[Check] = []
        for stmt in body:
            self._collect(stmt, "", found)
        return found

    def _collect(self, node: ast.AST, swallowed: str, found: list[Check]) -> None:
        if isinstance(node, ast.Try | ast.TryStar):
            catcher = swallower(node.handlers)
            for s in node.body:
                self._collect(s, catcher or swallowed, found)
            for part in (*node.handlers, *node.orelse, *node.finalbody):
                self._collect(part, swallowed, found)
            return
        if isinstance(node, ast.With | ast.AsyncWith):
            suppress = suppressor(node.items)
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
            trivial = assert_trivial(node.test) or about_a_definition(node.test, self.bound)
            return snippet(node), trivial, expectation(node.test)
        if isinstance(node, ast.Raise) and node.exc is not None and last_name(node.exc) == "AssertionError":
            return snippet(node), False, None
        if not isinstance(node, ast.Call):
            return None
        name = last_name(node.func)
        if name in CHECK_CONTEXTS:  # as a context manager the With counts it; this is `raises(E, f, *args)`
            return (snippet(node), False, None) if len(node.args) >= 2 else None
        if name.startswith("assert") or name == "fail":
            return snippet(node), call_trivial(name, node), call_expectation(name, node)
        if name in self.helpers_with_checks and isinstance(node.func, ast.Name | ast.Attribute):
            return snippet(node), False, None
        return None

    def _context_check(self, expr: ast.expr, with_node: ast.With | ast.AsyncWith) -> tuple[str, bool] | None:
        if not (isinstance(expr, ast.Call) and last_name(expr.func) in CHECK_CONTEXTS):
            return None
        # `with pytest.raises(E): raise E` checks nothing but itself.
        body = without_docstring(with_node.body)
        trivial = (
            len(body) == 1
            and isinstance(body[0], ast.Raise)
            and body[0].exc is not None
            and bool(expr.args)
            and last_name(body[0].exc) == last_name(expr.args[0])
        )
        return snippet(expr), trivial

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
        key = marker_key(node)
        guard = ""
        if name == "importorskip":
            optional = True
        elif isinstance(node, ast.Call) and name in {"skipif", "skipIf", "skipUnless"}:
            test = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "condition"), None)
            optional = test is not None and self._probes_optional(test)
            guard = key if test is not None else ""  # the condition is part of the marker
        elif cond is not None:
            optional = self._probes_optional(cond)
        return Marker(getattr(node, "lineno", 0), snippet(node), optional, key, guard)

    def _probes_optional(self, expr: ast.AST) -> bool:
        for sub in ast.walk(expr):
            if isinstance(sub, ast.Call) and last_name(sub.func) in PROBES:
                return True
            if isinstance(sub, ast.Name) and sub.id in self.optional_names:
                return True
        return False


# --- helpers on nodes ----------------------------------------------------------------------------


def _branches(stmt: ast.If | ast.Try | ast.TryStar | ast.With) -> list[list[ast.stmt]]:
    if isinstance(stmt, ast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.With):
        return [stmt.body]
    return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
