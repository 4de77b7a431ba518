"""A run's ``data`` record has its keys declared once (store/data_fields.py), with their writers:
no module writes a key (``merge_data`` or ``Store.write``) it is not declared to write, readers and
the typed shape agree, and each field has exactly one writer."""

from __future__ import annotations

import ast

from bosun.store.data_fields import WRITERS
from bosun.store.run import DATA_FIELDS, RunData
from tests.conftest import ROOT

SRC = ROOT / "src" / "bosun"



def modules() -> dict[str, ast.AST]:
    return {".".join(p.relative_to(SRC).with_suffix("").parts): ast.parse(p.read_text("utf-8"))
            for p in sorted(SRC.rglob("*.py"))}


def writes() -> list[tuple[str, str, int]]:
    out = []
    for name, tree in modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("merge_data", "write"):
                out += [(name, kw.arg, node.lineno) for kw in node.keywords if kw.arg is not None]
    return out


def reads() -> list[tuple[str, str, int]]:
    """``run.data.KEY`` on the typed run, and ``(x.get("data") or {}).get("KEY")``,
    ``x["data"]["KEY"]`` / ``x["data"].get("KEY")`` on the records still read as JSON (plans, search)."""
    def is_data(node: ast.AST) -> bool:
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            node = node.values[0]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "data"
        return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == "data"

    out = []
    for name, tree in modules().items():
        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "data" \
                    and not node.attr.startswith("_") and not hasattr(str, node.attr) and not hasattr(dict, node.attr) \
                    and node.attr != "to_dict":
                key = node.attr
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                    and is_data(node.func.value) and node.args and isinstance(node.args[0], ast.Constant):
                key = node.args[0].value
            elif isinstance(node, ast.Subscript) and is_data(node.value) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            if isinstance(key, str):
                out.append((name, key, node.lineno))
    return out


def test_the_declaration_and_the_typed_shape_name_the_same_keys():
    assert set(WRITERS) == set(RunData.__annotations__) == set(DATA_FIELDS)


def test_every_write_is_by_a_declared_writer():
    wrong = [f"bosun.{m}:{line} writes {key!r}" for m, key, line in writes()
             if key not in WRITERS or m not in WRITERS[key]]
    assert not wrong, "declare the key, or its writer, in store/data_fields.py:\n" + "\n".join(wrong)


def test_every_declared_writer_writes_and_every_key_is_read_or_written():
    written = {(m, key) for m, key, _ in writes()}
    prepared = {"snapshot", "mode", "task_source", "source_head_at_start", "uncommitted_at_start", "routing",
                "holdout", "caller", "remote", "review_config", "worker", "usage", "cost_usd", "bosun_pid",
                "format_version"}  # insert_run, **splats, and the store's own stamp
    idle = [f"{m} -> {key}" for key, ms in WRITERS.items() for m in ms if (m, key) not in written and key not in prepared]
    assert not idle, idle


def test_readers_read_declared_keys():
    # plans/ reads the plan's and the plan task's own data records too, with the same shapes
    unknown = [f"bosun.{m}:{line} reads {key!r}" for m, key, line in reads()
               if key not in WRITERS and not m.startswith("plans.")]
    assert not unknown, "\n".join(unknown)
    assert len(reads()) > 20  # the patterns still find the readers


def test_every_field_has_one_writer():
    several = {key: ms for key, ms in WRITERS.items() if len(ms) > 1}
    assert not several, f"give each field one owner that the others call: {several}"
