"""Tests whose subject the change deletes or renames: the held-out originals cannot run them.

When a change renames ``foo`` to ``bar`` (or removes a deprecated alias), the start tree's tests of
``foo`` fail on the change whatever the worker did, honest or not. Held out as originals, they would
refuse every honest rename. So, in the original test file that bosun puts back, each test function
that names a removed definition is replaced by ``pass`` (line numbers kept) and the removed names
leave its imports; every other original test still runs. What was taken out is reported, and a test
taken out that failed before the change is a reason for review (isolation/heldout.py): removing the
subject of a failing test fixes nothing those tests check. Pure: text in, text out.
"""

from __future__ import annotations

import ast

from bosun.gates.pynodes import referenced_names


def strip_tests_of(text: str, removed: set[str]) -> tuple[str, list[str]]:
    """``text`` without the test functions that name a ``removed`` definition, and without those
    names in its module-level imports: ``(new text, the tests taken out as "name" or "Class::name")``.
    Text that does not parse, or that names nothing removed, comes back unchanged."""
    if not removed:
        return text, []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text, []
    lines = text.splitlines(keepends=True)
    taken: list[str] = []
    edits: list[tuple[int, int, str]] = []  # (first line, last line, replacement of the first), 1-based

    def consider(node: ast.stmt, prefix: str) -> None:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith("test"):
            return
        if referenced_names(node) & removed:
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            edits.append((first, node.end_lineno or node.lineno, _indent(lines[first - 1]) + "pass\n"))
            taken.append(prefix + node.name)

    for node in tree.body:
        consider(node, "")
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                consider(sub, node.name + "::")
    if not taken:
        return text, []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(a.name in removed for a in node.names):
            kept = [a for a in node.names if a.name not in removed]
            head = _indent(lines[node.lineno - 1])
            if kept:
                names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
                line = f"{head}from {'.' * node.level}{node.module or ''} import {names}\n"
            else:
                line = head + "pass\n"
            edits.append((node.lineno, node.end_lineno or node.lineno, line))
    for first, last, replacement in sorted(edits, reverse=True):
        lines[first - 1:last] = [replacement] + ["\n"] * (last - first)
    return "".join(lines), taken


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]
