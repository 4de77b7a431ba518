"""What a delegation loads while its worker runs, so that verification does not wait for imports."""

from __future__ import annotations

# What verification, the gates and the receipt load once the worker stops. A delegation loads them while
# the worker runs (bosun has nothing else to do then), so they are not part of its own time after it.
AFTER_WORKER_MODULES = ("bosun.engine.verifying", "bosun.isolation.verification", "bosun.isolation.matrix",
                        "bosun.isolation.own_tests", "bosun.engine.proof", "bosun.isolation.gating", "bosun.gates", "bosun.isolation.heldout",
                        "bosun.engine.approval", "bosun.engine.verdict", "bosun.engine.citations", "bosun.engine.run_report", "bosun.engine.results",
                        "bosun.engine.notify", "xml.etree.ElementTree")  # the last: verification reads pytest's JUnit XML


def warm_up_after_worker() -> None:
    """In a thread of its own, started with the worker: the supervising thread stays free to watch
    the worker (its exit seen at once, its descendants noted for containment while it runs). A worker
    that exits within these ~0.1 s has bosun's next steps share the interpreter lock with it."""
    import threading

    threading.Thread(target=_load_after_worker, name="bosun-warm-up", daemon=True).start()


def _load_after_worker() -> None:
    import importlib

    from bosun.engine.metrics import _encoder

    for name in AFTER_WORKER_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            return  # the main thread's own import will report it
    _encoder()  # the tokenizer's vocabulary, about 50 ms with the interpreter lock held
