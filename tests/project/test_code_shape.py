"""bench/code_shape.py counts what docs/benchmarks.md says it counts: on a small known tree, each
measure comes out at the number a reader would count by hand."""

from __future__ import annotations

import importlib.util

from tests.conftest import ROOT


def load():
    spec = importlib.util.spec_from_file_location("code_shape", ROOT / "bench" / "code_shape.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_code_shape_counts_a_known_tree(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "store").mkdir()
    (tmp_path / "engine" / "a.py").write_text(
        "from typing import Any\n"
        "import bosun.core\n"  # module level: not counted
        "def f(x: dict[str, Any]) -> dict[str, Any]:\n"
        "    from bosun.core import y\n"
        "    import json\n"  # not bosun's own
        "    def g():\n"
        "        from . import z\n"  # nested: counted once
        "    return x.get(\"k\") or x.get('j')\n")
    (tmp_path / "store" / "b.py").write_text("d: dict[str, Any] = {}\nd.get(\"k\")\n")
    counts = load().measure(tmp_path)
    assert counts['string-keyed .get(" in engine, isolation, cli'] == 1  # store is not counted
    assert counts["dict[str, Any] in src"] == 3
    assert counts["bosun imports inside functions"] == 2
    assert counts["lines of src"] == 10
    assert counts["modules in src"] == 2
