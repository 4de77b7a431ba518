"""Gates: independent, pure checks of a worker's change before it may merge.

Each gate family lives in its own module (:mod:`.outcome`, :mod:`.paths` with :mod:`.testconfig`,
:mod:`.harness`, :mod:`.shadowing`, :mod:`.entrypoints`, :mod:`.size`, :mod:`.binary`,
:mod:`.secrets`, :mod:`.tests_weakened` and :mod:`.testharness`, which read test files through
:mod:`.testpaths`, :mod:`.pyfacts`, :mod:`.pytests`, :mod:`.jstests`, :mod:`.tripwire` and
:mod:`.testdata`); :mod:`.diffparse` reads the unified diff some of them need, :mod:`.invocations`
reads what the verify commands run, :mod:`.context` defines what they all receive, and
:mod:`.runner` runs them all. Callers use only the names exported here.

The names are loaded on first use (module ``__getattr__``), not when the package is: threads import
gate modules at once (a delegation's baseline and verification), and a package that imported its
own submodules while one of them was importing it could hand a thread a half-made module.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from bosun.gates.context import GateInputs
    from bosun.gates.runner import ENGINE_GATE_CODES, GATE_CODES, run_gates

__all__ = ["ENGINE_GATE_CODES", "GATE_CODES", "GateInputs", "run_gates"]
_HOMES = {"GateInputs": "bosun.gates.context", "ENGINE_GATE_CODES": "bosun.gates.runner",
          "GATE_CODES": "bosun.gates.runner", "run_gates": "bosun.gates.runner"}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'bosun.gates' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
