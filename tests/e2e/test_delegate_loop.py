"""The closed loop through the CLI with scripted workers as real processes and real git."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, task_yaml, user_state


def delegate(cli, repo: Path, task: Path, *extra: str) -> tuple[int, dict]:
    return cli("delegate", str(task), "--repo", str(repo), "--json", *extra)


def gate(result: dict, code: str) -> dict:
    return next(g for g in result["gates"] if g["code"] == code)


def test_correct_fix_is_verified_then_approved_and_integrated(cli, repo, task_file):
    before = user_state(repo)
    code, res = delegate(cli, repo, task_file, "--profile", "fix")
    assert code == 0, res
    assert res["state"] == "verified"
    assert res["verification"]["passed"] is True
    assert all(g["ok"] for g in res["gates"]), res["gates"]
    assert res["files_changed"] == 1
    assert len(res["diff_sha256"]) == 64
    assert res["usage"]["input_tokens"] == 1200
    assert user_state(repo) == before  # nothing touched until integrate

    code, res = cli("approve", res["id"], "--json")
    assert code == 0 and res["state"] == "approved"
    code, res = cli("integrate", res["id"], "--json")
    assert code == 0, res
    assert res["state"] == "cleaned"
    head = git(repo, "rev-parse", "HEAD").strip()
    assert head == res["merged_commit"]
    msg = git(repo, "log", "-1", "--format=%B")
    assert f"Bosun-Run: {res['id']}" in msg and "Bosun-Worker: fix" in msg and "Bosun-Verification: passed" in msg
    assert "return a + b" in (repo / "src/calc.py").read_text()
    assert git(repo, "status", "--porcelain") == ""

    code, res = cli("report", res["id"], "--json")
    assert code == 0 and res["state"] == "cleaned"
    metrics = json.loads((Path(res["run_dir"]) / "metrics.json").read_text())
    assert metrics["worker"]["usage"]["input_tokens"] == 1200
    assert metrics["parent"]["parent_direct_tokens"] > 0
    code, res = cli("cleanup", res["id"], "--json")
    assert code == 0 and res["state"] == "cleaned"
    assert not Path(res["worktree"]).exists()
    assert "bosun/" not in git(repo, "branch", "--list")


def test_auto_approve_lands_and_reports(cli, repo, task_file):
    code, res = delegate(cli, repo, task_file, "--profile", "fix", "--auto-approve")
    assert code == 0, res
    assert res["state"] == "cleaned"
    assert "return a + b" in (repo / "src/calc.py").read_text()
    # Landed and reported: nothing of the run is left in the user's repo, and the record still reads.
    assert not Path(res["worktree"]).exists()
    assert "bosun/" not in git(repo, "branch", "--list") and len(git(repo, "worktree", "list").splitlines()) == 1
    code, shown = cli("show", res["id"], "--json")
    assert code == 0 and shown["state"] == "cleaned" and shown["merged_commit"] == res["merged_commit"]
    code, diff = cli("diff", res["id"], "--json")
    assert code == 0 and "return a + b" in json.dumps(diff)


def test_cleanup_after_integrate_can_be_turned_off(cli, repo, task_file):
    config = repo / "bosun.toml"
    config.write_text("cleanup_after_integrate = false\n" + config.read_text())
    code, res = delegate(cli, repo, task_file, "--profile", "fix", "--auto-approve")
    assert code == 0 and res["state"] == "reported", res
    assert Path(res["worktree"]).is_dir() and f"bosun/{res['id']}" in git(repo, "branch", "--list")


@pytest.mark.parametrize(
    ("mode", "code"),
    [
        ("edit_locked", "LOCKED_PATH_CHANGED"),
        ("delete_test", "TEST_WEAKENED"),
        ("add_skip", "TEST_WEAKENED"),
        ("fake_key", "SECRET_DETECTED"),
        ("noop", "NO_CHANGES"),
        ("escape_symlink", "SYMLINK_CHANGE"),
    ],
)
def test_hostile_or_useless_workers_are_rejected(cli, repo, task_file, mode, code):
    before = user_state(repo)
    exit_code, res = delegate(cli, repo, task_file, "--profile", mode, "--auto-approve")
    assert exit_code == 3, res
    assert res["state"] == "rejected"
    assert gate(res, code)["ok"] is False, res["gates"]
    assert user_state(repo) == before
    # A rejected run cannot be approved.
    exit_code, res = cli("approve", res["id"], "--json")
    assert exit_code == 3 and res["error"]["code"] == "APPROVE_REFUSED"


def test_a_write_next_to_the_worktree_is_refused_by_the_kernel(cli, repo, task_file):
    before = user_state(repo)
    exit_code, res = delegate(cli, repo, task_file, "--profile", "escape_dotdot")
    assert exit_code == 1 and res["state"] == "failed", res
    message = res["error"]["message"]  # Landlock refuses it; a read-only mount (namespaces) too
    assert any(why in message for why in ("Permission denied", "PermissionError", "Read-only file system")), message
    assert not (Path(res["worktree"]).parent / "escaped.txt").exists()
    assert user_state(repo) == before


def test_without_the_sandbox_a_write_next_to_the_worktree_is_a_red_gate(cli, repo, task_file, tmp_path):
    # The second net: bosun's own check of the worktree's surroundings, for machines without Landlock.
    (tmp_path / "no-user-config.toml").write_text('sandbox = "off"\n')
    exit_code, res = delegate(cli, repo, task_file, "--profile", "escape_dotdot")
    assert exit_code == 3, res
    assert gate(res, "SYMLINK_CHANGE")["ok"] is False
    assert res["sandbox"]["mechanism"] == "none"


def test_verification_is_bosuns_not_the_workers(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", locked=[])
    # The worker claims success but does nothing useful to the bug: verification fails.
    exit_code, res = delegate(cli, repo, task, "--profile", "revise")
    assert exit_code == 3
    assert res["verification"]["passed"] is False
    assert gate(res, "VERIFY_FAILED")["ok"] is False
    assert res["verification"]["commands"][0]["exit_code"] != 0


def test_dirty_tree_is_carried_but_never_committed(cli, repo, task_file):
    (repo / "README.md").write_text("user's uncommitted notes\n")
    (repo / "src" / "extra.py").write_text("X = 1\n")
    git(repo, "add", "src/extra.py")  # staged
    (repo / "pyproject.toml").write_text((repo / "pyproject.toml").read_text() + "# local edit\n")
    before = user_state(repo)
    code, res = delegate(cli, repo, task_file, "--profile", "fix")
    assert code == 0, res
    wt = Path(res["worktree"])
    assert (wt / "README.md").read_text() == "user's uncommitted notes\n"
    assert user_state(repo) == before
    assert res["files_changed"] == 1  # the user's work is not part of the change
    code, res = cli("approve", res["id"], "--json")
    code, res = cli("integrate", res["id"], "--json")
    assert code == 0, res
    # Only the worker's change was committed; the user's work is still uncommitted, staged as before.
    files = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert files == ["src/calc.py"]
    assert (repo / "README.md").read_text() == "user's uncommitted notes\n"
    assert "A  src/extra.py" in git(repo, "status", "--porcelain")
    assert " M pyproject.toml" in git(repo, "status", "--porcelain")


def test_integrate_refuses_when_uncommitted_work_overlaps(cli, repo, task_file):
    code, res = delegate(cli, repo, task_file, "--profile", "fix")
    assert code == 0
    run_id = res["id"]
    cli("approve", run_id, "--json")
    (repo / "src" / "calc.py").write_text((repo / "src" / "calc.py").read_text() + "# mine\n")
    before = user_state(repo)
    code, res = cli("integrate", run_id, "--json")
    assert code == 6, res
    assert res["error"]["code"] in ("OVERLAPS_UNCOMMITTED", "SOURCE_CHANGED")
    assert user_state(repo) == before


def test_integrate_merges_when_the_branch_moved(cli, repo, task_file):
    code, res = delegate(cli, repo, task_file, "--profile", "fix")
    run_id = res["id"]
    (repo / "NOTES.md").write_text("new\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "user commit during the run")
    cli("approve", run_id, "--json")
    code, res = cli("integrate", run_id, "--json")
    assert code == 0, res
    parents = git(repo, "log", "-1", "--format=%P").split()
    assert len(parents) == 2
    assert "return a + b" in (repo / "src/calc.py").read_text()
    assert (repo / "NOTES.md").exists()


def test_edits_after_verification_never_land(cli, repo, task_file):
    """What lands is the tree bosun verified: the worktree is not read again after verification."""
    code, res = delegate(cli, repo, task_file, "--profile", "fix")
    verified = (Path(res["worktree"]) / "src" / "calc.py").read_text()
    (Path(res["worktree"]) / "src" / "calc.py").write_text("def add(a, b):\n    return 42\n")
    (Path(res["worktree"]) / "EXTRA.md").write_text("not verified\n")
    code, res = cli("approve", res["id"], "--json")
    assert code == 0, res
    code, res = cli("integrate", res["id"], "--json")
    assert code == 0, res
    assert (repo / "src" / "calc.py").read_text() == verified
    assert not (repo / "EXTRA.md").exists()


def test_approve_refuses_records_rewritten_after_verification(cli, repo, tmp_path):
    """gates.json is a report, not the authority: approve recomputes the gates from the verified tree."""
    from bosun.core import paths

    task = task_yaml(tmp_path / "t.json")
    code, res = delegate(cli, repo, task, "--profile", "edit_locked")
    assert code == 3
    gates_file = paths.run_dir(res["id"]) / "gates.json"
    doc = json.loads(gates_file.read_text())
    for gate in doc["gates"]:
        gate["ok"] = True
    gates_file.write_text(json.dumps(doc))
    code, out = cli("approve", res["id"], "--json")
    assert code == 3, out
    assert out["error"]["code"] == "RECORD_MISMATCH"
    assert "LOCKED_PATH_CHANGED" in out["error"]["message"]


def test_waiver_is_recorded(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", limits={"max_files": 1})
    code, res = delegate(cli, repo, task, "--profile", "fake_key")  # 2 files + secret
    assert code == 3
    code, out = cli("approve", res["id"], "--waive", "TOO_MANY_FILES", "--json")
    assert code == 2  # --reason required
    code, out = cli("approve", res["id"], "--waive", "TOO_MANY_FILES", "--reason", "ok", "--json")
    assert code == 3 and "SECRET_DETECTED" in out["error"]["message"]


def test_review_with_open_p1_blocks_approval(cli, repo, task_file, tmp_path):
    code, res = delegate(cli, repo, task_file, "--profile", "fix")
    review = tmp_path / "review.json"
    review.write_text(json.dumps({"verdict": "approve", "findings": [{"severity": "P1", "title": "wrong"}]}))
    code, out = cli("approve", res["id"], "--review", str(review), "--json")
    assert code == 3 and "P1" in out["error"]["message"]
    review.write_text(json.dumps({"verdict": "approve", "findings": [{"severity": "P3", "title": "nit"}]}))
    code, out = cli("approve", res["id"], "--review", str(review), "--json")
    assert code == 0 and out["state"] == "approved"


def test_timeout_kills_the_worker_group(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", timeout_s=2)
    code, res = delegate(cli, repo, task, "--profile", "hang")
    assert code == 4, res
    assert res["state"] == "failed"
    assert res["error"]["code"] == "TIMEOUT"
    assert _no_process_with(res["worktree"])


def test_background_child_holding_stdout_is_killed(cli, repo, task_file):
    code, res = delegate(cli, repo, task_file, "--profile", "bg_child")
    assert code == 0, res
    assert res["state"] == "verified"
    assert _no_process_with("time.sleep(3600)")


def test_huge_output_is_bounded(cli, repo, task_file):
    code, res = delegate(cli, repo, task_file, "--profile", "spam")
    assert code == 0, res
    events = Path(res["run_dir"]) / "events.jsonl"
    assert events.stat().st_size < 6 * 1024 * 1024  # 50 MB of output, a bounded record
    assert "further output lines were not recorded" in events.read_text()[-2000:]


def test_git_guard_stops_history_changes(cli, repo, task_file, tmp_path):
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    git(repo, "remote", "add", "origin", str(bare))
    before = user_state(repo)
    code, res = delegate(cli, repo, task_file, "--profile", "git_attack")
    assert code == 0, res
    results = json.loads((Path(res["run_dir"]) / "home" / "git_attack" / "git_attack.json").read_text())
    # `git stash` may find nothing to save once the blocked `reset --hard` has reset the files (reset
    # touches the tree before its ref update is refused); the stash list check below covers it.
    assert all(rc != 0 for name, rc in results.items() if name != "abs_stash"), json.dumps(results)
    assert git(bare, "for-each-ref") == ""
    assert user_state(repo) == before
    assert git(repo, "tag") == ""
    wt_branch_head = git(repo, "rev-parse", f"bosun/{res['id']}").strip()
    assert wt_branch_head == res["base"]


def _no_process_with(needle: str) -> bool:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return not any(needle in line and "ps -eo" not in line for line in out.splitlines())


def test_user_repo_byte_for_byte_unchanged_through_rejection(cli, repo, task_file):
    (repo / "wip.txt").write_text("wip\n")
    git(repo, "stash", "push", "-u", "-q", "-m", "saved")
    (repo / "wip2.txt").write_text("more\n")
    before = user_state(repo)
    assert "saved" in before["stash"] if isinstance(before.get("stash"), str) else True
    code, res = delegate(cli, repo, task_file, "--profile", "edit_locked")
    assert code == 3
    cli("discard", res["id"], "--json")
    assert user_state(repo) == before
    assert os.path.exists(repo / "wip2.txt")


def test_source_changed_during_the_run_is_a_red_gate(cli, repo, task_file):
    code, res = cli("prepare", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    run_id = res["id"]
    cli("work", run_id, "--json")
    # Meanwhile the user commits their own change to the same file.
    (repo / "src" / "calc.py").write_text((repo / "src" / "calc.py").read_text().replace("# bug", "# known bug"))
    git(repo, "commit", "-qam", "user edit")
    code, res = cli("verify", run_id, "--json")
    assert code == 3
    assert gate(res, "SOURCE_CHANGED")["ok"] is False
    assert "src/calc.py" in gate(res, "SOURCE_CHANGED")["detail"]


def test_waived_gate_lets_a_run_land_and_is_marked(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", limits={"max_files": 1}, locked=[])
    code, res = delegate(cli, repo, task, "--profile", "edit_locked")  # fix + a test tweak: 2 files
    assert code == 3 and gate(res, "TOO_MANY_FILES")["ok"] is False
    code, res = cli("approve", res["id"], "--waive", "too_many_files", "--reason", "the test tweak is a comment", "--json")
    assert code == 0, res
    waived = gate(res, "TOO_MANY_FILES")
    assert waived["waived"] is True
    code, res = cli("integrate", res["id"], "--json")
    assert code == 0 and res["state"] == "cleaned"


def test_explore_mode_answers_without_changes(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", mode="explore", verify=[], prompt="Where is add() defined?")
    code, res = delegate(cli, repo, task, "--profile", "noop", "--auto-approve")
    assert code == 0, res
    assert res["state"] == "verified"  # nothing to approve or merge: the answer is the product
    assert res["final_message"] == "nothing to do"
    assert gate(res, "NO_CHANGES")["ok"] is True


def test_review_mode_cannot_write_the_worktree(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", mode="review", verify=[])
    code, res = delegate(cli, repo, task, "--profile", "fix")
    assert code == 1 and res["state"] == "failed", res  # the kernel refused the edit: the worker crashed
    assert "return a - b  # bug" in (Path(res["worktree"]) / "src" / "calc.py").read_text()


def test_explore_mode_that_changes_files_is_rejected(cli, repo, tmp_path):
    # Without the kernel sandbox, bosun's gate is the net.
    (tmp_path / "no-user-config.toml").write_text('sandbox = "off"\n')
    task = task_yaml(tmp_path / "t.json", mode="review", verify=[])
    code, res = delegate(cli, repo, task, "--profile", "fix")
    # The writes are discarded before the change is judged: the change is empty, the run is not.
    assert code == 3 and gate(res, "READ_ONLY_VIOLATION")["ok"] is False
    assert gate(res, "NO_CHANGES")["ok"] is True and res["files_changed"] == 0


def test_cleanup_never_deletes_unmerged_work_without_force(cli, repo, task_file):
    code, res = delegate(cli, repo, task_file, "--profile", "fix")
    run_id, wt = res["id"], Path(res["worktree"])
    code, out = cli("cleanup", run_id, "--json")
    assert code == 2 and "not merged" in out["error"]["message"]
    assert (wt / "src" / "calc.py").read_text().count("a + b") == 1  # still there
    code, out = cli("cleanup", run_id, "--force", "--json")
    assert code == 0 and out["state"] == "cleaned" and not wt.exists()
    # What the worker wrote is kept in the run directory.
    assert "+    return a + b" in (Path(out["run_dir"]) / "final.patch").read_text()
    assert f"bosun/{run_id}" not in git(repo, "branch", "--list")


def test_wait_queues_for_a_slot(cli, repo, task_file, monkeypatch):
    import threading

    monkeypatch.setenv("BOSUN_MAX_CONCURRENT_RUNS", "1")
    code, first = cli("prepare", str(task_file), "--repo", str(repo), "--json")
    assert code == 0
    from bosun.engine.context import RunContext
    from bosun.engine.teardown import discard
    from bosun.store.db import open_store

    # Free the slot a moment later, from another thread, as another process would.
    timer = threading.Timer(1.0, lambda: discard(RunContext(open_store()), first["id"]))
    timer.start()
    code, second = cli("prepare", str(task_file), "--repo", str(repo), "--wait", "--json")
    timer.join()
    assert code == 0 and second["state"] == "prepared"
