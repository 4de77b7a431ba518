"""Whether a test the worker wrote proves anything about its task, from how it failed without the
change's code (pure: texts and the runner's messages in, a kind out).

A test the change adds or edits that fails on the start tree's code and passes on the change proves
the change (``proven_by: own_tests``), and a person or a cross-review reads it. It proves nothing
about the task when it failed only because it uses something the change adds; such a test is
``new_name`` and is never enough to land a change:

* its module did not import on the start tree's code (a collection error);
* it raised ``ImportError``, ``ModuleNotFoundError``, ``AttributeError`` or ``NameError`` about a
  name the change introduces (a new function, module, attribute, marker);
* it checks that such a name exists (``hasattr``, ``getattr``, ``dir()``, ``vars()``, ``__dict__``
  with the name as a string);
* it could not open a file the change adds (``FileNotFoundError`` naming it).

Any other failure (an assertion on what the code returns, an exception the old code raised) is
``behaviour``: what the test states is for its reader to judge against the task.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Iterable

from bosun.gates.pynodes import referenced_names

BEHAVIOUR = "behaviour"
NEW_NAME = "new_name"

_NAME_ERRORS = re.compile(r"^\s*(?:\w+\.)*(ImportError|ModuleNotFoundError|AttributeError|NameError)\b")
_FILE_ERRORS = re.compile(r"^\s*(?:\w+\.)*(FileNotFoundError|IsADirectoryError|NotADirectoryError)\b")
_QUOTED = re.compile(r"'([A-Za-z_][\w.]*)'")
_QUOTED_PATH = re.compile(r"'([^']+)'")
_IN_FIXTURE = re.compile(r'^failed on (?:setup|teardown) with "')
_EXISTENCE_CALLS = frozenset({"hasattr", "getattr"})
_LISTINGS = frozenset({"dir", "vars"})


def identifiers(text: str | None) -> set[str]:
    """Every name a module defines or refers to: names, attributes, definitions, arguments."""
    if not text:
        return set()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set(re.findall(r"[A-Za-z_]\w*", text))  # unparsable: every word counts as known
    out = referenced_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return out


def introduced_names(pairs: Iterable[tuple[str | None, str | None]], added_modules: Iterable[str] = ()) -> frozenset[str]:
    """Names the change brings into its code: identifiers each changed module has after and had not
    before, and the names of the modules it adds (``pkg/new.py``: ``new``, ``pkg.new``)."""
    out: set[str] = set()
    for before, after in pairs:
        out |= identifiers(after) - identifiers(before)
    for path in added_modules:
        parts = path.removesuffix(".py").split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out |= {".".join(parts[i:]) for i in range(len(parts))}
    return frozenset(n for n in out if n)


def classify(message: str | None, collect_error: bool, source: str | None, introduced: frozenset[str],
             added_files: Iterable[str] = ()) -> tuple[str, str]:
    """``(kind, why)`` of a test that failed on the start tree's code and passes on the change."""
    if collect_error:
        return NEW_NAME, "its module did not import without the change"
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    first = _IN_FIXTURE.sub("", first)  # a fixture's failure: 'failed on setup with "ImportError: ..."'
    if _NAME_ERRORS.match(first):
        named = [n for n in _QUOTED.findall(first) if n in introduced or n.rpartition(".")[2] in introduced]
        if named:
            return NEW_NAME, f"it failed only on a name the change adds ({json.dumps(named[-1])})"
    if _FILE_ERRORS.match(first):
        opened = [q for q in _QUOTED_PATH.findall(first) for f in added_files if q == f or q.endswith("/" + f)]
        if opened:
            return NEW_NAME, f"it failed only on a file the change adds ({json.dumps(opened[-1])})"
    checked = _existence_checks(source, introduced)
    if checked:
        return NEW_NAME, f"it checks only that a name the change adds exists ({json.dumps(checked[0])})"
    return BEHAVIOUR, ""


def _existence_checks(source: str | None, introduced: frozenset[str]) -> list[str]:
    """Names the change adds that the test asks about by name: ``hasattr(m, "X")``, ``"X" in dir(m)``."""
    if not source:
        return []
    try:
        tree = ast.parse(textwrap.dedent(source))
    except (SyntaxError, ValueError):
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _callee(node.func) in _EXISTENCE_CALLS and len(node.args) >= 2:
            found += _strings(node.args[1:2], introduced)
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            right = node.comparators[-1]
            if isinstance(right, ast.Call) and _callee(right.func) in _LISTINGS or (
                    isinstance(right, ast.Attribute) and right.attr == "__dict__"):
                found += _strings([node.left], introduced)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__":
            found += _strings([node.slice], introduced)
    return found


def _callee(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _strings(nodes: list[ast.expr], introduced: frozenset[str]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in introduced]


def source_of(text: str | None, qualname: str, max_lines: int = 60, max_chars: int = 4000) -> str | None:
    """The source of the function ``qualname`` (``Class.test_x``) in ``text``, decorators included,
    bounded; None when the file does not parse or has no such function."""
    if not text:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    body: list[ast.stmt] = tree.body
    node: ast.stmt | None = None
    for part in qualname.split("."):
        node = next((n for n in reversed(body) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                     and n.name == part), None)
        if node is None:
            return None
        body = node.body if isinstance(node, ast.ClassDef) else []
    assert node is not None
    first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    lines = text.splitlines()[first - 1:(node.end_lineno or node.lineno)]
    shown = "\n".join(lines[:max_lines])
    if len(lines) > max_lines:
        shown += f"\n[... {len(lines) - max_lines} more lines]"
    return shown[:max_chars]
