"""The one verdict, decided from a run's record (engine/verdict.py), and the held-out originals'
subject rule (gates/subjects.py)."""

from __future__ import annotations

import ast

import pytest

from bosun.engine import verdict
from bosun.gates.subjects import strip_tests_of
from bosun.store.run import Run

GREEN = [{"code": "VERIFY_FAILED", "ok": True, "detail": "1 command(s) passed"}]
PROVEN = {"passed": True, "proven": True, "proof": "the tests failed before this change and pass after it"}
TASK = {"mode": "code", "verify": [{"run": ["pytest"]}], "proof": "required"}


def decide(state: str = "verified", task: dict | None = None, gates: list | None = None, ver: dict | None = PROVEN,
           data: dict | None = None) -> dict | None:
    return verdict.decide(Run.from_row({"state": state, "data": data or {}}), task or TASK, GREEN if gates is None else gates, ver)


def test_a_proven_green_change_is_landable():
    assert decide() == {"outcome": "landable", "reasons": [], "acknowledged": None}


@pytest.mark.parametrize("state", ["prepared", "working", "worked", "interrupted"])
def test_no_verdict_before_the_run_is_judged(state):
    assert decide(state) is None


@pytest.mark.parametrize(("ver", "sentence"), [
    ({"passed": True, "proven": False, "proof": "the tests already passed before this change"}, "already passed"),
    ({"passed": True, "proven": None, "proof": "no baseline was taken"}, "no baseline"),
])
def test_an_unproven_change_needs_review(ver, sentence):
    out = decide(ver=ver)
    assert out["outcome"] == "needs_review" and verdict.codes(out) == ["NOT_PROVEN"]
    assert sentence in out["reasons"][0]["sentence"]
    assert decide(task={**TASK, "proof": "not-required"}, ver=ver)["outcome"] == "landable"


def test_no_verify_commands_is_never_verified_whatever_proof_says():
    for proof in ("required", "not-required"):
        out = decide(task={"mode": "code", "verify": [], "proof": proof}, ver={"passed": None})
        assert verdict.codes(out) == ["NOT_VERIFIED"]
    assert decide(task={"mode": "explore", "verify": []}, ver=None)["outcome"] == "landable"


def test_a_red_gate_refuses_and_outranks_every_review_reason():
    gates = [{"code": "TEST_WEAKENED", "ok": False, "detail": "tests weakened: x"},
             {"code": "LOCKED_PATH_CHANGED", "ok": True, "detail": "", "review": [{"code": "LOCKED_PATH_PERMITTED",
                                                                                    "sentence": "s"}]}]
    out = decide("rejected", gates=gates, ver={"passed": True, "proven": False})
    assert out["outcome"] == "refused" and verdict.codes(out) == ["TEST_WEAKENED"]


def test_failed_and_cancelled_runs_are_refused_with_their_error():
    out = decide("failed", data={"error": {"code": "RATE_LIMITED", "message": "429 from the provider"}}, ver=None)
    assert out == {"outcome": "refused", "reasons": [{"code": "RATE_LIMITED", "sentence": "429 from the provider"}],
                   "acknowledged": None}
    assert verdict.codes(decide("cancelled", ver=None)) == ["CANCELLED"]


def test_gate_review_findings_and_waivers_are_reasons():
    gates = [*GREEN, {"code": "TEST_WEAKENED", "ok": True, "detail": "", "review": [
        {"code": "EXPECTED_VALUE_CHANGED", "sentence": "one"}]},
        {"code": "SCOPE", "ok": False, "waived": True, "waiver_reason": "on purpose", "detail": ""}]
    out = decide(gates=gates)
    assert verdict.codes(out) == ["EXPECTED_VALUE_CHANGED", "WAIVED"]
    assert out["reasons"][1]["sentence"] == "SCOPE was waived: on purpose"


def test_an_acknowledgment_counts_only_for_the_reasons_it_named():
    ver = {"passed": True, "proven": False, "proof": "p"}
    ack = {"by": "script", "codes": ["NOT_PROVEN"], "at": 1.0}
    out = decide(ver=ver, data={"acknowledged": ack})
    assert out["acknowledged"] == ack and verdict.may_land(out) and not verdict.waits_for_a_person(out)
    gates = [*GREEN, {"code": "X", "ok": True, "review": [{"code": "TEST_DATA_CHANGED", "sentence": "s"}]}]
    stale = decide(ver=ver, gates=gates, data={"acknowledged": ack})
    assert stale["acknowledged"] is None and verdict.waits_for_a_person(stale) and not verdict.may_land(stale)
    assert verdict.missing_acknowledgments(stale, ["not_proven"]) == ["TEST_DATA_CHANGED"]


OWN = {"passed": True, "proven": True, "proven_by": "own_tests", "proof": 'own tests: "t.py::test_new"',
       "own_tests": [{"id": "t.py::test_new", "kind": "behaviour", "source": "...", "untrusted": True}]}
REVIEW = {"profile": "xreviewer", "rounds": 1}


def cleared_review(tree: str = "T", status: str = "clean", findings: list | None = None) -> dict:
    return {"rounds": [{"tree": tree, "status": status, "findings": findings or []}]}


def test_own_tests_need_a_reader_and_a_cross_review_that_read_the_change_is_one():
    assert verdict.codes(decide(ver=OWN)) == ["OWN_TESTS_PROOF"]
    run = Run.from_row({"state": "verified", "data": {"review_config": REVIEW, "verified_tree": "T"}})
    assert verdict.decide(run, TASK, GREEN, OWN, cross_review=cleared_review())["outcome"] == "landable"
    minor = cleared_review(status="findings", findings=[{"severity": "P3", "path": "a.py", "line": 1}])
    assert verdict.decide(run, TASK, GREEN, OWN, cross_review=minor)["outcome"] == "landable"
    # A review of another tree, an open P1, or none at all clears nothing.
    for record in (cleared_review(tree="OTHER"), {"rounds": []},
                   cleared_review(status="findings", findings=[{"severity": "P1", "path": "a.py", "line": 1}])):
        out = verdict.decide(run, TASK, GREEN, OWN, cross_review=record)
        assert "OWN_TESTS_PROOF" in verdict.codes(out), record


def test_own_tests_that_prove_nothing_are_their_own_reason_no_review_clears():
    trivial = {**OWN, "proven": False, "proven_by": None, "proof": "they prove nothing about the task",
               "own_tests": [{**OWN["own_tests"][0], "kind": "new_name"}]}
    run = Run.from_row({"state": "verified", "data": {"review_config": REVIEW, "verified_tree": "T"}})
    out = verdict.decide(run, TASK, GREEN, trivial, cross_review=cleared_review())
    assert verdict.codes(out) == ["OWN_TESTS_TRIVIAL"]
    assert decide(task={**TASK, "proof": "not-required"}, ver=trivial)["outcome"] == "landable"


def test_one_line_says_the_outcome_and_the_codes():
    assert verdict.one_line(decide()) == "landable"
    assert verdict.one_line(decide(ver={"passed": True, "proven": False})) == "needs review (NOT_PROVEN)"
    assert verdict.one_line(None) == "not judged yet"


ORIGINAL = '''from calc import add, old_add, sub
import calc


def test_add():
    assert add(2, 3) == 5


@pytest.mark.parametrize("a", [1, 2])
def test_old_add(a):
    assert old_add(a, a) == 2 * a


class TestCalc:
    def test_alias(self):
        assert calc.old_add(1, 1) == 2

    def test_sub(self):
        assert sub(3, 1) == 2
'''


def test_only_the_tests_of_a_removed_subject_are_left_out():
    text, taken = strip_tests_of(ORIGINAL, {"old_add"})
    assert taken == ["test_old_add", "TestCalc::test_alias"]
    ast.parse(text)  # still a module pytest can collect
    assert len(text.splitlines()) == len(ORIGINAL.splitlines())  # line numbers in failures stay true
    assert "from calc import add, sub\n" in text and "old_add" not in text
    assert "def test_add():" in text and "def test_sub(self):" in text


def test_nothing_removed_or_unparsable_text_comes_back_unchanged():
    assert strip_tests_of(ORIGINAL, set()) == (ORIGINAL, [])
    assert strip_tests_of(ORIGINAL, {"nothing_uses_this"}) == (ORIGINAL, [])
    assert strip_tests_of("def test_x(:\n", {"x"}) == ("def test_x(:\n", [])
