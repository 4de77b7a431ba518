"""The dashboard says the run's verdict, the state the CLI says, and "proven" only for a proven run; its
approve button acknowledges a run's review reasons only when the page showed them."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette would rather have httpx2; httpx is what bosun pins
    from starlette.testclient import TestClient

from bosun.store.db import open_store
from bosun.web.app import create_app
from tests.web.support import ctx, delegated

PORT = 8765
TOKEN = "t0ken-for-tests"
BASE = f"http://127.0.0.1:{PORT}"
ONLY_SUB = f"{sys.executable} -m pytest -q tests/test_calc.py::test_sub"  # passed before: proves nothing


def client() -> TestClient:
    c = TestClient(create_app(TOKEN, PORT), base_url=BASE, follow_redirects=False)
    c.get("/", params={"token": TOKEN})  # the launch URL's cookie
    return c


def _row(page: str, run_id: str) -> str:
    m = re.search(rf'<tr data-run="{run_id}".*?</tr>', page, re.S)
    assert m is not None, page
    return m.group(0)


def test_an_unproven_run_is_not_proven_and_its_approval_needs_the_reasons_shown(repo: Path) -> None:
    run = delegated(repo, "fix", verify=[ONLY_SUB])
    rid = run.id
    c = client()
    row = _row(c.get("/").text, rid)
    assert '<span class="muted">no</span>' in row  # verification passed, but nothing is proven
    assert 'data-verdict="needs_review">needs review (NOT_PROVEN)</span>' in row

    page = c.get(f"/runs/{rid}").text
    assert 'data-reason="NOT_PROVEN"' in page and "a person must decide" in page
    assert 'name="reviewed" value="NOT_PROVEN"' in page and "approve: I read the reasons" in page

    hx = {"origin": BASE, "HX-Request": "true"}
    r = c.post(f"/runs/{rid}/approve", headers=hx)  # not from the page: no reasons shown
    assert r.status_code == 409 and "NOT_PROVEN" in r.text and "did not show you every reason" in r.text
    assert open_store().require_run(rid).state == "verified"
    r = c.post(f"/runs/{rid}/approve", headers=hx, data={"reviewed": "NOT_PROVEN"})
    assert r.status_code == 200 and "approved" in r.text, r.text
    data = open_store().require_run(rid).data
    assert data.acknowledged["by"] == "person" and data.acknowledged["codes"] == ["NOT_PROVEN"]


def test_a_proven_run_is_proven_and_a_discarded_one_says_so(repo: Path) -> None:
    from bosun.engine.teardown import discard

    ok = delegated(repo, "fix")
    gone = delegated(repo, "fix", title="Thrown away")
    discard(ctx(), gone.id)
    c = client()
    page = c.get("/").text
    assert '<span class="ok">yes</span>' in _row(page, ok.id)
    row = _row(page, gone.id)
    assert 'data-state="discarded"' in row and ">discarded</span>" in row and ">cleaned<" not in row
    run_page = c.get(f"/runs/{gone.id}").text
    assert ">discarded</span>" in run_page and 'class="approve"' not in run_page


def test_a_refused_run_has_no_approve_button(repo: Path) -> None:
    bad = delegated(repo, "edit_locked")
    page = client().get(f"/runs/{bad.id}").text
    assert 'data-verdict="refused"' in page and 'class="approve"' not in page


def test_a_reverted_and_applied_run_says_so(repo: Path) -> None:
    from bosun.engine.apply_run import apply
    from bosun.engine.lifecycle import approve, integrate
    from bosun.engine.undo import revert
    from tests.conftest import git

    git(repo, "branch", "release")
    run = delegated(repo, "fix")
    approve(ctx(), run.id)
    integrate(ctx(), run.id)
    applied = apply(ctx(), run.id, "release")["apply"]
    reverted = revert(ctx(), run.id)["revert"]
    page = client().get(f"/runs/{run.id}").text
    assert f'reverted on main by commit <code>{reverted["commit"][:12]}</code>' in page, page
    assert f'applied to release as <code>{applied["commit"][:12]}</code>' in page
