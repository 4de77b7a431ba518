"""The fail-to-pass proof, judged from per-test outcomes (pure: the verification doc in, the proof out).

The runs come from the proof matrix (isolation/matrix.py): the start tree (``baseline``), the change
(the doc itself), the change's code with the original tests put back (``heldout``, when the change
touched tests: the proof is taken there, so a rewritten test proves nothing) and the start tree's
code with the change's tests (``own``).

* **The task's tests** (``proven_by: task_tests``): a verify command failed on the start tree, every
  one passes after, and every test that failed before is reported *passed* after: a test skipped,
  xfailed, deselected or missing after was not fixed. A module that failed to import before is fixed
  when its tests ran and none failed.
* **The worker's own tests** (``proven_by: own_tests``): the task's tests already passed before, the
  original tests still pass (under ``tests: rewrite`` they may fail: a person reads that apart), and
  tests the change adds or edits fail on the start tree's code and pass on the change. Tests that failed there only because they use what the change adds prove
  nothing (``own_tests`` lists them with ``kind: new_name``; the verdict makes that its own reason).
* A command whose runner gives per-test reports (pytest, ``python -m unittest``, a ``junit:`` entry)
  proves nothing when it gave none, or ran no tests. A command that never had one (``make check``,
  a script) is judged by its exit code, as the sentence says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bosun.core.outcomes import command_passed
from bosun.core.quoting import quoted

TASK_TESTS, OWN_TESTS = "task_tests", "own_tests"
BEHAVIOUR, NEW_NAME = "behaviour", "new_name"  # bosun.gates.owntests's kinds
MAX_LISTED = 200
# What the proof names when the change edited tests and the originals were put back for it.
ORIGINALS = "the original tests (put back as they were before the change)"

Doc = Mapping[str, Any]


def proof(verification: Doc, rewrite: bool = False) -> dict[str, Any]:
    """``{proven, proven_by, proof, fail_to_pass, pass_to_fail, own_tests}`` of a verification doc.
    ``rewrite``: the task says ``tests: rewrite``, so the original tests may fail on the change (a
    person reads that, ``TESTS_REWRITTEN``) without taking the worker's own tests' proof away."""
    baseline = verification.get("baseline")
    if not isinstance(baseline, Mapping) or not baseline.get("commands"):
        return _out(None, "no baseline was taken: bosun cannot say whether the tests failed before this change")
    before: Sequence[Doc] = baseline["commands"]
    held = verification.get("heldout")
    after: Sequence[Doc] = (held if isinstance(held, Mapping) else verification).get("commands") or []
    tests = ORIGINALS if isinstance(held, Mapping) else "the tests"  # the sentence says which tests it means
    flips = _flips(before, after)
    silent = _silent([*(verification.get("commands") or []), *after])
    if not any(not passed(c) for c in before):
        return _own_proof(verification, held, silent, rewrite) or _out(
            False, f"{tests} already passed before this change: they do not prove it"
            + (f"; and {silent}" if silent else ""), flips=flips)
    if not after or not all(passed(c) for c in after):
        still = f"{tests} failed before this change and still fail after it"
        if tests == ORIGINALS and verification.get("passed"):
            still += " (the change's own version of the tests passes)"
        return _out(False, still, flips=flips)
    if silent:
        return _out(False, f"{tests} failed before this change, but after it {silent}", flips=flips)
    unfixed = [u for b, a in zip(before, after, strict=False) if not passed(b) for u in _unfixed(b, a)]
    if unfixed:
        return _out(False, f"{tests} failed before this change, but these did not pass after it: "
                    + _listed(unfixed), flips=flips)
    return _out(True, f"{tests} failed before this change and pass after it" + _by_exit_code(before, after),
                TASK_TESTS, flips)


def passed(cmd: Doc) -> bool:
    return command_passed(cmd)


def _out(proven: bool | None, sentence: str, proven_by: str | None = None,
         flips: dict[str, list[str]] | None = None, **more: Any) -> dict[str, Any]:
    return {"proven": proven, "proven_by": proven_by, "proof": sentence, **(flips or {}), **more}


def _report(cmd: Doc) -> Doc | None:
    tests = cmd.get("tests")
    return tests if isinstance(tests, Mapping) else None


def _silent(commands: Sequence[Doc]) -> str:
    """What a command whose runner reports each test did not say: no report, or no test run."""
    for cmd in commands:
        if not cmd.get("runner") or not passed(cmd):
            continue
        report, label = _report(cmd), _label(cmd)
        if report is None:
            return f"`{label}` gave no per-test report, so bosun cannot tell which tests ran"
        if not report.get("count"):
            return f"`{label}` ran no tests"
    return ""


def _unfixed(before: Doc, after: Doc) -> list[str]:
    """What failed in ``before`` and did not pass in ``after``, each with what happened to it."""
    b, a = _report(before), _report(after)
    if b is None or a is None:
        return []  # no per-test report on one side (a plain command): its exit code decides
    if not b.get("ids", True) or not a.get("ids", True):
        return _unfixed_counts(b, a, _label(after))
    outcome = {t: k for k in ("skipped", "failed", "passed") for t in a.get(k) or ()}
    out = [f"{_quote(t)} ({outcome.get(t, 'missing')})" for t in b.get("failed") or () if outcome.get(t) != "passed"]
    for path in b.get("collect_errors") or ():
        mine = [k for t, k in outcome.items() if t.startswith(f"{path}::")]
        if "passed" not in mine or "failed" in mine or path in (a.get("collect_errors") or ()):
            out.append(f"{_quote(path)} (did not import before; no test of it passed after)")
    return out


def _unfixed_counts(b: Doc, a: Doc, label: str) -> list[str]:
    """A runner that gave counts only (unittest without ``-v``): more skipped than before may be a
    failing test skipped rather than fixed."""
    skipped_before, skipped_after = (b.get("counts") or {}).get("skipped", 0), (a.get("counts") or {}).get("skipped", 0)
    if skipped_after > skipped_before:
        return [f"`{label}` skipped {skipped_after} test(s) where it skipped {skipped_before} before, and reports no "
                "test names to tell which"]
    return []


def _flips(before: Sequence[Doc], after: Sequence[Doc]) -> dict[str, list[str]]:
    """Test ids that went fail-to-pass and pass-to-fail, where both runs named tests."""
    f2p: list[str] = []
    p2f: list[str] = []
    for b, a in zip(before, after, strict=False):
        rb, ra = _report(b), _report(a)
        if rb is None or ra is None:
            continue
        failed_before, passed_after = set(rb.get("failed") or ()), set(ra.get("passed") or ())
        f2p += sorted(failed_before & passed_after)
        for path in rb.get("collect_errors") or ():
            f2p += sorted(t for t in passed_after if t.startswith(f"{path}::"))
        p2f += sorted(set(rb.get("passed") or ()) & set(ra.get("failed") or ()))
    return {"fail_to_pass": f2p[:MAX_LISTED], "pass_to_fail": p2f[:MAX_LISTED]}


def _by_exit_code(before: Sequence[Doc], after: Sequence[Doc]) -> str:
    plain = [_label(a) for b, a in zip(before, after, strict=False)
             if not passed(b) and (_report(b) is None or _report(a) is None)]
    if not plain:
        return ""
    return (f" (by exit code: {', '.join(f'`{p}`' for p in plain[:3])} reports no per-test outcomes, so bosun "
            "compared exit codes)")


def _own_proof(verification: Doc, held: Any, silent: str, rewrite: bool) -> dict[str, Any] | None:
    """The proof by the worker's own tests, or why they prove nothing; None when it has none."""
    own = verification.get("own")
    tests = [t for t in ((own or {}).get("tests") or []) if isinstance(t, Mapping)] if isinstance(own, Mapping) else []
    if not tests or not verification.get("passed"):
        return None
    if isinstance(held, Mapping) and not all(passed(c) for c in held.get("commands") or []) and not rewrite:
        return None  # the original tests fail with this change: TESTS_REWRITTEN refuses it
    if silent:
        return _out(False, f"the tests already passed before this change, and {silent}")
    listed = [dict(t) for t in tests]
    shown = [t for t in listed if t.get("kind") == BEHAVIOUR]
    if shown:
        ids = [str(t["id"]) for t in shown]
        return _out(True, "the worker's own tests fail on the start tree's code and pass with the change: "
                    + _listed([_quote(i) for i in ids]), OWN_TESTS, {"fail_to_pass": ids, "pass_to_fail": []},
                    own_tests=listed)
    first = listed[0]
    return _out(False, "the tests already passed before this change, and the worker's own tests fail without "
                f"it only because they use what it adds ({_quote(str(first['id']))}: {_quote(str(first.get('why') or ''))}): "
                "they prove nothing about the task", flips={"fail_to_pass": [], "pass_to_fail": []},
                own_tests=listed)


def _label(cmd: Doc) -> str:
    return " ".join(str(a) for a in cmd.get("argv") or [])[:120]


def _quote(text: str) -> str:
    """A test id is the worker's text: quoted as data, bounded (core/quoting.py)."""
    return quoted(text, 160)


def _listed(items: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
