"""RUNNER_TAMPERED: what the runner guard saw the code under test do to the test runner while the
verify commands ran (``commands[i].runner`` of the verification, written by
``isolation/runner_guard``; also the held-out run's).

The guard records facts; this gate decides what they mean for this change. Code is the change's when
the file is one the change adds or edits; it is test code when it is a test file, lives under a test
directory, or is a conftest (the test gates judge those). Refused:

* the runner's objects (``Function.runtest``, a pluggy hook caller, a built-in) replaced by code of the
  change, still in place after a test's teardown or at the end of the session;
* an outcome the runner raises (skip, xfail, fail, exit, unittest's SkipTest) raised from the
  change's code outside the tests;
* ``__code__``, ``__class__`` or defaults of the runner's objects (or of another file's functions, a
  test's included) reassigned, a test module written into, the process signalled, the guard's
  variable rewritten, the test report written, the guard's channel, files or events forged or
  attacked, by the change's code;
* the hook callers pytest calls, a test's own methods or its test function replaced by the change's
  code;
* a pytest plugin loaded from the change (a module of the tree that is not a conftest, or a
  ``*.dist-info`` of the tree naming one), or a module the change adds loaded in place of one of the
  verify interpreter's environment (MODULE_SHADOWED names it too);
* a test process whose pytest session did not finish (``os._exit``, a signal) while the command
  reported success, whose exit status is not the one pytest finished with, or whose session ended
  with status 0 after pytest reported failures; a report pytest wrote that was rewritten afterwards.

A reason for review (:data:`INTROSPECTED`): the change's code reading other frames, walking the
garbage collector, reaching raw memory, installing a trace hook, running code built from strings,
listing its own file descriptors, rewriting the runner's environment variables for the processes
it starts (tools that run Python do that honestly), or the runner's objects replaced by something
that names no file. Code the start tree already had
is the project's own: what it does is judged only when it is one of the refusals above and the
change's code called it (then it is a reason for review); a helper of the project that looks at its
caller's frame (boltons' ``make_sentinel``) is not the change's doing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bosun.core.changes import GateResult
from bosun.gates.context import GateInputs, listing
from bosun.gates.shadowing import loaded_in_place
from bosun.gates.testpaths import in_test_dir, is_harness, is_test_file

RUNNER_TAMPERED = "RUNNER_TAMPERED"
INTROSPECTED = "RUNNER_INTROSPECTED"

# Events of the guard that no code has an honest reason to cause, whoever's it is.
_GUARD_EVENTS = frozenset({"forged_guard", "guard_copy", "guard_attacked"})


def check_runner_tamper(inputs: GateInputs) -> GateResult:
    hard, soft = runner_findings(_commands(inputs.verification), _changed(inputs), _added(inputs))
    if hard:
        return GateResult(RUNNER_TAMPERED, False, f"the code under test changed how the tests ran: {listing(hard)}; "
                          "a result the graded code helped decide proves nothing")
    if soft:
        return GateResult(RUNNER_TAMPERED, True, f"the code under test looked into the test run: {listing(soft)}",
                          review=[{"code": INTROSPECTED, "sentence": "while the tests ran, code the change added "
                                   f"reached into the running test process ({listing(soft, 3)}); bosun cannot tell "
                                   "whether that changed a result, so read it"}])
    guarded = sum(len(c["guard"].get("processes") or []) for c in _commands(inputs.verification))
    if not guarded:
        return GateResult(RUNNER_TAMPERED, True, "no Python process of the verify commands ran under the runner guard")
    return GateResult(RUNNER_TAMPERED, True, f"the test runner ran untouched ({guarded} guarded process(es))")


def _commands(verification: dict[str, Any]) -> list[dict[str, Any]]:
    runs = [verification, verification.get("heldout") or {}]
    return [c for run in runs for c in run.get("commands") or [] if isinstance(c.get("guard"), dict)]


def _changed(inputs: GateInputs) -> set[str]:
    return {c.path for c in inputs.changes if c.status[:1] != "D"}


def _added(inputs: GateInputs) -> set[str]:
    return {c.path for c in inputs.changes if c.status[:1] in ("A", "R", "C")}


def is_test_code(path: str) -> bool:
    return is_test_file(path) or in_test_dir(path) or is_harness(path)


def runner_findings(commands: Iterable[dict[str, Any]], changed: set[str],
                    added: set[str] | None = None) -> tuple[list[str], list[str]]:
    """``(refusals, reasons for review)`` in words, from the guard's records of ``commands``.
    ``changed``: paths the change adds or edits; ``added``: those it adds (or renames into place)."""
    hard: list[str] = []
    soft: list[str] = []
    for cmd in commands:
        runner = cmd.get("guard") or {}
        passed = cmd.get("exit_code") == 0 and not cmd.get("timed_out")
        hard += _lifecycle(runner, cmd.get("exit_code"), passed)
        hard += loaded_in_place(runner, added or set())
        for finding in runner.get("findings") or []:
            verdict = _judge(finding, changed)
            if verdict is not None:
                (hard if verdict[0] else soft).append(verdict[1])
        for plugin in runner.get("plugins") or []:
            where = str(plugin.get("file") or "")
            if not plugin.get("conftest") and not is_test_code(where) and _from_change(where, changed):
                hard.append(f"pytest loaded a plugin from the change ({where})")
    return list(dict.fromkeys(hard)), list(dict.fromkeys(soft))


def _lifecycle(runner: dict[str, Any], exit_code: int | None, passed: bool) -> list[str]:
    out = []
    if runner.get("forged"):
        out.append(f"{runner['forged']} record(s) on bosun's guard channel were not written by bosun's guard")
    if runner.get("overflow"):
        out.append("bosun's guard channel was flooded")
    for name in runner.get("reports_rewritten") or []:
        out.append(f"the test report {name} was rewritten after pytest wrote it")
    for proc in runner.get("processes") or []:
        finish = proc.get("finish")
        if passed and proc.get("session") and not proc.get("worker") and not finish:
            out.append(f"pytest in process {proc.get('pid')} ended before its session finished, yet the command "
                       "reported success")
        elif finish and finish.get("exitstatus") == 0 and (finish.get("seen_failed") or 0) > 0:
            out.append(f"pytest reported {finish['seen_failed']} failure(s) but its session ended with status 0")
        elif proc.get("top") and finish and isinstance(finish.get("exitstatus"), int) and exit_code is not None \
                and exit_code != finish["exitstatus"]:
            out.append(f"pytest finished with status {finish['exitstatus']} but its process exited with {exit_code}")
        elif passed and proc.get("top") and proc.get("started") and not proc.get("exited") and not proc.get("session"):
            out.append(f"the verify command's Python process ({proc.get('pid')}) ended without finishing (os._exit "
                       "or a signal), yet reported success")
    return out


def _judge(finding: dict[str, Any], changed: set[str]) -> tuple[bool, str] | None:
    kind = finding.get("kind")
    if kind == "integrity":
        return _integrity(finding, changed)
    if kind == "outcome":
        place = str(finding.get("at") or "")
        file = place.rsplit(":", 1)[0]
        if file in changed and not is_test_code(file):
            test = f" in {finding['test']}" if finding.get("test") else ""
            return True, f"{place} raised the runner's {finding.get('outcome')}{test}"
        return None
    if kind == "truncated":
        return None
    frames = [str(f) for f in finding.get("at") or []]
    what = str(finding.get("what") or finding.get("event") or "")
    if finding.get("event") in _GUARD_EVENTS:
        return True, f"{frames[0] + ' ' if frames else ''}{what}"
    if not frames:
        return None
    first = frames[0].rsplit(":", 1)[0]
    if is_test_code(first):
        return None
    if first in changed:
        return bool(finding.get("hard")), f"{frames[0]} {what}"
    if not finding.get("hard"):
        return None  # the project's own code looking at its caller (a sentinel naming its module ...)
    through = next((f for f in frames[1:] if f.rsplit(":", 1)[0] in changed and not is_test_code(f.rsplit(":", 1)[0])), None)
    if through is not None:
        return False, f"{frames[0]} {what} (called from {through})"
    return None


def _integrity(finding: dict[str, Any], changed: set[str]) -> tuple[bool, str] | None:
    target, origin = str(finding.get("target")), finding.get("origin")
    when = {"test": "after a test", "call": "when a test ran", "sessionfinish": "at the end of the session",
            "exit": "at exit"}.get(str(finding.get("when")), "")
    if target.startswith("pytest hook "):  # pluggy never replaces the callers pytest calls
        return True, f"{target} was replaced {when}".strip()
    if target.startswith(("testmodule:", "the test function of ")):
        file = str(origin or "").rsplit(":", 1)[0]
        if file in changed and not is_test_code(file):
            return True, f"{target.removeprefix('testmodule:')} was replaced by {origin} {when}".strip()
        return None
    builtin = target.startswith("builtins.")
    if origin == "runner":  # one of the runner's own objects, put where the tests' code looks things up
        return (True, f"{target} was replaced by an object of the test runner {when}".strip()) if builtin else None
    if origin == "":  # the environment's own code (pytest's legacypath undoing its patches ...)
        return (False, f"{target} was replaced {when}".strip()) if builtin else None
    if origin is None or origin == "deleted":
        how = "deleted" if origin == "deleted" else "replaced by code that names no file"
        return False, f"{target} was {how} {when}".strip()
    file = str(origin).rsplit(":", 1)[0]
    if file in changed:
        return True, f"{target} was replaced by {origin} {when}".strip()
    return None


def _from_change(path: str, changed: set[str]) -> bool:
    return path in changed or any(c.startswith(path.rstrip("/") + "/") for c in changed)
