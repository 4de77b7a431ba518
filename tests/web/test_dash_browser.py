"""The dashboard in a real browser (Debian's chromium via Playwright) against a real `bosun dash`.

Screenshots are saved under the test's tmp dir (``screens/``) as artefacts.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from bosun.store.db import open_store
from tests.web.browser_support import TOKEN, browser_page, dash_server, require_chromium
from tests.web.support import delegated, insert_plan, shared_home

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Any:
    require_chromium()

    def make(repo: Path) -> dict[str, Any]:
        ok = delegated(repo, "fix", title="Repair the adder")
        bad = delegated(repo, "edit_locked", title="Tweak the tests")
        insert_plan(run_id=ok.id)
        return {"ok": ok, "bad": bad, "repo": repo}

    return shared_home(tmp_path_factory.mktemp("browser"), make)


@pytest.fixture
def env(shared: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    home, made = shared
    monkeypatch.setenv("BOSUN_HOME", str(home))
    return home, made


def test_runs_table_updates_live_while_a_run_progresses(env: Any, tmp_path: Path) -> None:
    home, made = env
    with dash_server(home, made["repo"]) as base, browser_page(tmp_path / "screens") as page:
        page.goto(f"{base}/?token={TOKEN}")  # the launch URL `bosun dash` prints
        page.wait_for_selector("#conn.on")
        page.evaluate("window.__notReloaded = true")
        before = page.locator("tr[data-run]").count()
        done: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: done.update(run=delegated(made["repo"], "paced", title="Paced run")))
        worker.start()
        try:
            page.wait_for_selector('tr[data-state="working"]', timeout=20000)
            page.screenshot(path=str(tmp_path / "screens" / "runs-working.png"))
            assert page.locator("tr[data-run]").count() == before + 1
        finally:
            worker.join(120)
        run_id = done["run"].id
        page.wait_for_selector(f'tr[data-run="{run_id}"][data-state="verified"]', timeout=20000)
        assert page.evaluate("window.__notReloaded") is True  # updated in place, not reloaded
        page.screenshot(path=str(tmp_path / "screens" / "runs-verified.png"))
        assert page.console_errors == []


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def test_filters_and_search(env: Any, tmp_path: Path) -> None:
    home, made = env
    ok, bad = made["ok"].id, made["bad"].id
    with dash_server(home, made["repo"]) as base, browser_page(tmp_path / "screens") as page:
        page.goto(f"{base}/?token={TOKEN}")  # the launch URL `bosun dash` prints
        page.fill("input[name=q]", "adder")
        # (wait_for_function would evaluate a string, which the dashboard's CSP rightly forbids)
        expect(page.locator(f'tr[data-run="{bad}"]')).to_have_count(0)
        expect(page.locator(f'tr[data-run="{ok}"]')).to_have_count(1)
        assert "q=adder" in page.url and "/fragments/" not in page.url
        page.fill("input[name=q]", "")
        page.select_option("select[name=state]", "rejected")
        expect(page.locator(f'tr[data-run="{ok}"]')).to_have_count(0)
        expect(page.locator(f'tr[data-run="{bad}"]')).to_have_count(1)
        page.screenshot(path=str(tmp_path / "screens" / "filtered.png"))
        assert page.console_errors == []


def test_run_page_shows_diff_and_gates(env: Any, tmp_path: Path) -> None:
    home, made = env
    with dash_server(home, made["repo"]) as base, browser_page(tmp_path / "screens") as page:
        page.goto(f"{base}/runs/{made['bad'].id}?token={TOKEN}")
        assert page.locator(".dl-add").first.is_visible()
        failed = page.locator("tr.gate", has_text="FAILED")
        assert failed.count() >= 1 and failed.first.is_visible()
        page.screenshot(path=str(tmp_path / "screens" / "run-rejected.png"), full_page=True)
        page.emulate_media(color_scheme="dark")
        page.goto(f"{base}/runs/{made['ok'].id}")
        bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert bg == "rgb(15, 23, 32)"  # the dark palette
        page.screenshot(path=str(tmp_path / "screens" / "run-dark.png"), full_page=True)
        assert page.console_errors == []


def test_plan_graph_renders(env: Any, tmp_path: Path) -> None:
    home, made = env
    with dash_server(home, made["repo"]) as base, browser_page(tmp_path / "screens") as page:
        page.goto(f"{base}/plans/p-demo?token={TOKEN}")
        nodes = page.locator("svg.dag g.node")
        assert nodes.count() == 3
        box = page.locator("svg.dag").bounding_box()
        assert box and box["width"] > 300 and box["height"] > 80
        assert page.locator('svg.dag g.node[data-state="merged"]').count() == 1
        page.screenshot(path=str(tmp_path / "screens" / "plan.png"))
        page.goto(f"{base}/savings")
        assert page.locator("svg.chart").count() == 3
        page.screenshot(path=str(tmp_path / "screens" / "savings.png"), full_page=True)
        page.goto(f"{base}/savings/card.svg")
        page.screenshot(path=str(tmp_path / "screens" / "card.png"))
        assert page.console_errors == []


def test_approve_needs_the_token(repo: Path, tmp_path: Path, isolated_home: Path) -> None:
    require_chromium()
    run = delegated(repo, "fix")
    with dash_server(isolated_home, repo) as base, browser_page(tmp_path / "screens") as page:
        # Without the token not even the page shows: the dashboard says to open the URL it printed.
        response = page.goto(f"{base}/runs/{run.id}")
        assert response is not None and response.status == 403
        expect(page.locator("body")).to_contain_text("token")
        assert run.id not in page.content()
        assert open_store().require_run(run.id).state == "verified"
        page.goto(f"{base}/?token={TOKEN}")  # the launch URL: sets the cookie, then drops the token
        assert "token" not in page.url
        page.goto(f"{base}/runs/{run.id}")
        page.click("button.approve")
        expect(page.locator("#action-result")).to_contain_text("now approved", timeout=30000)
        assert open_store().require_run(run.id).state == "approved"
        page.screenshot(path=str(tmp_path / "screens" / "approved.png"))
