"""argparse, pathlib and sqlite3 imported lean: nothing they load later is missing or a stand-in."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

CHECK = r"""
import sys
import bosun.cli, bosun.store
left = [m for m in ("gettext", "urllib.parse", "ipaddress", "datetime") if m in sys.modules]
assert not left, left
assert sys.modules.get("nt", "absent") == "absent" and "_winapi" not in sys.modules

from pathlib import Path
assert Path("/a b").as_uri() == "file:///a%20b"  # the stand-in loads the real quote_from_bytes
import urllib.parse
assert urllib.parse.urlparse("http://h/p?q=1").query == "q=1"

import argparse
p = argparse.ArgumentParser(prog="x")
p.add_argument("pair", nargs=2)
try:
    p.parse_args(["--nope", "a", "b"])
except SystemExit as exc:
    assert exc.code == 2

import datetime, sqlite3
assert sqlite3.Date is datetime.date and sqlite3.Timestamp is datetime.datetime
assert datetime.date.today().year > 2000 and hasattr(datetime, "MAXYEAR")
db = sqlite3.connect(":memory:", detect_types=sqlite3.PARSE_DECLTYPES)
db.execute("create table t (d date, ts timestamp)")
db.execute("insert into t values (?, ?)", (datetime.date(2026, 1, 2), datetime.datetime(2026, 1, 2, 3, 4, 5)))
assert db.execute("select d, ts from t").fetchone() == (datetime.date(2026, 1, 2),
                                                        datetime.datetime(2026, 1, 2, 3, 4, 5))
print("ok")
"""


def test_the_real_modules_serve_every_later_import():
    out = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", CHECK],
                         env={"PYTHONPATH": str(ROOT / "src")}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


PYDANTIC_CHECK = r"""
import sys
from bosun.core.contract import TaskContract, load_contract
from bosun.core.config import Settings
assert TaskContract.model_validate({"title": "t", "prompt": "p"}).title == "t"
Settings.model_validate({})
left = [m for m in ("importlib.metadata", "email", "zipfile", "csv") if m in sys.modules]
assert not left, left
import pydantic.plugin._loader as loader
assert list(loader.get_plugins()) == []
from bosun.core.lean_imports import _NoPydanticPlugins
assert not any(isinstance(f, _NoPydanticPlugins) for f in sys.meta_path)  # it leaves once it has served

import importlib.metadata  # the real one, for whoever wants it later
assert importlib.metadata.version("pydantic") == __import__("pydantic").VERSION
assert hasattr(importlib.metadata, "distributions")
print("ok")
"""


def test_pydantic_loads_without_scanning_for_plugins():
    """bosun's models never load pydantic plugins, so building them needs no package metadata."""
    out = subprocess.run([sys.executable, "-c", PYDANTIC_CHECK],
                         env={"PYTHONPATH": str(ROOT / "src")}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_pydantic_imported_before_bosun_is_left_as_it_was():
    code = ("import importlib.metadata, pydantic; from pydantic import BaseModel\n"
            "class A(BaseModel):\n    x: int = 0\n"
            "import pydantic.plugin._loader as loader\n"
            "before = loader._plugins\n"
            "import bosun.core.contract\n"
            "assert loader._plugins is before, (loader._plugins, before)\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(ROOT / "src")},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
