"""A plan lands only landable tasks: one that needs review waits for a person, unmerged, and its
dependants do not start until `bosun approve RUN` and `bosun plan continue PLAN`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import git, user_state
from tests.e2e.test_plans import by_id, check, make_plan_repo, run_plan, task, write_plan


def test_a_task_that_needs_review_waits_for_a_person_then_the_plan_goes_on(cli: Any, tmp_path: Path) -> None:
    prepo = make_plan_repo(tmp_path / "repo")
    before = user_state(prepo)
    plan = write_plan(tmp_path / "p.json", [
        task("a", "@write out/a.txt a", ["out/a.txt"], verify=["true"]),  # passed before: proves nothing
        task("b", "@require out/a.txt\n@derive out/b.txt out/a.txt", ["out/b.txt"], ["a"], verify=[check("out/b.txt")]),
    ])
    code, res = run_plan(cli, prepo, plan)
    assert code == 7, res
    assert res["state"] == "paused" and res["error"]["code"] == "NEEDS_REVIEW", res
    assert res["review"] == {"tasks": ["a"], "wave": 1}
    tasks = by_id(res)
    a, b = tasks["a"], tasks["b"]
    run_id = a["run_id"]
    assert a["state"] == "needs_review" and a["run_state"] == "verified" and a["merged_commit"] is None
    assert a["verdict"]["outcome"] == "needs_review"
    assert [r["code"] for r in a["review"]["reasons"]] == ["NOT_PROVEN"] and a["review"]["run"] == run_id
    assert b["state"] == "pending" and b["run_id"] is None  # not started on a base without a
    assert user_state(prepo) == before  # nothing landed

    code, text = cli("plan", "status", res["id"])
    assert code == 0
    assert "needs_review" in text and "NOT_PROVEN" in text and f"bosun approve {run_id}" in text, text

    # Continued without a person's yes, it still waits (the run is not approved on the plan's say-so).
    code, again = cli("plan", "continue", res["id"], "--json")
    assert code == 7 and by_id(again)["a"]["state"] == "needs_review" and by_id(again)["a"]["run_id"] == run_id

    code, approved = cli("approve", run_id, "--yes", "--json")
    assert code == 0 and approved["verdict"]["acknowledged"]["codes"] == ["NOT_PROVEN"], approved
    code, done = cli("plan", "continue", res["id"], "--json")
    assert code == 0 and done["state"] == "succeeded", done
    assert all(t["state"] == "merged" for t in done["tasks"]), done["tasks"]
    assert git(prepo, "show", "HEAD:out/b.txt").strip()
