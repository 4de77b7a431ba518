"""The receipt of a run with a cross-review: metrics.json's review block, the reviewer's cost on the
worker side of the saving, and report.md's Cross-review section. A run without review is unchanged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bosun.core.paths import run_dir
from bosun.engine.review_record import read
from bosun.engine.run_report import review_markdown
from bosun.store.db import open_store
from tests.engine.review_support import REVIEWER, ROUND_COST, record, reviewed_runs_fixtures

shared, runs = reviewed_runs_fixtures("receipt")


def _metrics(run_id: str) -> dict[str, Any]:
    return json.loads((run_dir(run_id) / "metrics.json").read_text())


def _report(run_id: str) -> str:
    return (run_dir(run_id) / "report.md").read_text()


def test_the_receipt_counts_the_reviewer_on_the_worker_side(runs: Any) -> None:
    run = open_store().require_run(runs["reviewed"].id)
    m = _metrics(run.id)
    review = m["review"]
    assert (review["profile"], review["rounds"], review["revise_rounds"]) == (REVIEWER, 2, 1)
    assert review["cost_usd"] == pytest.approx(2 * ROUND_COST)
    assert review["usage"]["input_tokens"] == 1000 and review["usage"]["output_tokens"] == 60
    assert review["open_p0_p1"] == 0  # the P1 was revised away; round 2 left a P2 and a P3
    [rev] = review["revisions"]
    assert rev["round"] == 1 and rev["diff_sha256_before"] != rev["diff_sha256_after"] == run.diff_sha256
    worker = m["worker"]["cost_usd"]  # the worker's own turns: the first attempt and the revise
    assert worker == pytest.approx((1300 * 1.0 + 100 * 2.0) / 1_000_000)
    assert m["worker_side_cost_usd"] == pytest.approx(worker + review["cost_usd"])
    p = m["parent"]
    assert p["worker_cost_usd"] == pytest.approx(m["worker_side_cost_usd"])
    assert p["saving_usd"] == pytest.approx(p["parent_direct_cost_usd"] - p["parent_actual_cost_usd"]
                                            - m["worker_side_cost_usd"], abs=1e-6)


def test_a_run_without_review_keeps_its_receipt(runs: Any) -> None:
    m = _metrics(runs["plain"].id)
    assert m["review"] is None
    assert m["worker_side_cost_usd"] == m["worker"]["cost_usd"] == m["parent"]["worker_cost_usd"]
    text = _report(runs["plain"].id)
    assert "Cross-review" not in text and "cross-review" not in text and "review cost" not in text


def test_the_report_lists_each_round_its_findings_and_the_cost(runs: Any) -> None:
    text = _report(runs["reviewed"].id)
    rev = read(runs["reviewed"].id)["rounds"][0]["revised"]
    section = text[text.index("## Cross-review"):text.index("## Receipt")]
    assert text.index("## Gates") < text.index("## Cross-review")
    lines = section.splitlines()
    assert lines[2].startswith(f"- round 1: {REVIEWER}, findings, 1 P1, 1 P2, 1 P3, $0.0006, ")
    # The reviewer's words are quoted as its text (core/quoting.py).
    assert ('  - P1 src/calc.py:2: "add(7, 1) returns 0: the special case for 7 is wrong" (fix: "return a + b")'
            in lines)
    assert '  - P2 src/calc.py:999: "overflowing sum" **[citation invalid: src/calc.py:999 is out of range' in section
    assert '  - P3 src/calc.py:1: "name the parameters"' in lines
    assert any(ln.startswith(f"- round 2: {REVIEWER}, findings, 1 P2, 1 P3, ") for ln in lines)
    assert (f"- review cost $0.0011 over 2 rounds; the worker revised 1 time "
            f"(diff {rev['diff_sha256_before'][:8]} → {rev['diff_sha256_after'][:8]})") in lines
    assert f"- cross-review by {REVIEWER}: $0.0011; worker side in all $0.0026" in text


def test_a_round_that_failed_says_why_and_counts_its_cost() -> None:
    entry = {**record()["rounds"][0], "status": "failed", "findings": [], "summary": "",
             "error": "the reviewer failed: exit 139"}
    lines = review_markdown(record(rounds=[entry]))
    assert lines[3] == "- round 1: reviewer, failed, no findings, $0.2500, 1.5s; the reviewer failed: exit 139"
    assert lines[-1] == "- review cost $0.2500 over 1 round; the worker revised 0 times"
    assert review_markdown(None) == []
