"""History and savings of runs with a cross-review: the findings are searchable, and the reviewer's
cost is on the worker side of every figure. A run without review is indexed as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bosun.apps.savings_report import report
from bosun.core.fileio import write_json_atomic
from bosun.core.paths import run_dir
from bosun.engine.history import search
from bosun.store.db import open_store
from bosun.store.history import RunFilter, facts_since
from tests.engine.review_support import record, reviewed_runs_fixtures
from tests.web.support import delegated

shared, runs = reviewed_runs_fixtures("history")


def _ids(text: str) -> list[str]:
    return [r["id"] for r in search(open_store(), RunFilter(text=text))]


def _metrics(run_id: str) -> dict[str, Any]:
    return json.loads((run_dir(run_id) / "metrics.json").read_text())


def test_findings_are_searchable(runs: Any) -> None:
    reviewed, plain = runs["reviewed"].id, runs["plain"].id
    assert _ids("overflowing") == [reviewed]  # a finding's claim
    assert _ids("overflow*") == [reviewed]
    assert _ids("parameters") == [reviewed]
    assert _ids("calc.py:999") == [reviewed]  # where it points
    assert _ids("plainly") == [plain] and set(_ids("calc.py")) == {reviewed, plain}
    hit = search(open_store(), RunFilter(text="overflowing"))[0]
    assert "[overflowing]" in hit["snippet"]


def test_the_reviewer_cost_is_on_the_worker_side(runs: Any) -> None:
    facts = {f["run_id"]: f for f in facts_since(open_store())}
    reviewed, plain = _metrics(runs["reviewed"].id), _metrics(runs["plain"].id)
    assert facts[runs["reviewed"].id]["worker_cost_usd"] == pytest.approx(reviewed["worker_side_cost_usd"])
    assert reviewed["worker_side_cost_usd"] > reviewed["worker"]["cost_usd"]
    assert facts[runs["plain"].id]["worker_cost_usd"] == pytest.approx(plain["worker"]["cost_usd"])
    # The reviewer's tokens too: 2 rounds of 500 in, 30 out (tests/workers/scripted.py mode_xreview).
    assert facts[runs["reviewed"].id]["input_tokens"] == reviewed["worker"]["usage"]["input_tokens"] + 1000
    assert facts[runs["reviewed"].id]["output_tokens"] == reviewed["worker"]["usage"]["output_tokens"] + 60
    assert facts[runs["plain"].id]["input_tokens"] == plain["worker"]["usage"]["input_tokens"]
    t = report(open_store())["totals"]
    assert t["worker_cost_usd"] == pytest.approx(reviewed["worker_side_cost_usd"] + plain["worker"]["cost_usd"])
    assert t["saving_usd"] == pytest.approx(reviewed["parent"]["saving_usd"] + plain["parent"]["saving_usd"])


def test_a_record_written_after_the_receipt_still_counts(repo: Path) -> None:
    run = delegated(repo, "fix")
    other = delegated(repo, "fix", title="Another fix")
    worker = _metrics(run.id)["worker"]["cost_usd"]
    finding = {**record()["rounds"][0]["findings"][0], "claim": "an integer overflow in add", "suggested_fix": "clamp it"}
    usage = {"input_tokens": 70, "output_tokens": 7}
    write_json_atomic(run_dir(run.id) / "cross_review.json",
                      record(rounds=[{**record()["rounds"][0], "findings": [finding]}], cost_usd=0.25, usage=usage))
    assert _ids("overflow") == [run.id] and _ids("clamp") == [run.id]
    assert _ids("reviewer") == [run.id]  # nothing of the record is in the other run's text
    facts = {f["run_id"]: f for f in facts_since(open_store())}
    assert facts[run.id]["worker_cost_usd"] == pytest.approx(worker + 0.25)
    assert facts[run.id]["input_tokens"] == 1200 + 70 and facts[run.id]["output_tokens"] == 80 + 7
    assert facts[other.id]["worker_cost_usd"] == pytest.approx(_metrics(other.id)["worker"]["cost_usd"])
