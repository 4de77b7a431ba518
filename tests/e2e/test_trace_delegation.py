"""The measurement docs/architecture.md quotes for following one delegation still runs, on a real
delegation that lands, and counts what it says it counts."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT


def test_the_delegation_trace_measures_a_landed_run():
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "trace_delegation.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr, done.stderr  # the traced delegation ended landed
    assert "verdict landable" in done.stdout
    numbers = {label: int(value) for label, value in re.findall(r"^\| ([^|]+?) \| (\d+)", done.stdout, re.M)}
    assert numbers["bosun modules imported"] >= numbers["bosun modules that ran a function"] > 10
    assert numbers["climbs back up a layer"] >= numbers[
        "the same through the layers (base and proc, the leaves, left out): climbs"] > 0
    phases = {p: (int(n), int(m)) for p, n, m in re.findall(r"^\| (prepare|attempt|verify|verdict|land) \| (\d+) \| (\d+) \|",
                                                          done.stdout, re.M)}
    assert set(phases) == {"prepare", "attempt", "verify", "verdict", "land"}
    assert phases["verdict"][1] == 1  # the verdict is built in one module, engine/verdict.py
    assert all(lines > 0 for lines, _ in phases.values())
