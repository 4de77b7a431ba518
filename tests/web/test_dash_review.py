"""The run page's Cross-review section (starlette's TestClient): rounds, findings with the line each
cites (marked when the tree has no such line), what the worker revised, the cost; all escaped."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette would rather have httpx2; httpx is what bosun pins
    from starlette.testclient import TestClient

from bosun.core.fileio import write_json_atomic
from bosun.core.paths import run_dir
from bosun.web.app import create_app
from tests.engine.review_support import REVIEWER, record, reviewed_runs_fixtures
from tests.web.support import delegated


def client() -> TestClient:
    return TestClient(create_app("t0ken-for-tests", 8765, None), base_url="http://127.0.0.1:8765",
                      headers={"x-bosun-token": "t0ken-for-tests"})


shared, runs = reviewed_runs_fixtures("dash-review")


def _section(page: str) -> str:
    m = re.search(r'<details class="sec" id="sec-cross-review" open>.*?</details>', page, re.S)
    assert m, "no Cross-review section"
    return m.group(0)


def test_the_run_page_shows_rounds_findings_citations_and_cost(runs: Any) -> None:
    page = client().get(f"/runs/{runs['reviewed'].id}").text
    sec = _section(page)
    assert page.index('id="sec-verification"') < page.index('id="sec-cross-review"') < page.index('id="sec-timeline"')
    assert f"2 rounds by <b>{REVIEWER}</b> · $0.0011 · the worker revised 1 time (diff " in sec
    assert re.search(rf'<h3 data-round="1">round 1: {REVIEWER} \(command\) <span class="warn">findings</span> · '
                     r'1 P1, 1 P2, 1 P3 · \$0\.0006 · \d+s</h3>', sec)
    assert '<h3 data-round="2">' in sec and sec.count('class="finding"') == 5  # 3 in round 1, 2 in round 2
    assert '<td><code>src/calc.py:2</code></td><td>add(7, 1) returns 0' in sec  # backed: not marked
    assert '<div class="muted small">fix: return a + b</div>' in sec
    invalid = re.findall(r'<span class="bad" data-citation="invalid"><code>(.*?)</code></span>'
                         r'<div class="muted small">(.*?)</div>', sec)
    assert [where for where, _ in invalid] == ["src/calc.py:999", "src/calc.py:999"]
    assert "out of range" in invalid[0][1]
    assert re.search(r"<p class=\"muted small\" data-revised>the worker revised: diff [0-9a-f]{8} → [0-9a-f]{8}, "
                     r"1 file\(s\), \$0\.0004</p>", sec)
    assert "cross-review cost" in page and "worker side $0.0026" in page  # the receipt


def test_a_run_without_review_has_no_section(runs: Any) -> None:
    page = client().get(f"/runs/{runs['plain'].id}").text
    assert "sec-cross-review" not in page and "cross-review" not in page.lower()


def test_everything_the_reviewer_wrote_is_escaped(repo: Path) -> None:
    run = delegated(repo, "fix")
    evil = "<script>alert(1)</script>"
    finding = {"severity": "P0", "path": "<img src=x onerror=alert(1)>", "line": 3, "claim": evil,
               "suggested_fix": "<b>bold</b>", "citation": "<i>no</i> such file"}
    entry = {**record()["rounds"][0], "profile": "<u>rev</u>", "summary": evil, "error": "<em>x</em>",
             "findings": [finding]}
    write_json_atomic(run_dir(run.id) / "cross_review.json", record(rounds=[entry]))
    sec = _section(client().get(f"/runs/{run.id}").text)
    for raw in ("<script", "<img", "<b>bold", "<i>no", "<u>rev", "<em>"):
        assert raw not in sec, raw
    # The reviewer's path is quoted as its text (core/quoting.py), then escaped for HTML.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in sec and "&quot;&lt;img src=x onerror=alert(1)&gt;&quot;:3" in sec
    assert "fix: &lt;b&gt;bold&lt;/b&gt;" in sec and 'data-severity="P0"' in sec
