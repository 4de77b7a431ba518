"""What a run is, said the same on every surface: a change that overlaps the user's uncommitted edits is
warned about when bosun verifies it, a refused `integrate` is recorded on the run (show, list, history,
the dashboard say "landing refused", not "approved"), and a finished run reads landed (with its
commit), reverted (with the revert commit) or discarded, not "cleaned"."""

from __future__ import annotations

import pytest

from tests.conftest import git
from tests.web.test_dash_verdict import _row, client

pytestmark = pytest.mark.slow


def test_an_overlap_with_uncommitted_edits_is_warned_and_a_refused_landing_is_recorded(cli, repo, task_file):
    calc = repo / "src" / "calc.py"
    calc.write_text(calc.read_text() + "# my notes, not committed\n")
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--json")
    assert code == 0 and res["verdict"]["outcome"] == "landable", res
    [warning] = res["warnings"]
    assert warning["code"] == "OVERLAPS_UNCOMMITTED" and "src/calc.py" in warning["message"], warning
    assert "commit or stash" in warning["hint"]
    code, text = cli("show", res["id"])
    assert "warning: OVERLAPS_UNCOMMITTED" in text and "next: commit or stash your edits in src/calc.py" in text, text
    assert "bosun approve" in text.splitlines()[-1]

    assert cli("approve", res["id"], "--yes", "--json")[0] == 0
    code, out = cli("integrate", res["id"], "--json")
    assert code == 6 and out["error"]["code"] == "OVERLAPS_UNCOMMITTED", out
    assert calc.read_text().endswith("# my notes, not committed\n")  # the user's edit, untouched
    code, shown = cli("show", res["id"], "--json")
    assert shown["state"] == "approved" and shown["landing_refused"]["code"] == "OVERLAPS_UNCOMMITTED", shown
    code, text = cli("show", res["id"])
    assert f"run {res['id']}  [landing refused]" in text and "landing refused: OVERLAPS_UNCOMMITTED" in text, text
    code, listed = cli("list", "--json")
    assert listed["runs"][0]["shown_state"] == "landing refused", listed
    code, text = cli("list")
    assert "landing refused" in text and "approved" not in text, text
    code, text = cli("history", "")
    assert "landing refused" in text, text
    page = client().get("/").text
    assert 'data-state="landing refused"' in _row(page, res["id"])
    assert "data-landing-refused" in client().get(f"/runs/{res['id']}").text

    # Once the edit is committed, integrate lands it and the refusal is history.
    git(repo, "commit", "-qam", "my notes")
    code, out = cli("integrate", res["id"], "--json")
    assert code == 0 and out["merged_commit"] and "landing_refused" not in out, out


def test_landed_reverted_and_discarded_runs_read_as_what_they_are(cli, repo, task_file, tmp_path):
    code, landed = cli("delegate", str(task_file), "--repo", str(repo), "--auto-approve", "--json")
    assert code == 0 and landed["merged_commit"], landed
    code, gone = cli("delegate", str(task_file), "--repo", str(repo), "--json")
    assert cli("discard", gone["id"], "--json")[0] == 0
    code, listed = cli("list", "--json")
    by_id = {r["id"]: r for r in listed["runs"]}
    assert by_id[landed["id"]]["shown_state"] == "landed"
    assert by_id[landed["id"]]["shown_commit"] == landed["merged_commit"]
    assert by_id[gone["id"]]["shown_state"] == "discarded"
    code, text = cli("list")
    assert f"landed {landed['merged_commit'][:8]}" in text and "discarded" in text and "cleaned" not in text, text
    code, text = cli("history", "")
    assert f"landed {landed['merged_commit'][:8]}" in text and "discarded" in text and "cleaned" not in text, text
    page = client().get(f"/runs/{landed['id']}").text
    assert f'landed on main as commit <code>{landed["merged_commit"][:12]}</code>' in page  # in sight, not in Transitions
    assert landed["merged_commit"][:8] in _row(client().get("/").text, landed["id"])

    code, out = cli("revert", landed["id"], "--json")
    assert code == 0, out
    commit = out["revert"]["commit"]
    code, text = cli("list")
    assert f"reverted {commit[:8]}" in text, text
    code, text = cli("show", landed["id"])
    assert f"[reverted {commit[:8]}]" in text.splitlines()[0], text
    assert 'data-state="reverted"' in _row(client().get("/").text, landed["id"])
