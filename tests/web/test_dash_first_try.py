"""The dashboard as a new user read it first, in a real browser (Debian's chromium via Playwright)
against a real `bosun dash`: hints read as code, not backticks; a run page leads with its diff and its
cost, its green gates a count; the savings chart keeps sub-cent values and draws a negative saving; a
landed plan names its commit, not its deleted branch; at 420 px no page is wider than the window.

Screenshots are saved under the test's tmp dir (``screens/``) as artefacts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser_support import TOKEN, browser_page, dash_server, require_chromium
from tests.web.support import ctx, delegated, shared_home

pytestmark = [pytest.mark.slow, pytest.mark.browser]

# The elements that reach past the window, innermost last: what a failure needs to name.
OVERFLOWING = """Array.from(document.querySelectorAll('body *'))
  .filter(e => e.getBoundingClientRect().right > 420)
  .map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)
       + ' ' + (e.innerText || '').slice(0, 60))"""
PRICED = "[profiles.fix]\nprices = { input = 0.27, output = 1.1 }\n"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Any:
    require_chromium()

    def make(repo: Path) -> dict[str, Any]:
        from bosun.cli.main import main
        from bosun.engine.lifecycle import approve, integrate, report
        from tests.conftest import git
        from tests.e2e.test_plans import check, make_plan_repo, task, write_plan

        (repo / "bosun.toml").write_text((repo / "bosun.toml").read_text().replace("[profiles.fix]\n", PRICED))
        git(repo, "commit", "-qam", "prices")
        landed = delegated(repo, "fix", title="Repair the adder")
        approve(ctx(), landed.id)
        report(ctx(), integrate(ctx(), landed.id).id)
        refused = delegated(repo, "noop", title="Do nothing")
        root = repo.parent
        prepo = make_plan_repo(root / "plan-repo")
        plan = write_plan(root / "plan.json", [task("a", "@write out/a.txt a", ["out/a.txt"],
                                                    verify=[check("out/a.txt")])])
        assert main(["plan", "run", str(plan), "--repo", str(prepo), "--json", "--quiet"]) == 0
        from bosun.store.db import open_store
        from bosun.store.plans import PlanStore

        plan_row = PlanStore(open_store()).list_plans(limit=1)[0]
        landed = open_store().require_run(landed.id)  # as it is now: landed, its commit recorded
        return {"repo": repo, "landed": landed, "refused": refused, "plan": plan_row}

    return shared_home(tmp_path_factory.mktemp("first-try-dash"), make)


def test_a_run_page_leads_with_the_change_and_its_cost_and_hints_read_as_code(made: Any, tmp_path: Path) -> None:
    home, runs = made
    with dash_server(home, runs["repo"]) as base, browser_page(tmp_path / "screens") as page:
        page.goto(f"{base}/?token={TOKEN}")  # the launch URL: sets the cookie the other pages need
        page.goto(f"{base}/runs/{runs['landed'].id}")
        order = page.evaluate("[...document.querySelectorAll('details.sec')].map(d => d.id)")
        assert order.index("sec-diff") < order.index("sec-gates"), order
        gates = page.locator("#sec-gates")
        assert gates.get_attribute("open") is None and "green)" in gates.locator("summary").inner_text()
        assert page.locator("#sec-receipt").get_attribute("open") is not None
        assert page.locator("#sec-receipt").get_by_text("worker cost", exact=True).is_visible()
        landed = page.locator("p[data-landed]")  # the landed commit in sight, not in Transitions
        assert landed.is_visible() and runs["landed"].merged_commit[:12] in landed.inner_text()
        page.screenshot(path=str(tmp_path / "screens" / "run-landed.png"), full_page=True)
        page.goto(f"{base}/runs/{runs['refused'].id}")
        error = page.locator("div.error").first
        assert "`" not in error.inner_text(), error.inner_text()  # `bosun show RUN` is code, not backticks
        assert error.locator("code").count() >= 1
        assert page.locator("#sec-gates").get_attribute("open") is not None  # a red gate is open
        page.screenshot(path=str(tmp_path / "screens" / "run-refused.png"), full_page=True)
        assert page.console_errors == []


def test_savings_keep_sub_cent_values_and_a_negative_saving(made: Any, tmp_path: Path) -> None:
    home, runs = made
    with dash_server(home, runs["repo"]) as base, browser_page(tmp_path / "screens") as page:
        page.goto(f"{base}/?token={TOKEN}")  # the launch URL: sets the cookie the other pages need
        page.goto(f"{base}/savings?since=")
        ticks = page.evaluate("[...document.querySelectorAll('svg.chart text.tick')].map(t => t.textContent)")
        money = [t for t in ticks if t.startswith(("$", "-$"))]
        assert money and "$0.00" not in money, ticks
        assert page.locator("svg.chart rect.s-save.neg").count() >= 1  # a one-line fix costs more than it saves
        page.screenshot(path=str(tmp_path / "screens" / "savings.png"), full_page=True)
        assert page.console_errors == []


def test_a_landed_plan_names_its_commit_and_no_page_is_wider_than_a_phone(made: Any, tmp_path: Path) -> None:
    home, runs = made
    plan = runs["plan"]
    with dash_server(home, runs["repo"]) as base, browser_page(tmp_path / "screens") as page:
        page.goto(f"{base}/?token={TOKEN}")  # the launch URL: sets the cookie the other pages need
        page.goto(f"{base}/plans/{plan['id']}")
        landed = page.locator("#plan p[data-landed]")
        assert plan["merged_commit"][:12] in landed.inner_text(), landed.inner_text()
        assert "(deleted)" in page.locator("#plan p.meta").inner_text()
        page.goto(f"{base}/plans")
        assert plan["merged_commit"][:12] in page.locator("table").inner_text()
        page.set_viewport_size({"width": 420, "height": 800})
        for path in ("/", f"/runs/{runs['landed'].id}", f"/plans/{plan['id']}", "/plans", "/savings", "/workers"):
            page.goto(base + path)
            wide = page.evaluate("document.documentElement.scrollWidth")
            assert wide <= 420, (path, wide, page.evaluate(OVERFLOWING))
        page.goto(base + "/")
        page.screenshot(path=str(tmp_path / "screens" / "runs-420px.png"), full_page=True)
        assert page.console_errors == []


def test_a_needs_review_runs_duration_is_its_working_time(cli, repo: Path, tmp_path: Path) -> None:
    import time

    task = tmp_path / "t.json"
    task.write_text(json.dumps({"title": "Fix add()", "prompt": "fix add()", "timeout_s": 60,
                                "verify": [f"{sys.executable} -m pytest -q tests/test_calc.py::test_sub"]}))
    code, res = cli("delegate", str(task), "--repo", str(repo), "--json")
    assert code == 7, res  # needs review: it waits for a person
    time.sleep(3)
    assert cli("approve", res["id"], "--yes", "--json")[0] == 0
    assert cli("integrate", res["id"], "--json")[0] == 0
    code, hist = cli("history", "--json")
    facts = next(r["facts"] for r in hist["runs"] if r["id"] == res["id"])
    total = facts["ended_at"] - facts["started_at"]
    assert facts["duration_s"] is not None and facts["duration_s"] <= total + 0.01
    code, shown = cli("show", res["id"], "--json")
    metrics = json.loads((Path(shown["run_dir"]) / "metrics.json").read_text())
    waited = time.time() - res_created(res)
    assert metrics["duration_s"] < waited - 2.5, (metrics["duration_s"], waited)
    assert facts["duration_s"] < waited - 2.5, (facts, waited)


def res_created(res: dict[str, Any]) -> float:
    from bosun.store.db import open_store

    return open_store().require_run(res["id"]).created_at
