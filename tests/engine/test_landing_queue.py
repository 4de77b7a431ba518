"""bosun's own landings on one branch queue behind each other: several processes landing verified runs
at once all land, each change exactly once, each verified on the branch it lands on (again, when the
landing before it moved the branch). A branch moved by anyone else while bosun lands is still refused,
with the branch where that someone left it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, git
from tests.engine.load_support import (
    bosun_env,
    dirty_the_user_tree,
    finish,
    landings_of,
    make_load_repo,
    start_bosun,
    task_file,
    wait_until,
)


def _approved_runs(cli, tmp_path: Path, repo: Path, count: int, extra_verify: tuple[str, ...] = ()) -> list[str]:
    ids = []
    for i in range(count):
        task = task_file(tmp_path, i, extra_verify=extra_verify)
        code, res = cli("delegate", str(task), "--repo", str(repo), "--json")
        assert code == 0 and res["state"] == "verified", res
        code, res = cli("approve", res["id"], "--json")
        assert code == 0 and res["state"] == "approved", res
        ids.append(res["id"])
    return ids


def _move_the_branch(repo: Path) -> None:
    """A commit of the user's on main after the runs started: their landings are merges, verified again
    on the merged result (a landing on an unmoved branch reuses the verification and opens no window)."""
    (repo / "earlier.txt").write_text("committed while the runs worked\n")
    git(repo, "add", "earlier.txt")
    git(repo, "commit", "-qm", "earlier")


def test_concurrent_landings_queue_and_each_lands_once(cli, tmp_path, isolated_home):
    repo = make_load_repo(tmp_path / "repo", 4)
    dirty_the_user_tree(repo)
    mine = {p: (repo / p).read_bytes() for p in ("README.md", "staged.txt", "untracked.txt")}
    ids = _approved_runs(cli, tmp_path, repo, 4)

    procs = [start_bosun("integrate", run_id, "--json") for run_id in ids]
    results = [finish(p) for p in procs]

    for code, doc, err in results:
        assert code == 0, (doc, err)
        assert doc["state"] == "cleaned" and doc["merged_commit"], doc
    assert landings_of(repo) == {run_id: 1 for run_id in ids}
    for i in range(4):
        assert git(repo, "show", f"main:src/m{i}.py") == f"VALUE = {i + 1}\n"
    # Each landing was verified on the branch as the ones before it left it: with their fixes in.
    merged = {doc["merged_commit"]: ids.index(doc["id"]) for _, doc, _ in results}
    order = [merged[c] for c in git(repo, "rev-list", "--first-parent", "--reverse", "main").split() if c in merged]
    for k, i in enumerate(order):
        checked = json.loads((isolated_home / "runs" / ids[i] / "reverification.json").read_text())
        assert checked["passed"]
        fixed = [j for j in range(4) if git(repo, "show", f"{checked['commit']}:src/m{j}.py") != "VALUE = 0  # bug\n"]
        assert fixed == sorted(order[: k + 1])
    assert any("waiting for run" in err and "to land on main first" in err for _, _, err in results)
    assert {p: (repo / p).read_bytes() for p in mine} == mine
    assert git(repo, "diff", "--cached", "--name-only").split() == ["staged.txt"]


def test_a_branch_moved_by_someone_else_during_a_landing_is_refused(cli, tmp_path, isolated_home):
    repo = make_load_repo(tmp_path / "repo", 1)
    [run_id] = _approved_runs(cli, tmp_path, repo, 1)
    _move_the_branch(repo)
    proc = start_bosun("integrate", run_id, "--json")
    # The user commits while the merged result is re-verified (its HOME exists only then).
    wait_until(lambda: any(isolated_home.glob(f"runs/{run_id}/verify-home-*")), timeout=30, step=0.01)
    (repo / "other.txt").write_text("the user was here\n")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-qm", "mine")
    mine = git(repo, "rev-parse", "main").strip()

    code, doc, err = finish(proc)

    assert code == 6, (doc, err)
    assert doc["error"]["code"] == "CONFLICT" and "moved" in doc["error"]["message"], doc
    assert git(repo, "rev-parse", "main").strip() == mine
    assert doc["state"] == "approved"


HELPER = ROOT / "tests" / "engine" / "unqueued_landing.py"
GATE = ("import os, sys, time\n"
        "hold, release = sys.argv[1], sys.argv[2]\n"
        "while os.path.exists(hold) and not os.path.exists(release):\n"
        "    time.sleep(0.02)\n")


def test_a_landing_of_bosuns_that_did_not_queue_is_built_on_and_verified_there(cli, tmp_path, isolated_home):
    repo = make_load_repo(tmp_path / "repo", 2)
    hold, release = tmp_path / "hold", tmp_path / "release"
    (tmp_path / "gate.py").write_text(GATE)
    gate = f"{sys.executable} {tmp_path / 'gate.py'} {hold} {release}"
    first, second = _approved_runs(cli, tmp_path, repo, 2, extra_verify=(gate,))
    _move_the_branch(repo)
    hold.write_text("")
    proc = start_bosun("integrate", second, "--json")
    wait_until(lambda: any(isolated_home.glob(f"runs/{second}/verify-home-*")), timeout=30, step=0.01)
    # While the second is re-verified, the first lands without queueing (recorded as bosun's own).
    subprocess.run([sys.executable, str(HELPER), first], check=True, env=bosun_env(), capture_output=True)
    release.write_text("")

    code, doc, err = finish(proc)

    assert code == 0, (doc, err)
    assert landings_of(repo) == {first: 1, second: 1}
    checked = json.loads((isolated_home / "runs" / second / "reverification.json").read_text())
    assert git(repo, "show", f"{checked['commit']}:src/m0.py") == "VALUE = 1\n"  # verified on the moved tip
    events = (isolated_home / "runs" / second / "events.jsonl").read_text()
    assert "built again on it" in events


def test_a_landing_killed_after_the_branch_moved_is_finished_not_made_twice(cli, tmp_path, isolated_home):
    repo = make_load_repo(tmp_path / "repo", 1)
    [run_id] = _approved_runs(cli, tmp_path, repo, 1)
    subprocess.run([sys.executable, str(HELPER), run_id, "--die-after-move"], check=True, env=bosun_env(),
                   capture_output=True)
    moved_to = git(repo, "rev-parse", "main").strip()

    code, res = cli("integrate", run_id, "--json")

    assert code == 0, res
    assert res["merged_commit"] == moved_to and git(repo, "rev-parse", "main").strip() == moved_to
    assert landings_of(repo) == {run_id: 1}
