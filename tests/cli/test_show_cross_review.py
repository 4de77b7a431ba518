"""`bosun show` of a run with a cross-review: the record, compacted, under --json; a block of text
with the last round's findings and what earlier rounds sent back. A run without review is unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from bosun.cli.render import cross_review_lines
from bosun.engine.review_record import compact
from tests.engine.review_support import REVIEWER, ROUND_COST, record, reviewed_runs_fixtures

shared, runs = reviewed_runs_fixtures("show")


def show(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "bosun", "show", *args], capture_output=True, text=True, timeout=60)
    assert out.returncode in (0, 7), out.stderr
    return out.stdout


def test_show_json_carries_the_compacted_record(runs: Any) -> None:
    res = json.loads(show(runs["reviewed"].id, "--json"))
    cr = res["cross_review"]
    assert cr["config"] == {"profile": REVIEWER, "rounds": 2, "block_on": None}
    assert cr["profile"] == REVIEWER and cr["revise_rounds"] == 1 and cr["open_p0_p1"] == 0
    assert cr["cost_usd"] == pytest.approx(2 * ROUND_COST) and cr["of_current_diff"] is True
    first, second = cr["rounds"]
    assert [f["severity"] for f in first["findings"]] == ["P1", "P2", "P3"] and first["status"] == "findings"
    assert first["revised"]["diff_sha256_after"] == second["diff_sha256"] == res["diff_sha256"]
    bad = next(f for f in second["findings"] if f["severity"] == "P2")
    assert bad["line"] == 999 and "out of range" in bad["citation"]
    assert "usage" not in first and "tree" not in first  # compacted: the record has the details
    assert res["cost_usd"] != cr["cost_usd"]  # the worker's own cost stays its own


def test_show_text_has_the_review_block(runs: Any) -> None:
    text = show(runs["reviewed"].id).splitlines()
    at = text.index(f"cross-review: 2 rounds by {REVIEWER}, $0.0011")
    assert text[at + 1:at + 4] == [
        "  round 1: 3 findings, the worker revised",
        '  P2 src/calc.py:999 "overflowing sum" (citation not found: src/calc.py:999 is out of range (6 lines))',
        '  P3 src/calc.py:1 "name the parameters"',
    ]
    assert at < next(i for i, ln in enumerate(text) if ln.startswith("  profile "))  # read first, with the verdict


def test_a_run_without_review_shows_what_it_showed(runs: Any) -> None:
    assert "cross_review" not in json.loads(show(runs["plain"].id, "--json"))
    assert "cross-review" not in show(runs["plain"].id)


def test_the_last_round_says_how_it_ended_when_it_has_no_findings() -> None:
    first = {**record()["rounds"][0], "revised": {"diff_sha256_before": "a" * 64, "diff_sha256_after": "b" * 64}}
    failed = {**first, "round": 2, "status": "failed", "findings": [], "error": "the reviewer timed out", "revised": None}
    lines = cross_review_lines(compact(record(rounds=[first, failed], cost_usd=0.5), diff_sha256="e" * 64))
    assert lines == ["cross-review: 2 rounds by reviewer, $0.5000 (of an earlier diff: the run changed since it was reviewed)",
                     "  round 1: 1 finding, the worker revised", "  round 2: failed (the reviewer timed out)"]
    clean = {**first, "status": "clean", "findings": [], "revised": None}
    assert cross_review_lines(compact(record(rounds=[clean]))) == ["cross-review: 1 round by reviewer, $0.2500",
                                                                   "  round 1: no findings"]
    assert cross_review_lines(None) == []
