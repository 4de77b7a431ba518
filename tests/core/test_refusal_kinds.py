"""Every refusal bosun can make is classified: about the worker's honesty (never repaired), about the
work (repaired), or about the circumstances (neither); docs/gates.md says the same."""

from __future__ import annotations

import re

from bosun.core import refusal_kinds as rk
from bosun.engine import review_verdict
from bosun.gates import ENGINE_GATE_CODES, GATE_CODES
from tests.conftest import ROOT

REVIEW_REFUSALS = (review_verdict.BLOCKED, review_verdict.CHANGED_TREE)


def test_every_gate_code_and_review_refusal_is_classified():
    missing = [c for c in (*GATE_CODES, *ENGINE_GATE_CODES, *REVIEW_REFUSALS) if rk.kind_of(c) is None]
    assert missing == [], f"classify these in core/refusal_kinds.py: {missing}"
    assert set(rk.KINDS.values()) == {rk.HONESTY, rk.WORK, rk.CIRCUMSTANCE}


def test_the_issue_s_examples_fall_where_it_says():
    for code in ("TEST_WEAKENED", "SECRET_DETECTED", "TEST_HARNESS_CHANGED", "VERIFY_ENTRY_CHANGED",
                 "MODULE_SHADOWED", "USER_GIT_TAMPERED", "SYMLINK_CHANGE", "LOCKED_PATH_CHANGED"):
        assert rk.kind_of(code) == rk.HONESTY, code
    for code in ("VERIFY_FAILED", "TESTS_REWRITTEN", "OUT_OF_SCOPE", "TOO_MANY_FILES", "DIFF_TOO_LARGE"):
        assert rk.kind_of(code) == rk.WORK, code


def test_a_refusal_is_repaired_only_when_every_code_is_about_the_work():
    assert rk.repairable(["VERIFY_FAILED"])
    assert rk.repairable(["VERIFY_FAILED", "OUT_OF_SCOPE"])
    assert not rk.repairable(["VERIFY_FAILED", "TEST_WEAKENED"])  # a cheat that also fails is not coached
    assert not rk.repairable(["SOURCE_CHANGED"])
    assert not rk.repairable(["SOMETHING_NEW"])  # unknown: never coached
    assert not rk.repairable([])
    assert rk.honesty_codes(["VERIFY_FAILED", "TEST_WEAKENED", "SOMETHING_NEW"]) == ["TEST_WEAKENED"]


def test_docs_list_each_code_under_its_kind():
    text = (ROOT / "docs" / "gates.md").read_text()
    section = text.split("## Repaired or not", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| (honesty|work|circumstance) \|", section, re.M))
    assert rows == rk.KINDS
