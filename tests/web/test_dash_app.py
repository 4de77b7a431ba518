"""The dashboard in process (starlette's TestClient): every route, the event stream, the guard."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette would rather have httpx2; httpx is what bosun pins
    from starlette.testclient import TestClient

from bosun.store.db import open_store
from bosun.store.run import Run
from bosun.web.app import create_app
from tests.web.support import delegated, insert_plan, shared_home

PORT = 8765
TOKEN = "t0ken-for-tests"
BASE = f"http://127.0.0.1:{PORT}"


def client(repo: Path | None = None, *, token: bool = True, **kw: Any) -> TestClient:
    """A client of the dashboard; with ``token``, one that carries the launch token on every request."""
    headers = {"x-bosun-token": TOKEN} if token else {}
    return TestClient(create_app(TOKEN, PORT, repo), base_url=BASE, headers=headers, **kw)


def _make_runs(repo: Path) -> dict[str, Run]:
    return {"ok": delegated(repo, "fix", title="Repair the adder"),
            "bad": delegated(repo, "edit_locked", title="Tweak the tests")}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Runs made once for the read-only tests of this module."""
    return shared_home(tmp_path_factory.mktemp("dash"), _make_runs)


@pytest.fixture
def runs(shared: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Run]:
    home, made = shared
    monkeypatch.setenv("BOSUN_HOME", str(home))
    return made  # type: ignore[no-any-return]


@pytest.fixture
def fresh_runs(repo: Path) -> dict[str, Run]:
    """Runs of this test's own (for tests that change them)."""
    return _make_runs(repo)


def test_runs_page_lists_runs_with_figures(runs: dict[str, Any]) -> None:
    r = client().get("/")
    assert r.status_code == 200
    page = r.text
    assert runs["ok"].id in page and runs["bad"].id in page
    row = re.search(rf'<tr data-run="{runs["ok"].id}".*?</tr>', page).group(0)
    assert "verified" in row and "1.3k" in row and '<span class="ok">yes</span>' in row
    assert '<div class="muted small">command</div>' in row  # the adapter that ran
    assert 'href="/static/htmx.min.js"' not in page and 'src="/static/htmx.min.js"' in page
    assert "<script>" not in page and " style=" not in page  # nothing inline: the CSP forbids it


def test_runs_filters_search_and_pagination(runs: dict[str, Any]) -> None:
    c = client()
    only_ok = c.get("/fragments/runs", params={"state": "verified"}).text
    assert runs["ok"].id in only_ok and runs["bad"].id not in only_ok
    by_profile = c.get("/fragments/runs", params={"profile": "edit_locked"}).text
    assert runs["bad"].id in by_profile and runs["ok"].id not in by_profile
    found = c.get("/fragments/runs", params={"q": "adder"}).text
    assert runs["ok"].id in found and runs["bad"].id not in found and "[adder]" in found
    assert "no runs match" in c.get("/fragments/runs", params={"q": "zzzz"}).text
    assert "no runs match" in c.get("/fragments/runs", params={"caller": "nobody"}).text
    assert runs["ok"].id in c.get("/fragments/runs", params={"repo": runs["ok"].repo}).text
    page2 = c.get("/fragments/runs", params={"page": "2"}).text
    assert "no runs match" in page2 and 'rel="prev"' in page2
    swapped = c.get("/fragments/runs", params={"state": "verified"}, headers={"HX-Request": "true", "HX-Trigger": "filters"})
    assert swapped.headers["hx-replace-url"] == "/?state=verified"


def test_run_page_shows_contract_diff_gates_verification_receipt(runs: dict[str, Any]) -> None:
    c = client()
    page = c.get(f"/runs/{runs['ok'].id}").text
    assert '<span class="dl dl-add">+    <span class="tk-word">return</span> a + b</span>' in page  # highlighted
    assert 'data-gate="LOCKED_PATH"' in page or 'data-gate="VERIFY_FAILED"' in page
    assert "PASS" in page and "pytest" in page  # verification output
    assert "parent would have spent" in page  # receipt
    assert "add() subtracts" in page  # contract
    assert "worker started" in page  # transitions
    assert "tool_call" in page and "edit" in page  # timeline with tool calls
    assert 'hx-post="/runs/' in page and "approve" in page
    bad = c.get(f"/runs/{runs['bad'].id}").text
    assert '<span class="bad">FAILED</span>' in bad and "approve</button>" not in bad
    assert c.get(f"/fragments/runs/{runs['ok'].id}").text.startswith('<div id="run"')
    assert c.get("/runs/20990101-000000-abcdef").status_code == 404
    assert c.get("/runs/..%2f..%2fetc").status_code == 404


def test_plan_page_draws_the_graph(runs: dict[str, Any]) -> None:
    plan_id = insert_plan(run_id=runs["ok"].id) if not open_store().db.execute(
        "SELECT 1 FROM plans WHERE id = 'p-demo'").fetchone() else "p-demo"
    c = client()
    assert plan_id in c.get("/plans").text
    page = c.get(f"/plans/{plan_id}").text
    assert '<svg class="dag"' in page
    assert page.count('class="node ') == 3 and 'data-state="merged"' in page and "wave 1" in page
    assert page.count('class="edge"') == 2 and f'href="/runs/{runs["ok"].id}"' in page
    assert "bosun/plan/p-demo" in page
    assert c.get(f"/fragments/plans/{plan_id}").status_code == 200
    assert c.get("/plans/nope").status_code == 404


def test_workers_and_savings_pages(runs: dict[str, Any]) -> None:
    c = client(Path(runs["ok"].repo))
    workers = c.get("/workers").text
    assert 'data-profile="fix"' in workers and "command" in workers
    # The track record, as `bosun workers` has it: the locked-path edit is a cheat attempt.
    locked = re.search(r'<tr data-profile="edit_locked">.*?</tr>', workers).group(0)
    assert "1 runs: 0 landable, 0 need review, 1 refused (1 cheat attempts)" in locked, locked
    savings = c.get("/savings").text
    assert '<svg class="chart"' in savings and "parent tokens saved" in savings
    assert c.get("/savings", params={"since": ""}).status_code == 200
    card = c.get("/savings/card.svg")
    assert card.headers["content-type"].startswith("image/svg+xml") and card.text.startswith("<svg")
    assert "script" not in card.text


def test_static_files_are_served() -> None:
    c = client()
    assert "htmx" in c.get("/static/htmx.min.js").text[:200]
    assert "EventSource" in c.get("/static/dash.js").text
    assert "prefers-color-scheme: dark" in c.get("/static/dash.css").text


def test_event_stream_reports_changes(runs: dict[str, Any]) -> None:
    import threading
    import time

    rid = runs["ok"].id

    def touch() -> None:
        time.sleep(1.0)
        open_store().merge_data(rid, landing_author_note="changed")

    threading.Thread(target=touch).start()
    with client().stream("GET", f"/events?run={rid}&max=2") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        body = "".join(r.iter_text())
    assert body.startswith("event: hello")
    assert "event: runs" in body and "event: run" in body


# -- the guard -------------------------------------------------------------------------------------


def test_every_response_carries_a_strict_csp() -> None:
    r = client().get("/")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"


def test_foreign_host_header_is_refused() -> None:
    c = client()
    assert c.get("/", headers={"host": "evil.example:8765"}).status_code == 421
    assert c.get("/", headers={"host": "127.0.0.1:9999"}).status_code == 421
    assert c.get("/", headers={"host": f"localhost:{PORT}"}).status_code == 200


def test_every_request_needs_the_token_pages_and_assets_too(runs: dict[str, Any]) -> None:
    # Anything on the machine can connect to 127.0.0.1, a worker included: a run page shows what the
    # run verified (held-out assertions too), the listing every run.
    rid = runs["ok"].id
    anonymous = client(token=False)
    for path in ("/", f"/runs/{rid}", f"/runs/{rid}/diff", "/savings", "/savings/card.svg", f"/events?run={rid}&max=1",
                 "/static/app.css", "/favicon.ico"):
        r = anonymous.get(path)
        assert r.status_code == 403 and "token" in r.text, (path, r.status_code)
        assert rid not in r.text
    assert anonymous.get("/", headers={"x-bosun-token": "wrong"}).status_code == 403
    assert anonymous.get("/", headers={"cookie": "bosun_dash=wrong"}).status_code == 403
    assert client().get(f"/runs/{rid}").status_code == 200
    with client(token=False, follow_redirects=False) as browser:
        r = browser.get(f"/runs/{rid}", params={"token": TOKEN})  # the launch URL works on any page
        assert r.status_code == 303 and r.headers["location"] == f"/runs/{rid}"
        assert browser.get(f"/runs/{rid}").status_code == 200  # the cookie it set


def test_actions_need_the_token(runs: dict[str, Any]) -> None:
    rid = runs["ok"].id
    c = client(token=False)
    r = c.post(f"/runs/{rid}/approve")
    assert r.status_code == 403 and "token" in r.text
    r = c.post(f"/runs/{rid}/approve", headers={"x-bosun-token": "wrong"})
    assert r.status_code == 403
    assert open_store().require_run(rid).state == "verified"


def test_cross_origin_post_is_refused_even_with_the_token(runs: dict[str, Any]) -> None:
    rid = runs["ok"].id
    c = client()
    r = c.post(f"/runs/{rid}/approve", headers={"x-bosun-token": TOKEN, "origin": "http://evil.example"})
    assert r.status_code == 403 and "cross-origin" in r.text
    r = c.post(f"/runs/{rid}/approve", headers={"x-bosun-token": TOKEN, "sec-fetch-site": "cross-site"})
    assert r.status_code == 403
    assert open_store().require_run(rid).state == "verified"


def test_get_never_changes_state(runs: dict[str, Any]) -> None:
    rid = runs["ok"].id
    c = client()
    assert c.get(f"/runs/{rid}/approve").status_code == 405
    assert open_store().require_run(rid).state == "verified"


def test_launch_url_sets_the_cookie_and_approve_goes_through_the_engine(fresh_runs: dict[str, Any]) -> None:
    rid = fresh_runs["ok"].id
    c = client(token=False, follow_redirects=False)
    r = c.get("/", params={"token": TOKEN})
    assert r.status_code == 303 and r.headers["location"] == "/"
    assert "HttpOnly" in r.headers["set-cookie"] and "SameSite=Strict" in r.headers["set-cookie"]
    assert c.get("/", params={"token": "nope"}).status_code == 403
    r = c.post(f"/runs/{rid}/approve", headers={"origin": BASE, "HX-Request": "true"})
    assert r.status_code == 200 and "approved" in r.text
    assert open_store().require_run(rid).state == "approved"
    # Approving twice is refused by the engine, with its message.
    r = c.post(f"/runs/{rid}/approve", headers={"HX-Request": "true"})
    assert r.status_code == 409 and "only a verified run can be approved" in r.text


def test_discard_goes_through_the_engine(fresh_runs: dict[str, Any]) -> None:
    rid = fresh_runs["bad"].id
    r = client(follow_redirects=False).post(f"/runs/{rid}/discard", headers={"x-bosun-token": TOKEN})
    assert r.status_code == 303
    run = open_store().require_run(rid)
    assert run.state == "cleaned" and not Path(run.worktree).exists()
