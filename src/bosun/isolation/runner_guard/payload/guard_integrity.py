"""bosun's runner guard: the runner's objects as they were before the tree's first line ran, and the
checkpoints that compare them with what they are now.

Not part of bosun's import graph: copied as ``bosun_runner_guard_integrity.py`` beside the guard's
``sitecustomize``, which imports it once at start-up (before any code of the tree runs), keeps the
closures :func:`integrity` returns and drops the module from ``sys.modules``.

The runner is every module named ``_pytest``, ``pytest``, ``pluggy``, ``unittest`` (and the modules of
the plugins pytest registered from outside the tree), plus ``builtins``: their module dictionaries and
the dictionaries of the classes they define are copied when the tree's first code is about to run. A
checkpoint lists what differs and where each new value was written (:func:`origin`): a replaced
``Function.runtest`` names the file and line that defined the replacement. Data the runner rebinds
itself as it runs (``_reprcompare``, ``maxDiff``) is not compared; callables, classes and modules are.
"""

import sys

_MISSING = object()


def integrity(state, emit, in_tree, is_runner):  # noqa: C901 - closures on purpose: their state is not reachable by name
    """``(snapshot, watch, report_change, checkpoint)`` over the guard's ``state``."""

    def snapshot():
        mods = {}
        for name, mod in list(sys.modules.items()):
            if mod is not None and (is_runner(name) or name == "builtins"):
                mods[name] = mod
        snap = []
        hot = []
        for name, mod in mods.items():
            try:
                items = list(vars(mod).items())
            except TypeError:
                continue
            snap.append((name, mod, vars(mod), dict(items), False))
            for attr, value in items if name != "builtins" else ():
                if isinstance(value, type) and getattr(value, "__module__", None) == name:
                    entry = (name + "." + attr, value, value.__dict__, dict(value.__dict__), True)
                    snap.append(entry)
                    if name.startswith(("_pytest.python", "_pytest.runner", "_pytest.nodes", "_pytest.main",
                                        "_pytest.reports", "_pytest.outcomes", "pluggy._")):
                        hot.append(entry)
        state["snap"] = snap
        state["runner_ids"] = None  # made when a change needs it: every id() is an audit event
        state["hot"] = hot + [e for e in snap if not e[4] and e[0] in ("builtins", "_pytest.runner", "_pytest.python")]

    def origin(value):
        """Where ``value`` was written: ``"calc.py:3"`` in the tree, ``"runner"`` (one of the runner's
        own objects, moved), ``""`` elsewhere in the environment, None for what names no file."""
        if state["runner_ids"] is None:
            state["runner_ids"] = {id(v) for name, _, _, before, is_class in state["snap"]
                                   if name != "builtins" and not is_class and not name.startswith("testmodule:")
                                   for v in before.values() if callable(v)}
        if id(value) in state["runner_ids"]:
            return "runner"
        code = getattr(value, "__code__", None) or getattr(getattr(value, "__func__", None), "__code__", None)
        if code is None and isinstance(value, type):
            mod = sys.modules.get(getattr(value, "__module__", "") or "")
            path = getattr(mod, "__file__", None)
            return (in_tree(path) or "") if path else ""
        if code is None:
            return None  # a builtin or a C callable: nothing says where it came from
        rel = in_tree(code.co_filename)
        return rel + ":" + str(code.co_firstlineno) if rel is not None else ""

    def compare(entries, when):
        found = []
        for label, owner, live, before, is_class in entries:
            if live is None:
                continue
            for attr, old in before.items():
                new = live.get(attr, _MISSING)
                if new is old:
                    continue
                if not (callable(old) or isinstance(old, (type(sys), staticmethod, classmethod, property))):
                    continue  # state the runner itself rebinds while it runs (_reprcompare, maxDiff, ...)
                found.append({"target": label + "." + attr, "origin": origin(new) if new is not _MISSING else "deleted",
                              "when": when})
            if is_class:
                for attr in live.keys() - before.keys():
                    value = live[attr]
                    place = origin(value)
                    if place or attr.startswith("__"):
                        found.append({"target": label + "." + attr, "origin": place, "when": when, "added": True})
            elif sys.modules.get(label) is not owner and label != "builtins" and not label.startswith("testmodule:"):
                found.append({"target": "sys.modules[" + repr(label) + "]", "origin": origin(sys.modules.get(label)),
                              "when": when})
        for item in found[:12]:
            key = item["target"] + "|" + str(item["origin"])
            if key not in state["noted"]:
                state["noted"].add(key)
                emit(dict(item, kind="integrity"))

    def watch(modules):
        """Test modules, as pytest imported them: the code under test has no business writing there."""
        if state["snap"] is None:
            return
        for name, module in modules:
            state["snap"].append(("testmodule:" + name, module, vars(module), dict(vars(module)), False))

    def report_change(label, value, when):
        key = label + "|" + str(id(value))
        if key not in state["noted"]:
            state["noted"].add(key)
            emit({"kind": "integrity", "target": label, "origin": origin(value) if value is not None else "deleted",
                  "when": when})

    def checkpoint(when, full):
        if state["snap"] is None:
            return
        compare(state["snap"] if full else state["hot"], when)

    return snapshot, watch, report_change, checkpoint
