"""The shape of bosun's source, counted: string-keyed ``.get("`` in engine, isolation and cli;
``dict[str, Any]`` in src; bosun's own imports made inside functions; lines of src.

    .venv/bin/python bench/code_shape.py

Counts are textual (``.get("``, ``dict[str, Any]``) or read with ``ast`` (imports inside a function
body, at any depth, of ``bosun`` or a relative module), so they match what a reader would grep for.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "bosun"
GET_FOLDERS = ("engine", "isolation", "cli")


def sources(root: Path = SRC) -> list[Path]:
    return sorted(root.rglob("*.py"))


def string_gets(paths: list[Path]) -> int:
    return sum(p.read_text("utf-8").count('.get("') for p in paths)


def dict_any(paths: list[Path]) -> int:
    return sum(p.read_text("utf-8").count("dict[str, Any]") for p in paths)


def own_imports_in_functions(path: Path) -> int:
    """bosun imports (absolute ``bosun...`` or relative) whose statement sits inside a function; an
    import in a nested function is counted once."""
    tree = ast.parse(path.read_text("utf-8"))
    seen: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "bosun" for a in node.names):
                    seen.add(id(node))
                elif isinstance(node, ast.ImportFrom) and (
                        node.level or (node.module or "").split(".")[0] == "bosun"):
                    seen.add(id(node))
    return len(seen)


def lines(paths: list[Path]) -> int:
    return sum(len(p.read_text("utf-8").splitlines()) for p in paths)


def measure(root: Path = SRC) -> dict[str, int]:
    everything = sources(root)
    gets = [p for p in everything if p.relative_to(root).parts[0] in GET_FOLDERS]
    return {
        'string-keyed .get(" in engine, isolation, cli': string_gets(gets),
        "dict[str, Any] in src": dict_any(everything),
        "bosun imports inside functions": sum(own_imports_in_functions(p) for p in everything),
        "lines of src": lines(everything),
        "modules in src": len(everything),
    }


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else SRC
    rows = measure(root)
    width = max(map(len, rows))
    print(f"| {'measure':<{width}} | count |")
    print(f"|{'-' * (width + 2)}|------:|")
    for name, value in rows.items():
        print(f"| {name:<{width}} | {value:>5} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
