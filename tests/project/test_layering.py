"""bosun's imports run downhill: cli -> plans -> engine -> workers -> store/isolation -> proc, and no
module imports itself back through others. Imports are read with ``ast``, function-level ones
included (a lazy import is still a dependency), so neither can come back unnoticed."""

from __future__ import annotations

import ast
from pathlib import Path

import bosun
from tests.conftest import ROOT

SRC = ROOT / "src" / "bosun"

# Highest first, as the package declares them (bosun/__init__.py): each layer is a set of folders.
# The unit of a module is its folder under bosun (``engine``); only the entry points and proc are loose.
LAYERS: list[tuple[str, set[str]]] = [(name, set(units)) for name, units in bosun.LAYERS]
RANK = {unit: n for n, (_, units) in enumerate(LAYERS) for unit in units}
LOOSE = {"__init__", "__main__", "launch", "proc"}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = ["bosun", *path.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The bosun modules ``name`` imports anywhere in its file; ``from pkg import sub`` names ``pkg.sub``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
            targets = subs if len(subs) == len(node.names) else [base, *subs]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("bosun") and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_package_and_top_level_module_has_a_layer():
    assert {unit(m) for m in modules()} <= set(RANK), sorted({unit(m) for m in modules()} - set(RANK))


def test_the_folders_are_the_layers():
    loose = {p.stem for p in SRC.glob("*.py")}
    assert loose == LOOSE, f"move {sorted(loose - LOOSE)} into the folder of its layer (bosun/__init__.py: LAYERS)"
    folders = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    assert folders | LOOSE == set(RANK), sorted(set(RANK) ^ (folders | LOOSE))
    assert len(RANK) == sum(len(units) for _, units in LAYERS)  # a folder is in exactly one layer


# The tests mirror the source: tests/<unit>/ holds the tests of src/bosun/<unit> (a folder, or the loose
# proc.py). Only the end-to-end tests, their fixtures and the whole-project checks are not a unit.
NOT_UNITS = {"e2e", "fixtures", "project"}


def test_the_test_folders_mirror_the_source():
    tests = ROOT / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    strays = sorted(folders - NOT_UNITS - (set(RANK) - {"__init__"}))
    assert not strays, f"name each test folder for the src/bosun folder or module it tests: {strays}"
    assert not list(tests.glob("test_*.py")), "a test file goes into the folder of its unit"
    plain = sorted(name for name in folders - {"fixtures"} if not (tests / name / "__init__.py").is_file())
    assert not plain, f"test folders are packages (tests.<folder>.<module>): add __init__.py to {plain}"


def test_the_architecture_doc_names_the_layers_in_order():
    doc = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    line = next(ln for ln in doc.splitlines() if ln.startswith("Layers, highest first:"))
    assert [part.split(" (")[0].strip() for part in line.split(":", 1)[1].rstrip(".").split(" -> ")] == [
        name for name, _ in LAYERS]


def test_no_import_runs_up_a_layer():
    upward = sorted(
        f"{src} -> {dst}"
        for src, targets in graph().items()
        for dst in targets
        if RANK[unit(dst)] < RANK[unit(src)]
    )
    assert not upward, "\n".join(upward)


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "bosun"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("def f():\n    from bosun.sub import b\n    from . import c\n")
    (pkg / "sub" / "b.py").write_text("")
    (pkg / "sub" / "c.py").write_text("")
    known = {"bosun": pkg / "__init__.py", "bosun.sub": pkg / "sub" / "__init__.py",
             "bosun.sub.a": pkg / "sub" / "a.py", "bosun.sub.b": pkg / "sub" / "b.py", "bosun.sub.c": pkg / "sub" / "c.py"}
    assert imports("bosun.sub.a", known["bosun.sub.a"], known) == {"bosun.sub.b", "bosun.sub.c"}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def folder_edges() -> dict[tuple[str, str], list[str]]:
    """Every import from one top-level folder (or loose module) of bosun into another, with its modules."""
    out: dict[tuple[str, str], list[str]] = {}
    for src, targets in graph().items():
        for dst in targets:
            if unit(src) != unit(dst):
                out.setdefault((unit(src), unit(dst)), []).append(f"{src} -> {dst}")
    return out


def test_no_two_folders_import_each_other():
    # Within a layer an import may go either way, but never both: two folders that import each other are
    # one folder in two places (function-level imports count, a lazy import is still a dependency).
    edges = folder_edges()
    mutual = sorted(
        f"{a} <-> {b}: " + "; ".join(sorted(edges[a, b]) + sorted(edges[b, a]))
        for a, b in edges if a < b and (b, a) in edges
    )
    assert not mutual, "\n".join(mutual)
