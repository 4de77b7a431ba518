"""Gates: independent, pure checks of a worker's change before it may merge.

Each gate family lives in its own module (:mod:`.outcome`, :mod:`.paths` with :mod:`.testconfig`,
:mod:`.harness`, :mod:`.shadowing`, :mod:`.entrypoints`, :mod:`.size`, :mod:`.binary`,
:mod:`.secrets`, :mod:`.tests_weakened` and :mod:`.testharness`, which read test files through
:mod:`.testpaths`, :mod:`.pyfacts`, :mod:`.pytests`, :mod:`.jstests`, :mod:`.tripwire` and
:mod:`.testdata`); :mod:`.diffparse` reads the unified diff some of them need, :mod:`.invocations`
reads what the verify commands run, :mod:`.context` defines what they all receive, and
:mod:`.runner` runs them all. Callers use only the names exported here.
"""

from __future__ import annotations

from bosun.gates.context import GateInputs
from bosun.gates.runner import ENGINE_GATE_CODES, GATE_CODES, run_gates

__all__ = ["ENGINE_GATE_CODES", "GATE_CODES", "GateInputs", "run_gates"]
