"""Many bosun processes opening a brand-new store at the same moment (two `bosun mcp` delegations,
a plan's first wave) all get it: none fails with "database is locked"."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

OPEN_AND_WRITE = """
import sys, time
from pathlib import Path
from bosun.store.db import Store
start = float(sys.argv[2])
while time.time() < start:
    pass
store = Store(Path(sys.argv[1]))
store.set_cooldown("p" + sys.argv[3], time.time() + 60, "test")
print("ok")
"""


def test_concurrent_first_opens_of_a_new_store_all_succeed(tmp_path):
    import time

    for attempt in range(3):
        db = tmp_path / f"bosun-{attempt}.db"
        start = time.time() + 1.5
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_AND_WRITE, str(db), str(start), str(i)],
                                  env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(8)]
        outs = [p.communicate(timeout=120) for p in procs]
        failures = [err for (out, err), p in zip(outs, procs, strict=True) if p.returncode != 0 or out.strip() != "ok"]
        assert not failures, failures[0][-2000:]
