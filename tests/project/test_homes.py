"""Two things that have one home each, kept by reading the source: processes start in ``proc.py``
(and in the few modules docs/architecture.md names, each with its reason), and SQL runs in ``store/``.
A new ``subprocess.Popen`` or ``db.execute`` elsewhere fails here until it moves home or the doc says
why it cannot."""

from __future__ import annotations

import ast
import re

from tests.conftest import ROOT

SRC = ROOT / "src" / "bosun"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

STARTERS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "os": {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp",
           "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "pty": {"spawn", "fork"},
}
SQL_CALLS = {"execute", "executemany", "executescript"}


def _calls(tree: ast.AST) -> list[tuple[str, str, int]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            out.append((name, node.func.attr, node.lineno))
    return out


def _sources() -> dict[str, ast.AST]:
    return {str(p.relative_to(SRC)): ast.parse(p.read_text("utf-8")) for p in sorted(SRC.rglob("*.py"))}


def process_starters(sources: dict[str, ast.AST]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for rel, tree in sources.items():
        for owner, attr, line in _calls(tree):
            if attr in STARTERS.get(owner, ()):
                found.setdefault(rel, []).append(line)
    return found


def documented_starters() -> set[str]:
    text = ARCHITECTURE.read_text("utf-8")
    section = text.split("## Where processes start", 1)[1].split("\n## ", 1)[0]
    return {m for row in section.splitlines() if row.startswith("| `") for m in re.findall(r"`([\w/]+\.py)`", row.split("|")[1])}


def test_processes_start_only_where_the_architecture_doc_says():
    found = process_starters(_sources())
    documented = documented_starters()
    assert "proc.py" in found and "proc.py" in documented
    undocumented = {rel: lines for rel, lines in found.items() if rel not in documented}
    assert not undocumented, (f"these start processes outside proc.py: {undocumented}; use bosun.proc, or add the "
                              "module to 'Where processes start' in docs/architecture.md with the reason")
    stale = sorted(documented - set(found))
    assert not stale, f"docs/architecture.md names modules that no longer start processes: {stale}"


def test_sql_runs_only_in_the_store():
    outside = {}
    for rel, tree in _sources().items():
        if rel.startswith("store/"):
            continue
        lines = [line for _, attr, line in _calls(tree) if attr in SQL_CALLS]
        imports = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)
                   and any(a.name == "sqlite3" for a in n.names) or (isinstance(n, ast.ImportFrom) and n.module == "sqlite3")]
        if rel == "core/lean_imports.py":
            imports = []  # imports sqlite3 early, lean, for the store's speed: no SQL
        if lines or imports:
            outside[rel] = sorted(lines + imports)
    assert not outside, f"SQL or sqlite3 outside store/: {outside}; add a method to the store instead"


def test_the_checks_see_what_they_look_for():
    tree = ast.parse("import subprocess, os\nsubprocess.Popen(['x'])\nos.fork()\ndb.execute('SELECT 1')\n")
    assert sorted((o, a) for o, a, _ in _calls(tree)) == [("db", "execute"), ("os", "fork"), ("subprocess", "Popen")]
    assert process_starters({"x.py": tree}) == {"x.py": [2, 3]}
