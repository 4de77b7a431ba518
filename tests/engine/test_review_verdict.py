"""What a cross-review record means for the verdict (engine/review_verdict.py, through verdict.decide),
and how a reviewer's answer is judged (engine/review_findings.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bosun.engine import review_findings as rf
from bosun.engine import verdict
from bosun.store.run import Run

TREE = "a" * 40
RID = "20261203-120000-a1b2c3"
CONFIG = {"profile": "rev", "rounds": 2, "block_on": None}
PROVEN = {"passed": True, "proven": True}
TASK = {"mode": "code", "verify": [{"run": ["pytest"]}], "proof": "required"}
GREEN = [{"code": "VERIFY_FAILED", "ok": True, "detail": ""}]


def finding(sev: str = "P1", citation: str | None = None, **over: object) -> dict:
    return {"severity": sev, "path": "src/calc.py", "line": 2, "claim": "wrong for 7", "suggested_fix": None,
            "citation": citation, **over}


def rounds(*entries: dict) -> dict:
    return {"rounds": [{"round": i + 1, "tree": TREE, "status": "findings", "findings": [], **e}
                       for i, e in enumerate(entries)]}


def decide(record: dict | None, config: dict | None = CONFIG, tree: str = TREE, state: str = "verified") -> dict | None:
    data = {"verified_tree": tree, **({"review_config": config} if config else {})}
    return verdict.decide(Run.from_row({"id": RID, "state": state, "data": data}), TASK, GREEN, PROVEN, record)


def codes(v: dict | None) -> tuple[str, list[str]]:
    assert v is not None
    return v["outcome"], [r["code"] for r in v["reasons"]]


def test_a_cleared_review_is_landable_and_p2_p3_are_not_reasons():
    assert codes(decide(rounds({"findings": [finding("P2"), finding("P3")]}))) == ("landable", [])


def test_no_review_asked_for_changes_nothing():
    assert codes(decide(None, config=None)) == ("landable", [])
    assert codes(decide(None, config={"profile": "rev", "rounds": 0})) == ("landable", [])


@pytest.mark.parametrize(("record", "tree"), [(None, TREE), ({"rounds": []}, TREE), (rounds({}), "b" * 40)])
def test_a_review_that_did_not_read_the_verified_tree_needs_a_person(record, tree):
    assert codes(decide(record, tree=tree)) == ("needs_review", ["CROSS_REVIEW_MISSING"])


def test_the_last_round_decides():
    cleared = rounds({"findings": [finding("P0")]}, {"findings": []})
    assert codes(decide(cleared)) == ("landable", [])
    reopened = rounds({"findings": []}, {"findings": [finding("P1")]})
    outcome, found = codes(decide(reopened))
    assert (outcome, found) == ("needs_review", ["CROSS_REVIEW_OPEN"])
    assert "after 2 review rounds" in decide(reopened)["reasons"][0]["sentence"]  # type: ignore[index]


@pytest.mark.parametrize("status", ["failed", "unparseable"])
def test_a_reviewer_that_did_not_finish_is_never_a_pass(status):
    v = decide(rounds({"status": status, "error": "the reviewer timeout: 600 s"}))
    assert codes(v) == ("needs_review", ["CROSS_REVIEW_FAILED"])
    assert "timeout" in v["reasons"][0]["sentence"]  # type: ignore[index]


def test_invented_citations_are_a_reason_even_on_minor_findings():
    v = decide(rounds({"findings": [finding("P3", citation="src/calc.py:999 is out of range (6 lines)")]}))
    assert codes(v) == ("needs_review", ["CROSS_REVIEW_CITATION"])
    assert "src/calc.py:999" in v["reasons"][0]["sentence"] or "out of range" in v["reasons"][0]["sentence"]  # type: ignore[index]


@pytest.mark.parametrize(("block_on", "sev", "outcome"), [
    ("P1", "P1", "refused"), ("P1", "P0", "refused"), ("P0", "P1", "needs_review"), ("P2", "P2", "refused"),
    ("P2", "P3", "landable"),
])
def test_block_on_refuses_findings_that_severe_or_worse(block_on, sev, outcome):
    v = decide(rounds({"findings": [finding(sev)]}), config={**CONFIG, "block_on": block_on})
    assert codes(v)[0] == outcome


def test_a_reviewer_that_wrote_is_refused():
    assert codes(decide(rounds({"status": "changed_tree"}))) == ("refused", ["CROSS_REVIEW_CHANGED_TREE"])


def test_a_red_gate_outranks_the_review():
    run = Run.from_row({"id": RID, "state": "rejected", "data": {"verified_tree": TREE, "review_config": CONFIG}})
    v = verdict.decide(run, TASK, [{"code": "LOCKED_PATH_CHANGED", "ok": False, "detail": "tests/x"}], PROVEN,
                       rounds({"findings": [finding("P0")]}))
    assert codes(v) == ("refused", ["LOCKED_PATH_CHANGED"])


def test_the_verdict_reads_the_record_from_the_run_directory(isolated_home):
    from bosun.core.paths import run_dir

    rdir = run_dir(RID)
    rdir.mkdir(parents=True)
    (rdir / "cross_review.json").write_text(json.dumps(rounds({"findings": [finding("P1")]})))
    run = Run.from_row({"id": RID, "state": "verified", "data": {"verified_tree": TREE, "review_config": CONFIG}})
    assert codes(verdict.decide(run, TASK, GREEN, PROVEN)) == ("needs_review", ["CROSS_REVIEW_OPEN"])


# --- the reviewer's answer


def test_an_answer_is_judged_against_the_tree(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    answer = "Review:\n" + json.dumps({"findings": [
        {"severity": "p1", "path": "src/calc.py", "line": 2, "claim": "bad", "suggested_fix": "good"},
        {"severity": "P2", "path": "src/calc.py:9", "claim": "too far"},
        {"severity": "urgent", "path": "src/nope.py", "line": 1, "claim": "made up"},
        {"severity": "P3", "claim": "no place"},
    ], "summary": "four"})
    judged = rf.judge_answer(answer, tmp_path)
    assert judged["status"] == rf.FINDINGS and judged["summary"] == "four"
    first, far, unknown, nowhere = judged["findings"]
    assert (first["severity"], first["citation"]) == ("P1", None)
    assert far["line"] == 9 and "out of range" in far["citation"]
    assert unknown["severity"] == "P1" and "read as P1" in unknown["claim"] and unknown["citation"]
    assert nowhere["citation"] == "the finding cites no path:line"
    assert len(judged["invalid_citations"]) == 3


@pytest.mark.parametrize("text", [None, "", "Looks good.", '{"findings": "none"}'])
def test_an_answer_without_a_report_is_unparseable(tmp_path, text):
    assert rf.judge_answer(text, tmp_path)["status"] == rf.UNPARSEABLE


def test_no_findings_is_clean(tmp_path):
    assert rf.judge_answer('{"findings": [], "summary": "fine"}', tmp_path)["status"] == rf.CLEAN


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a loaded machine generates slowly
@given(st.lists(st.fixed_dictionaries({"severity": st.sampled_from(["P0", "P1", "P2", "P3", "", "x"]),
                                       "line": st.integers(-3, 50) | st.none() | st.text(max_size=3)}), max_size=8))
def test_a_finding_of_any_shape_is_open_unless_it_says_p2_or_p3(raw):
    findings = [rf.normalize({**r, "path": "f.py"}, _NoTree()) for r in raw]
    for r, f in zip(raw, findings, strict=True):
        assert f["severity"] in rf.SEVERITIES
        assert (f["severity"] in ("P2", "P3")) == (r["severity"] in ("P2", "P3"))


class _NoTree:
    def check_text(self, text: str) -> str | None:
        return f"{text} is not in the tree"
