"""One run of each verdict (landable, needs review, refused), read through every surface that shows it:
`show --json`, `show`'s text, the delegate exit code, the receipt (report.md, metrics.json), MCP through
the SDK's own client, a one-task plan's status, the notification and the dashboard. They must agree."""

from __future__ import annotations

import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from bosun.core import paths
from bosun.engine.verdict import one_line
from tests.conftest import task_yaml
from tests.e2e.mcp_support import call, with_session
from tests.e2e.test_plans import check, make_plan_repo, task, write_plan

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette would rather have httpx2; httpx is what bosun pins
    from starlette.testclient import TestClient

pytestmark = pytest.mark.slow

EXIT = {"landable": 0, "needs_review": 7, "refused": 3}
NOTIFIER = ("import sys, json, pathlib; d = json.loads(sys.stdin.read()); "
            "pathlib.Path(sys.argv[1], d['id'] + '.json').write_text(json.dumps(d))")


def _runs(cli: Any, repo: Path, tmp_path: Path) -> dict[str, tuple[int, dict[str, Any]]]:
    """The three runs, delegated through the CLI: outcome -> (exit code, --json result)."""
    only_sub = f"{sys.executable} -m pytest -q tests/test_calc.py::test_sub"  # passed before: proves nothing
    tasks = {
        "landable": (task_yaml(tmp_path / "landable.json"), "fix"),
        "needs_review": (task_yaml(tmp_path / "review.json", verify=[only_sub]), "fix"),
        "refused": (task_yaml(tmp_path / "refused.json"), "edit_locked"),
    }
    out = {}
    for outcome, (path, profile) in tasks.items():
        code, res = cli("delegate", str(path), "--repo", str(repo), "--profile", profile, "--json")
        assert isinstance(res, dict), res
        out[outcome] = (code, res)
    return out


def _plan_verdicts(cli: Any, tmp_path: Path) -> dict[str, tuple[int, dict[str, Any], dict[str, Any]]]:
    """A one-task plan of each verdict: outcome -> (exit code, the task's status, its run's show --json)."""
    prepo = make_plan_repo(tmp_path / "prepo")
    tasks = {
        # Each plan writes its own file: the landable one lands on the branch the next ones start from.
        "landable": task("t", "@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt")]),
        "needs_review": task("t", "@write out/b.txt b", ["out/b.txt"], verify=["true"]),
        "refused": task("t", "@write out/c.txt wrong", ["out/c.txt"], verify=[check("out/c.txt", "right")]),
    }
    out = {}
    for outcome, t in tasks.items():
        plan = write_plan(tmp_path / f"plan-{outcome}.json", [t], max_attempts=1)
        code, res = cli("plan", "run", str(plan), "--repo", str(prepo), "--json")
        assert isinstance(res, dict), res
        code_status, status = cli("plan", "status", res["id"], "--json")
        (pt,) = status["tasks"]
        _, shown = cli("show", pt["run_id"], "--json")
        out[outcome] = (code, pt, shown)
    return out


def _mcp(repo: Path, run_ids: list[str]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    async def body(s: Any) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        got = {}
        for rid in run_ids:
            err, res = await call(s, "result", {"run_id": rid})
            assert not err, res
            err, full = await call(s, "status", {"run_id": rid})
            assert not err, full
            got[rid] = (res, full)
        return got

    return with_session(repo, body)  # type: ignore[no-any-return]


def _dashboard(run_ids: list[str]) -> tuple[str, dict[str, str]]:
    from bosun.web.app import create_app

    c = TestClient(create_app("t0ken", 8765), base_url="http://127.0.0.1:8765", headers={"x-bosun-token": "t0ken"})
    listing = c.get("/")
    assert listing.status_code == 200
    return listing.text, {rid: c.get(f"/runs/{rid}").text for rid in run_ids}


def test_every_surface_says_the_same_verdict(cli: Any, repo: Path, tmp_path: Path) -> None:
    notified = tmp_path / "notified"
    notified.mkdir()
    Path(os.environ["BOSUN_CONFIG"]).write_text(
        f"[notify]\ncommand = [{json.dumps(sys.executable)}, \"-c\", {json.dumps(NOTIFIER)}, {json.dumps(str(notified))}]\n")
    runs = _runs(cli, repo, tmp_path)
    ids = [res["id"] for _, res in runs.values()]
    mcp = _mcp(repo, ids)
    listing, run_pages = _dashboard(ids)
    plans = _plan_verdicts(cli, tmp_path)

    for outcome, (code, res) in runs.items():
        rid, verdict = res["id"], res["verdict"]
        line = one_line(verdict)
        assert verdict["outcome"] == outcome, (outcome, verdict)
        assert code == EXIT[outcome], (outcome, code, verdict)
        if outcome != "landable":
            assert verdict["reasons"], verdict
        if outcome == "needs_review":
            assert [r["code"] for r in verdict["reasons"]] == ["NOT_PROVEN"]

        # show --json and show's text
        _, shown = cli("show", rid, "--json")
        assert shown["verdict"] == verdict
        _, text = cli("show", rid)
        assert text.splitlines()[1] == f"verdict: {line}", text

        # the receipt
        rdir = paths.run_dir(rid)
        metrics = json.loads((rdir / "metrics.json").read_text())
        assert metrics["verdict"] == verdict and metrics["verdict_line"] == line
        report = (rdir / "report.md").read_text()
        assert f"- verdict: **{line}**" in report.splitlines()[2], report
        for r in verdict["reasons"]:
            assert f"  - {r['code']}: " in report

        # MCP through the SDK's client: the compact result says it first, status carries it whole
        result, full = mcp[rid]
        assert list(result)[:2] == ["verdict", "summary"]
        assert result["verdict"] == verdict and full["verdict"] == verdict
        assert result["summary"].startswith(line), result["summary"]
        if outcome == "needs_review":
            assert "read these reasons to your person before approving" in result["summary"].lower()
            assert "acknowledge=['NOT_PROVEN']" in result["next"]

        # the notification
        payload = json.loads((notified / f"{rid}.json").read_text())
        assert payload["verdict"] == verdict and payload["verdict_line"] == line

        # the dashboard: the runs list and the run page
        row = re.search(rf'<tr data-run="{rid}".*?</tr>', listing, re.S)
        assert row is not None
        assert f'data-verdict="{outcome}">{line}</span>' in row.group(0), row.group(0)
        page = run_pages[rid]
        assert f'data-verdict="{outcome}"' in page and f">{line}</span>" in page
        for r in verdict["reasons"]:
            assert f'data-reason="{r["code"]}"' in page
        approvable = 'class="approve"' in page
        assert approvable == (outcome != "refused"), (outcome, approvable)

        # a one-task plan of the same verdict
        plan_code, pt, plan_shown = plans[outcome]
        assert pt["verdict"] == plan_shown["verdict"] and pt["verdict"]["outcome"] == outcome, (pt, plan_shown)
        assert plan_code == {"landable": 0, "needs_review": 7, "refused": 1}[outcome], (outcome, plan_code)
        if outcome == "needs_review":
            assert pt["state"] == "needs_review" and pt["review"]["verdict_line"] == one_line(pt["verdict"])
            assert pt["review"]["reasons"] == pt["verdict"]["reasons"]
        else:
            assert pt["review"] is None
