"""Plans end to end: scripted workers (plan_worker.py) as real processes through the `command` adapter,
real git, the CLI in-process. Helpers here are shared with test_plans_recovery.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, user_state

WORKER = ROOT / "tests" / "workers" / "plan_worker.py"
PY = sys.executable


# -- helpers --------------------------------------------------------------------------------------


def profile(name: str, mode: str, tier: str = "cheap") -> str:
    cmd = json.dumps([PY, str(WORKER), mode])
    return f'[profiles.{name}]\nadapter = "command"\ncommand = {cmd}\ntier = "{tier}"\n\n'


def make_plan_repo(path: Path, extra_profiles: str = "", cap: int = 4) -> Path:
    path.mkdir(parents=True)
    (path / "README.md").write_text("# plan test repo\n")
    (path / "shared.txt").write_text("base\n")
    (path / ".gitignore").write_text("__pycache__/\n")
    (path / "bosun.toml").write_text(
        f'default_profile = "good"\nmax_concurrent_runs = {cap}\n\n'
        + profile("good", "ok") + profile("bad", "broken") + extra_profiles
    )
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def check(path: str, text: str | None = None) -> str:
    """A verify command checking that ``path`` exists (and contains ``text``)."""
    return f"{PY} {WORKER} check {path}" + (f" {text}" if text else "")


def task(task_id: str, prompt: str, owns: list[str] | None = None, depends: list[str] | None = None,
         verify: list[str] | None = None, **extra: object) -> dict:
    t: dict = {"id": task_id, "prompt": prompt}
    if owns is not None:
        t["owns"] = owns
    if depends:
        t["depends"] = depends
    if verify is not None:
        t["verify"] = verify
    t.update(extra)
    return t


def write_plan(path: Path, tasks: list[dict], **head: object) -> Path:
    doc = {"title": head.pop("title", "test plan"), "defaults": {"timeout_s": 60}, **head, "tasks": tasks}
    path.write_text(json.dumps(doc, indent=1))
    return path


def by_id(result: dict) -> dict[str, dict]:
    return {t["id"]: t for t in result["tasks"]}


def bosun_branches(repo: Path) -> list[str]:
    out = git(repo, "branch", "--list", "bosun/*", "--format=%(refname:short)")
    return [b.strip() for b in out.splitlines() if b.strip()]


def worktree_count(repo: Path) -> int:
    return sum(1 for ln in git(repo, "worktree", "list", "--porcelain").splitlines() if ln.startswith("worktree "))


def run_plan(cli, repo: Path, plan: Path, *extra: str) -> tuple[int, dict]:
    return cli("plan", "run", str(plan), "--repo", str(repo), "--json", *extra)


@pytest.fixture
def prepo(tmp_path: Path) -> Path:
    return make_plan_repo(tmp_path / "repo")


def diamond(tmp_path: Path, plan_verify: bool = True) -> Path:
    """a; b, c, d after a; e after b and c; f after d: waves [a], [b, c, d], [e, f]."""
    tasks = [
        task("a", "@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt", "a")]),
        task("b", "@require out/a.txt\n@sleep 0.8\n@derive out/b.txt out/a.txt", ["out/b.txt"], ["a"],
             verify=[check("out/b.txt", "after")]),
        task("c", "@require out/a.txt\n@sleep 0.8\n@derive out/c.txt out/a.txt", ["out/c.txt"], ["a"],
             verify=[check("out/c.txt", "after")]),
        task("d", "@require out/a.txt\n@sleep 0.8\n@derive out/d.txt out/a.txt", ["out/d.txt"], ["a"],
             verify=[check("out/d.txt")]),
        task("e", "@require out/b.txt\n@require out/c.txt\n@sleep 0.3\n@derive out/e.txt out/b.txt out/c.txt",
             ["out/e.txt"], ["b", "c"], verify=[check("out/e.txt")]),
        task("f", "@require out/d.txt\n@sleep 0.3\n@derive out/f.txt out/d.txt", ["out/f.txt"], ["d"],
             verify=[check("out/f.txt")]),
    ]
    head = {"verify": [check("out/a.txt")]} if plan_verify else {}
    return write_plan(tmp_path / "diamond.json", tasks, title="Diamond", **head)


def working_interval(store, run_id: str) -> tuple[float, float]:
    rows = store.transitions(run_id)
    start = next(r["at"] for r in rows if r["to_state"] == "working")
    end = next(r["at"] for r in rows if r["from_state"] == "working")
    return start, end


# -- the diamond ----------------------------------------------------------------------------------


def test_diamond_runs_waves_in_parallel_and_lands_one_commit(cli, prepo, tmp_path):
    from bosun.store.db import open_store

    plan = diamond(tmp_path)
    code, out = cli("plan", "check", str(plan), "--repo", str(prepo), "--json")
    assert code == 0, out
    assert out["waves"] == [["a"], ["b", "c", "d"], ["e", "f"]]
    before_head = git(prepo, "rev-parse", "HEAD").strip()

    code, res = run_plan(cli, prepo, plan)
    assert code == 0, res
    assert res["state"] == "succeeded"
    tasks = by_id(res)
    assert all(t["state"] == "merged" and t["attempts"] == 1 for t in tasks.values()), tasks
    assert res["waves"] == [["a"], ["b", "c", "d"], ["e", "f"]]

    # Dependents saw what their parents wrote (the worker @require-d it; the content proves it).
    assert (prepo / "out/e.txt").read_text() == "e after b after a\ne after c after a\n"
    assert (prepo / "out/f.txt").read_text() == "f after d after a\n"
    # One squashed commit on the source branch, with only the plan's files; nothing left behind.
    assert git(prepo, "rev-parse", "HEAD~1").strip() == before_head
    assert res["merged_commit"] == git(prepo, "rev-parse", "HEAD").strip()
    files = sorted(git(prepo, "show", "--name-only", "--format=", "HEAD").split())
    assert files == [f"out/{x}.txt" for x in "abcdef"]
    assert f"Bosun-Plan: {res['id']}" in git(prepo, "log", "-1", "--format=%B")
    assert git(prepo, "status", "--porcelain") == ""
    assert bosun_branches(prepo) == []
    assert worktree_count(prepo) == 1

    store = open_store()
    # Wave 2 really ran in parallel: the three workers were all running at one moment.
    intervals = [working_interval(store, tasks[t]["run_id"]) for t in "bcd"]
    assert max(s for s, _ in intervals) < min(e for _, e in intervals), intervals
    # Wave 3 started from the integration head holding every wave-2 merge.
    e_run = store.require_run(tasks["e"]["run_id"])
    assert e_run.base == tasks["d"]["merged_commit"]
    assert e_run.source_branch == f"bosun/plan-base/{res['id']}"  # judged against its wave base
    # Run records are truthful: approved, then integrated into the integration branch, then cleaned.
    history = [(t["from_state"], t["to_state"], t["reason"]) for t in store.transitions(tasks["a"]["run_id"])]
    assert ("approved", "integrated") in [(a, b) for a, b, _ in history]
    assert any("merged into bosun/plan/" in r for _, _, r in history)
    assert history[-1][1] == "cleaned"
    assert Path(res["plan_dir"], "verify-wave-3.json").exists()


def test_dirty_tree_is_carried_into_the_plan_but_never_committed(cli, prepo, tmp_path):
    (prepo / "notes.txt").write_text("my uncommitted notes\n")
    (prepo / "README.md").write_text("# edited, not committed\n")
    (prepo / "staged.txt").write_text("staged\n")
    git(prepo, "add", "staged.txt")
    before = user_state(prepo)
    plan = write_plan(tmp_path / "p.json", [
        task("x", "@require notes.txt\n@require staged.txt\n@write out/x.txt x", ["out/x.txt"],
             verify=[check("out/x.txt", "x")]),
    ])
    code, res = run_plan(cli, prepo, plan)
    assert code == 0, res
    assert res["snapshot"] is True and res["checkpoint"] != res["source_head"]
    # Only the task's file was committed; the user's work is still theirs, uncommitted, as it was.
    assert git(prepo, "show", "--name-only", "--format=", "HEAD").split() == ["out/x.txt"]
    after = user_state(prepo)
    assert after["paths"] == {**before["paths"]}
    status = git(prepo, "status", "--porcelain")
    assert "?? notes.txt" in status and " M README.md" in status and "A  staged.txt" in status


# -- conflicts, rotation, failure -------------------------------------------------------------------


def test_conflict_pauses_then_a_fixed_plan_continues(cli, prepo, tmp_path):
    # owns are disjoint, but each task's scope also allows shared.txt and both rewrite it: a real
    # merge conflict in the integration branch.
    scope = ["out/**", "shared.txt"]
    tasks = [
        task("left", "@write out/left.txt l\n@write shared.txt left", ["out/left.txt"], scope=scope,
             verify=[check("shared.txt", "left")]),
        task("right", "@write out/right.txt r\n@write shared.txt right", ["out/right.txt"], scope=scope,
             verify=[check("shared.txt", "right")]),
    ]
    plan = write_plan(tmp_path / "p.json", tasks)
    code, out = cli("plan", "check", str(plan), "--repo", str(prepo), "--json")
    assert code == 0 and out["warnings"], out  # scope wider than owns is allowed, with a warning
    before = user_state(prepo)

    code, res = run_plan(cli, prepo, plan)
    assert code == 6, res
    assert res["state"] == "paused"
    t = by_id(res)
    assert t["left"]["state"] == "merged"
    assert t["right"]["state"] == "conflict"
    assert t["right"]["conflict"]["files"] == ["shared.txt"]
    assert res["conflict"]["tasks"] == ["right"] and res["conflict"]["files"] == ["shared.txt"]
    assert res["error"]["code"] == "MERGE_CONFLICT" and "depends" in res["error"]["hint"]
    assert user_state(prepo) == before  # source untouched
    assert f"bosun/plan/{res['id']}" in bosun_branches(prepo)  # kept
    left_run = t["left"]["run_id"]

    # A merged task cannot be changed by the fixed plan.
    bad = write_plan(tmp_path / "bad.json", [dict(tasks[0], prompt="@write out/left.txt other"), tasks[1]])
    code, out = cli("plan", "continue", res["id"], "--plan", str(bad), "--json")
    assert code == 2 and out["error"]["code"] == "MERGED_TASK_CHANGED", out

    fixed = write_plan(tmp_path / "fixed.json", [tasks[0], dict(tasks[1], depends=["left"])])
    code, res = cli("plan", "continue", res["id"], "--plan", str(fixed), "--json")
    assert code == 0, res
    assert res["state"] == "succeeded"
    t = by_id(res)
    assert t["left"]["run_id"] == left_run and t["left"]["runs"] == [left_run]  # not redone
    assert t["right"]["wave"] == 2 and len(t["right"]["runs"]) == 1  # the conflicting run was replaced
    assert (prepo / "shared.txt").read_text() == "right\n"
    assert (prepo / "out/left.txt").exists() and (prepo / "out/right.txt").exists()
    assert bosun_branches(prepo) == []


def test_failed_attempt_is_retried_with_the_next_profile_of_its_tier(cli, tmp_path):
    repo = make_plan_repo(tmp_path / "repo", extra_profiles=profile("aa-premium", "ok", tier="premium"))
    plan = write_plan(tmp_path / "p.json", [task("t", "@write out/t.txt t", ["out/t.txt"], verify=[check("out/t.txt")])])
    code, res = run_plan(cli, repo, plan, "--profile", "bad")
    assert code == 0, res
    t = by_id(res)["t"]
    assert t["state"] == "merged" and t["attempts"] == 2
    assert t["profiles"] == ["bad", "good"]  # same tier, name order; never the premium one
    assert len(t["runs"]) == 2 and t["failures"][0]["profile"] == "bad"

    from bosun.store.db import open_store

    first = open_store().require_run(t["runs"][0])
    assert first.state == "cleaned"  # its worktree is gone, its record stays
    assert [r["to_state"] for r in open_store().transitions(first.id)][:3] == ["prepared", "working", "failed"]
    assert not Path(first.worktree).exists()
    assert (repo / "out/t.txt").read_text() == "t\n"


def test_task_failing_after_retries_fails_the_plan_and_leaves_the_source_alone(cli, prepo, tmp_path):
    (prepo / "README.md").write_text("# uncommitted edit\n")
    (prepo / "scratch.txt").write_text("untracked\n")
    git(prepo, "stash", "list")
    before = user_state(prepo)
    plan = write_plan(tmp_path / "p.json", [
        task("ok", "@write out/ok.txt ok", ["out/ok.txt"], verify=[check("out/ok.txt")]),
        task("never", "@write out/never.txt wrong", ["out/never.txt"], verify=[check("out/never.txt", "right")]),
        task("later", "@write out/later.txt l", ["out/later.txt"], ["never"], verify=[check("out/later.txt")]),
    ], max_attempts=2)
    code, res = run_plan(cli, prepo, plan)
    assert code == 1, res
    assert res["state"] == "failed"
    t = by_id(res)
    assert t["never"]["state"] == "failed" and t["never"]["attempts"] == 2
    # Attempt 1 (good) was rejected by verification; attempt 2 rotated to the next cheap profile (bad).
    assert [(f["profile"], f["state"]) for f in t["never"]["failures"]] == [("good", "rejected"), ("bad", "failed")]
    assert t["ok"]["state"] == "merged"  # its sibling still merged into the integration branch
    assert t["later"]["state"] == "pending" and t["later"]["run_id"] is None  # never started
    assert res["error"]["code"] == "TASK_FAILED" and "never" in res["error"]["message"]
    assert user_state(prepo) == before
    integration = f"bosun/plan/{res['id']}"
    assert integration in bosun_branches(prepo)
    assert git(prepo, "show", f"{integration}:out/ok.txt") == "ok\n"
    last = t["never"]["run_id"]
    assert t["never"]["run_state"] == "failed"  # the last attempt is kept for inspection

    code, res = cli("plan", "abort", res["id"], "--json")
    assert code == 0, res
    assert res["state"] == "aborted"
    assert bosun_branches(prepo) == [] and worktree_count(prepo) == 1
    assert user_state(prepo) == before

    from bosun.store.db import open_store

    runs = open_store().list_runs(plan_id=res["id"], limit=100)
    assert len(runs) == 3 and all(r.state == "cleaned" for r in runs)  # records kept
    assert any(r.id == last for r in runs)
    code, out = cli("plan", "abort", res["id"], "--json")
    assert code == 2 or code == 1
    assert out["error"]["code"] == "INVALID_STATE"


def test_no_merge_keeps_the_result_on_the_integration_branch(cli, prepo, tmp_path):
    before = user_state(prepo)
    plan = write_plan(tmp_path / "p.json", [task("a", "@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt")])])
    code, res = run_plan(cli, prepo, plan, "--no-merge")
    assert code == 0, res
    assert res["state"] == "succeeded" and res["merged_commit"] is None
    assert user_state(prepo) == before
    assert bosun_branches(prepo) == [f"bosun/plan/{res['id']}"]
    assert git(prepo, "show", f"bosun/plan/{res['id']}:out/a.txt") == "a\n"
    assert worktree_count(prepo) == 1


def test_landing_refused_for_overlapping_uncommitted_work_then_continued(cli, prepo, tmp_path):
    # The user has an uncommitted edit in shared.txt; the plan (which sees it) rewrites that file.
    (prepo / "shared.txt").write_text("base\nuser line\n")
    plan = write_plan(tmp_path / "p.json", [
        task("s", "@write shared.txt task", ["shared.txt"], verify=[check("shared.txt", "task")]),
    ])
    before = user_state(prepo)
    code, res = run_plan(cli, prepo, plan)
    assert code == 6, res
    assert res["state"] == "paused" and res["error"]["code"] == "OVERLAPS_UNCOMMITTED", res["error"]
    assert user_state(prepo) == before
    # The user commits their work; the plan lands on top of it.
    git(prepo, "commit", "-q", "-am", "user work")
    code, res = cli("plan", "continue", res["id"], "--json")
    assert code == 0, res
    assert res["state"] == "succeeded"
    assert (prepo / "shared.txt").read_text() == "task\n"
    assert git(prepo, "log", "-1", "--format=%s").strip() == "test plan"
    assert git(prepo, "log", "-1", "--format=%s", "HEAD~1").strip() == "user work"


# -- plan check --------------------------------------------------------------------------------------


def _check(cli, tmp_path: Path, doc: dict | str) -> tuple[int, dict]:
    p = tmp_path / "check.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    repo = tmp_path / "check-repo"  # plan check also runs every task's pre-flight in the repository's config
    if not repo.exists():
        make_plan_repo(repo)
    return cli("plan", "check", str(p), "--repo", str(repo), "--json")


def _doc(*tasks: dict, **head: object) -> dict:
    return {"title": "t", "verify": ["true"], **head, "tasks": list(tasks)}


def _t(tid: str, **kw: object) -> dict:
    return {"id": tid, "prompt": "do it", "owns": [f"{tid}/**"], **kw}


@pytest.mark.parametrize(
    ("doc", "code", "needle"),
    [
        (_doc(_t("a"), _t("a")), "DUPLICATE_TASK_ID", "'a' is used twice"),
        (_doc(_t("a", depends=["zzz"])), "UNKNOWN_DEPENDENCY", "unknown task 'zzz'"),
        (_doc(_t("a", depends=["a"])), "DEPENDENCY_CYCLE", "a -> a"),
        (_doc(_t("a", depends=["c"]), _t("b", depends=["a"]), _t("c", depends=["b"])), "DEPENDENCY_CYCLE",
         "a -> c -> b -> a"),
        (_doc(_t("a", owns=["src/**"]), _t("b", owns=["src/b.py"])), "OWNS_OVERLAP", "'src/**'"),
        (_doc(_t("a", owns=["lib/x"]), _t("b", owns=["lib/x"])), "OWNS_OVERLAP", "both own 'lib/x'"),
        (_doc(_t("a", owns=[]), _t("b")), "OWNS_OVERLAP", "may write anywhere"),
        (_doc(_t("a", base="main")), "INVALID_PLAN", "'base' cannot be set"),
        (_doc({"id": "bad id!", "prompt": "x"}), "INVALID_PLAN", "invalid id"),
        (_doc({"prompt": "x"}), "INVALID_PLAN", "missing id"),
        (_doc(_t("a", prompt="")), "INVALID_TASK", "prompt"),
        (_doc(_t("a", colour="red")), "INVALID_TASK", "unknown field 'colour'"),
        (_doc(_t("a"), defaults={"title": "x"}), "INVALID_PLAN", "cannot be a default"),
        (_doc(_t("a", owns=["/etc/passwd"])), "INVALID_PLAN", "absolute path"),
        ({"title": "t", "tasks": [_t("a")]}, "NOTHING_VERIFIES", "no verify commands"),
    ],
)
def test_plan_check_reports_each_problem(cli, tmp_path, doc, code, needle):
    exit_code, out = _check(cli, tmp_path, doc)
    assert exit_code == 2, out
    assert out["ok"] is False
    found = [p for p in out["problems"] if p["code"] == code]
    assert found, out["problems"]
    assert any(needle in p["message"] for p in found), found


def test_overlap_error_names_both_tasks_the_glob_and_the_fix(cli, tmp_path):
    _, out = _check(cli, tmp_path, _doc(_t("a", owns=["src/**"]), _t("b", owns=["src/b.py"]), _t("c", owns=["docs/**"])))
    [p] = out["problems"]
    assert p["tasks"] == ["a", "b"] and "'src/**'" in p["message"] and "'src/b.py'" in p["message"]
    assert "depends" in p["hint"]
    # Sequenced tasks may own the same paths.
    code, out = _check(cli, tmp_path, _doc(_t("a", owns=["src/**"]), _t("b", owns=["src/b.py"], depends=["a"])))
    assert code == 0 and out["waves"] == [["a"], ["b"]]


def test_plan_check_lists_every_problem_and_run_refuses_to_start(cli, prepo, tmp_path, capsys):
    from bosun.cli.main import main

    doc = _doc(_t("a", depends=["b"]), _t("b", depends=["a"]), _t("c", depends=["nope"]), _t("c"))
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["plan", "check", str(p)]) == 2
    err = capsys.readouterr().err
    assert "DUPLICATE_TASK_ID" in err and "UNKNOWN_DEPENDENCY" in err and "DEPENDENCY_CYCLE" in err
    before = user_state(prepo)
    code, out = run_plan(cli, prepo, p)
    assert code == 2 and out["problems"], out
    assert user_state(prepo) == before and bosun_branches(prepo) == []
    code, out = cli("plan", "list", "--json")
    assert out["count"] == 0


def test_malformed_files_and_ids_are_bad_input(cli, prepo, tmp_path):
    code, out = _check(cli, tmp_path, "title: [unclosed")
    assert code == 2 and out["ok"] is False and out["problems"][0]["code"] == "INVALID_PLAN"
    assert "malformed" in out["problems"][0]["message"]
    code, out = _check(cli, tmp_path, {"title": "t", "tasks": []})
    assert code == 2
    code, out = cli("plan", "status", "../etc", "--json")
    assert code == 2 and "malformed plan id" in out["error"]["message"]
    code, out = cli("plan", "status", "p-20260101-000000-abcdef", "--json")
    assert code == 2 and out["error"]["code"] == "UNKNOWN_PLAN"
    plan = write_plan(tmp_path / "p.json", [task("a", "@write a a", ["a"], verify=["true"])])
    code, out = run_plan(cli, prepo, plan, "--profile", "nosuch")
    assert code == 2 and out["problems"][0]["code"] == "UNKNOWN_PROFILE"
    git(prepo, "checkout", "-q", "--detach")
    code, out = run_plan(cli, prepo, plan)
    assert code == 2 and "detached" in out["error"]["message"]


def test_a_plan_verify_that_regresses_fails_the_plan_and_keeps_the_integration_branch(cli, prepo, tmp_path):
    before = user_state(prepo)
    # The plan verify passes before wave 1 (shared.txt says "base") and task a rewrites that file.
    plan = write_plan(tmp_path / "p.json", [
        task("a", "@write shared.txt changed", ["shared.txt"], verify=[check("shared.txt", "changed")]),
        task("b", "@write out/b.txt b", ["out/b.txt"], ["a"], verify=[check("out/b.txt")]),
    ], verify=[check("shared.txt", "base")])
    code, res = run_plan(cli, prepo, plan)
    assert code == 1, res
    assert res["state"] == "failed" and res["error"]["code"] == "PLAN_VERIFY_REGRESSED"
    assert "wave 1 broke what passed before it" in res["error"]["message"]
    assert "missing" in res["error"]["output"] or "shared.txt" in res["error"]["output"], res["error"]
    t = by_id(res)
    assert t["a"]["state"] == "merged" and t["b"]["state"] == "pending"  # wave 2 never started
    assert user_state(prepo) == before
    assert git(prepo, "show", f"bosun/plan/{res['id']}:shared.txt") == "changed\n"
    assert Path(res["plan_dir"], "verify-wave-0.json").exists() and Path(res["plan_dir"], "verify-wave-1.json").exists()
    assert worktree_count(prepo) == 1  # the temporary verify worktree is gone


def test_uncommitted_overlap_pauses_the_landing_then_it_merges_onto_the_moved_branch(cli, prepo, tmp_path):
    # A worker that edits the last line of notes.md.
    edit = tmp_path / "edit.py"
    edit.write_text("from pathlib import Path\n"
                    "p = Path('notes.md')\n"
                    "p.write_text(p.read_text().replace('line 10', 'line 10 (plan)'))\n")
    (prepo / "bosun.toml").write_text((prepo / "bosun.toml").read_text()
                                      + f'[profiles.edit]\nadapter = "command"\ncommand = {json.dumps([PY, str(edit)])}\n')
    (prepo / "notes.md").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    git(prepo, "add", "-A")
    git(prepo, "commit", "-q", "-m", "notes")
    # The user edits the first line and leaves it uncommitted: the plan's change applies without it,
    # but landing would rewrite a file with uncommitted changes, so it must refuse.
    (prepo / "notes.md").write_text((prepo / "notes.md").read_text().replace("line 1\n", "line 1 (mine)\n"))
    before = user_state(prepo)
    plan = write_plan(tmp_path / "p.json", [task("n", "edit the notes", ["notes.md"], verify=[check("notes.md", "plan")])])
    code, res = run_plan(cli, prepo, plan, "--profile", "edit")
    assert code == 6, res
    assert res["state"] == "paused" and res["error"]["code"] == "OVERLAPS_UNCOMMITTED", res["error"]
    assert "notes.md" in res["error"]["message"]
    assert user_state(prepo) == before
    # The user commits their edit: the source branch moved, and the plan is merged onto it.
    git(prepo, "commit", "-q", "-am", "my edit")
    code, res = cli("plan", "continue", res["id"], "--json")
    assert code == 0, res
    text = (prepo / "notes.md").read_text()
    assert "line 1 (mine)" in text and "line 10 (plan)" in text
    assert len(git(prepo, "log", "-1", "--format=%P").split()) == 2  # a merge onto the moved branch
    assert git(prepo, "status", "--porcelain") == ""
