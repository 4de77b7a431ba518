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
