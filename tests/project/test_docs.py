"""Docs that cannot drift: every config key, gate code and CLI verb is documented."""

from __future__ import annotations

from pathlib import Path

from bosun.cli.main import build_parser
from bosun.core.config import Budget, Notify, Profile, Settings
from bosun.gates import ENGINE_GATE_CODES, GATE_CODES

DOCS = Path(__file__).resolve().parents[2] / "docs"
README = (DOCS.parent / "README.md").read_text()


def test_every_config_key_is_documented():
    text = (DOCS / "configuration.md").read_text()
    for key in [*Settings.model_fields, *Profile.model_fields, *Notify.model_fields, *Budget.model_fields]:
        if key == "name":  # the table name, not a key
            continue
        assert f"`{key}`" in text, f"config key {key!r} is missing from docs/configuration.md"


def test_every_gate_is_documented():
    text = (DOCS / "gates.md").read_text()
    for code in (*GATE_CODES, *ENGINE_GATE_CODES):
        assert f"`{code}`" in text, code


def test_every_verb_is_in_the_readme():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for verb in sub.choices:
        assert f"`{verb}" in README or f"bosun {verb}" in README, verb


def _module_documented(rel: str, doc: str, rows: list[str]) -> bool:
    """Named by its path, or by its file name in a table row whose first cell names its package."""
    if f"`{rel}`" in doc:
        return True
    package, _, name = rel.rpartition("/")
    return any(f"`{name}`" in row.split("|")[1] and f"`{package}/" in row.split("|")[1] for row in rows)


def test_every_module_is_in_the_architecture_doc():
    doc = (DOCS / "architecture.md").read_text()
    rows = [line for line in doc.splitlines() if line.startswith("| `")]
    src = DOCS.parent / "src" / "bosun"
    missing = [
        rel for rel in (str(p.relative_to(src)) for p in sorted(src.rglob("*.py")))
        if not rel.endswith(("__init__.py", "__main__.py")) and not _module_documented(rel, doc, rows)
    ]
    assert not missing, f"add these to the module table of docs/architecture.md: {missing}"


def _make_targets() -> set[str]:
    import re

    return set(re.findall(r"^([A-Za-z][\w-]*):", (DOCS.parent / "Makefile").read_text(), re.M))


def test_every_make_target_the_readme_names_exists():
    import re

    named = set(re.findall(r"`?\bmake ([a-z][\w-]*)", README))
    assert {"demo", "test", "test-fast"} <= named, named
    assert named <= _make_targets(), f"the README names make targets the Makefile lacks: {named - _make_targets()}"


def test_the_readme_says_what_the_first_make_test_downloads():
    # A new machine's first `make test` fetches the worker CLIs for minutes; a reader must know that,
    # and how to run only the fast tests, before typing it.
    import re

    setup = README.split("## Set-up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    assert "`make test-fast`" in setup
    assert "Node 22" in setup and "seven worker CLIs" in setup
    assert re.search(r"about \d+(\.\d+)? GB", setup) and re.search(r"about \d+ minutes? on a 2-core machine", setup)
