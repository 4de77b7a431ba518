"""bosun's runner guard inside pytest: what only pytest knows, reported to the guard's audit hook.

Copied by bosun, as ``bosun_runner_guard.py``, next to the guard's ``sitecustomize``; the guard adds
``-p bosun_runner_guard`` to ``PYTEST_ADDOPTS`` of the processes it watches. It reports, through custom
audit events the hook accepts from this file's code only:

* the session: which plugins were loaded from the tree under test, and pytest's own exit status,
  recorded before any other plugin's ``pytest_sessionfinish`` runs (so a process that ends later
  with another status was ended by something else);
* where every outcome that pytest's machinery raises (skip, xfail, fail, exit, unittest's SkipTest)
  came from, when that is tree code outside the test's own file;
* a checkpoint before each test's call, after its teardown and at the end, where the hook compares
  the runner's objects with what they were before the tree's code first ran; the hook callers pytest
  calls, each test's own methods and function, and the test modules' names are compared with what
  pytest made them;
* how many failures pytest reported, counted the way the session counts them, beside the status
  it ends with;
* the report pytest wrote (its hash), so a report rewritten later does not match.

Its state lives in closures made by ``pytest_configure``, which the hook accepts once per process.
"""

import os
import sys

_TOPS = ("_pytest", "pytest", "unittest", "pluggy")


def unittest_skip():
    import unittest

    return unittest.SkipTest


def pytest_configure(config):  # noqa: C901 - one closure on purpose: its state must not be reachable by name
    import pytest

    audit = sys.audit
    roots = tuple(r for r in (os.environ.get("BOSUN_RUNNER_GUARD") or "||||").split("|")[3].split(":") if r)

    def rel(path):
        path = str(path)
        for root in roots:
            if path.startswith(root + "/"):
                return path[len(root) + 1:]
        return None

    def module_file(plugin):
        path = getattr(plugin, "__file__", None)
        if not isinstance(path, str):
            mod = sys.modules.get(getattr(type(plugin), "__module__", "") or "")
            path = getattr(mod, "__file__", None)
        return path if isinstance(path, str) else None

    manager = config.pluginmanager
    outside = []
    for _name, plugin in manager.list_name_plugin():
        path = module_file(plugin)
        mod = getattr(plugin, "__name__", None)
        if path and rel(path) is None and isinstance(mod, str):
            outside.append(mod)
    audit("bosun.runner_guard", "configure", {"plugins": len(outside)})
    audit("bosun.runner_guard", "runner_modules", outside)

    def tree_plugins():
        conftests = getattr(manager, "_conftest_plugins", set())
        found = []
        for name, plugin in manager.list_name_plugin():
            path = module_file(plugin)
            where = rel(path) if path else None
            if where is not None:
                found.append({"file": where, "name": str(name)[:120], "conftest": plugin in conftests})
        for caller in list(vars(relay).values()):
            for impl in getattr(caller, "get_hookimpls", lambda: [])():
                code = getattr(impl.function, "__code__", None)
                where = rel(code.co_filename) if code is not None else None
                entry = {"file": where, "name": str(impl.plugin_name)[:120], "conftest": impl.plugin in conftests}
                if where is not None and entry not in found:
                    found.append(entry)
        for _plugin, dist in manager.list_plugin_distinfo():
            try:
                location = rel(dist.locate_file(""))
            except Exception:  # noqa: BLE001 - a distribution that cannot say where it is is not in the tree
                location = None
            if location is not None:
                found.append({"file": location, "name": str(getattr(dist, "project_name", "?")), "dist": True})
        return found[:30]

    def raised_at(tb, own):
        """The tree frame nearest to where an exception was raised, unless it is the test's own file."""
        place = None
        while tb is not None:
            where = rel(tb.tb_frame.f_code.co_filename)
            if where is not None:
                place = where + ":" + str(tb.tb_lineno)
            tb = tb.tb_next
        if place is None or (own and place.rsplit(":", 1)[0] == own):
            return None
        return place

    from _pytest.outcomes import Exit, OutcomeException

    outcomes = (OutcomeException, Exit, unittest_skip())

    def is_runner_exception(exc_type):
        # pytest's outcome classes say their module is "builtins": ask for the class, not its name.
        try:
            return issubclass(exc_type, outcomes) or (getattr(exc_type, "__module__", "") or "").split(".", 1)[0] in _TOPS
        except TypeError:
            return False

    def outcome(kind, test, when, place):
        audit("bosun.runner_guard", "outcome", {"outcome": kind, "test": str(test)[:200], "when": when, "at": place})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        yield
        excinfo = call.excinfo
        if excinfo is not None and is_runner_exception(excinfo.type):
            place = raised_at(excinfo.tb, rel(getattr(item, "path", getattr(item, "fspath", ""))))
            if place:
                outcome(excinfo.typename, item.nodeid, call.when, place)

    def pytest_collectreport(report):
        if report.failed:
            failed[0] += 1
        longrepr = report.longrepr
        if report.outcome == "skipped" and isinstance(longrepr, tuple) and len(longrepr) == 3:
            place = rel(longrepr[0])
            if place is not None and place != rel(os.path.join(str(config.rootpath), report.fspath or "")):
                outcome("Skipped", report.nodeid, "collect", place + ":" + str(longrepr[1]))

    def pytest_keyboard_interrupt(excinfo):
        if is_runner_exception(excinfo.type):
            place = raised_at(excinfo.tb, None)
            if place:
                outcome(excinfo.typename, "", "session", place)

    failed = [0]  # what Session.testsfailed should say, counted the way it counts

    def pytest_runtest_logreport(report):
        if report.failed and not hasattr(report, "wasxfail"):
            failed[0] += 1
        if report.when == "teardown":
            audit("bosun.runner_guard", "checkpoint", "test")

    relay = manager.hook
    relay_before = dict(vars(relay))

    def check_items(item, when):
        """The hook callers pytest calls, and this test's own methods and function, as pytest made them."""
        found = []
        live = vars(relay)
        for name, caller in relay_before.items():
            if live.get(name) is not caller:
                found.append(("pytest hook " + name, live.get(name)))
        own = vars(item)
        for name, value in own.items():
            if callable(value) and not isinstance(value, type) and any(name in vars(c) for c in type(item).__mro__):
                found.append(("the method " + name + " of " + item.nodeid, value))
        function = own.get("_obj")
        code = getattr(function, "__code__", None)
        if code is not None and rel(code.co_filename) != rel(getattr(item, "path", "")):
            found.append(("the test function of " + item.nodeid, function))
        if found:
            audit("bosun.runner_guard", "replaced", {"when": when, "items": found[:10]})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        check_items(item, "test")
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(item):
        audit("bosun.runner_guard", "checkpoint", "call")  # right before pytest runs the test itself
        yield

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(session, config, items):
        modules = {}
        for item in items:
            module = getattr(item, "module", None) if hasattr(type(item), "module") else None
            if module is not None:
                modules[id(module)] = (getattr(module, "__name__", "?"), module)
        audit("bosun.runner_guard", "watch", list(modules.values())[:500])

    def pytest_sessionstart(session):
        audit("bosun.runner_guard", "session", {"worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
                                                 "plugins": tree_plugins()})

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_sessionfinish(session, exitstatus):
        audit("bosun.runner_guard", "finish", {"exitstatus": int(exitstatus), "collected": session.testscollected,
                                                "failed": session.testsfailed, "seen_failed": failed[0],
                                                "plugins": tree_plugins()})
        audit("bosun.runner_guard", "checkpoint", "sessionfinish")
        yield
        xml = getattr(config.option, "xmlpath", None)
        if xml:
            import hashlib

            try:
                with open(xml, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
            except OSError:
                digest = None
            audit("bosun.runner_guard", "report", {"path": os.path.abspath(xml), "sha256": digest})

    class Guard:
        pass

    guard = Guard()
    for hook in (pytest_runtest_makereport, pytest_collectreport, pytest_keyboard_interrupt, pytest_runtest_logreport,
                 pytest_sessionstart, pytest_sessionfinish, pytest_runtest_protocol, pytest_runtest_call,
                 pytest_collection_modifyitems):
        setattr(guard, hook.__name__, hook)
    manager.register(guard, "bosun-runner-guard-session")
