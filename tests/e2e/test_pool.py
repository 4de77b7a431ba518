"""The warm pool under concurrency: many runs, a pool of 2, runs killed mid-work.

Real git, real bosun processes, the `command` adapter. Every worker leaves a file only it knows
(``work-<token>.txt``): one worktree handed to two live runs shows as two such files in one diff, a
worktree reset under a live run as a missing one, a lost diff as a run whose patch holds none.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, make_repo, run_bosun, task_yaml

POOLWORKER = ROOT / "tests" / "workers" / "poolworker.py"

pytestmark = pytest.mark.slow


def pool_repo(path: Path, size: int = 2) -> Path:
    repo = make_repo(path)
    with (repo / "bosun.toml").open("a") as fh:
        for mode in ("write", "hang", "poison"):
            fh.write(f'\n[profiles.pool_{mode}]\nadapter = "command"\n'
                     f"command = {json.dumps([sys.executable, str(POOLWORKER), mode])}\n")
        fh.write(f"\n[pool]\nsize = {size}\n")
    git(repo, "commit", "-qam", "pool")
    return repo


def _bosun(*args: str) -> dict:
    out = run_bosun(*args, timeout=300)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"bosun {args}: {out.stdout}\n{out.stderr}") from None


def _parallel(calls: list[tuple[str, ...]]) -> list[dict]:
    results: list[dict] = [{} for _ in calls]

    def one(i: int) -> None:
        results[i] = _bosun(*calls[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _tokens(patch: Path) -> list[str]:
    return re.findall(r"^diff --git a/work-([0-9a-f]+)\.txt ", patch.read_text(), flags=re.M) if patch.exists() else []


def _pool(repo: Path) -> dict:
    return _bosun("pool", "status", "--repo", str(repo), "--json")


def _no_shared_leases(home: Path) -> None:
    """Each pooled worktree was held by at most one run at a time: lease intervals never overlap.

    A run's interval runs from its creation to its ``cleaned`` transition, which holds its lease and
    a little more: the test starts no run while another is being cleaned up, so a real overlap is the
    only way two intervals meet."""
    from bosun.store.db import open_store

    store = open_store()
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for run in store.list_runs(limit=1000):
        pooled = run.data.pooled
        if not pooled:
            continue
        trans = store.transitions(run.id)
        start = trans[0]["at"]
        end = next((t["at"] for t in trans if t["to_state"] == "cleaned"), float("inf"))
        spans.setdefault(pooled["path"], []).append((start, end, run.id))
    for path, items in spans.items():
        items.sort()
        for (_s1, e1, r1), (s2, _e2, r2) in zip(items, items[1:], strict=False):
            assert e1 <= s2, f"{path} held by {r1} and {r2} at once"


def test_pool_of_two_under_concurrency_with_killed_runs(tmp_path, isolated_home):
    repo = pool_repo(tmp_path / "repo")
    task = task_yaml(tmp_path / "task.json")
    warm = _bosun("pool", "warm", "--repo", str(repo), "--json")
    assert warm["idle"] == 2 and warm["size"] == 2

    # Two runs lease both pooled worktrees, then bosun is killed under them mid-work.
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    killed = [subprocess.Popen([sys.executable, "-m", "bosun", "delegate", str(task), "--repo", str(repo),
                                "--profile", "pool_hang", "--json", "--wait"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True) for _ in range(2)]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        pool = _pool(repo)
        held = [w for w in pool["worktrees"] if w["state"] == "leased"]
        if len(held) == 2 and all(list(Path(w["path"]).glob("work-*.txt")) for w in held):
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the hanging runs never leased the pool: {_pool(repo)}")
    for p in killed:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    held_by = {w["run_id"]: w["path"] for w in _pool(repo)["worktrees"]}
    killed_tokens = {rid: [f.name for f in Path(path).glob("work-*.txt")] for rid, path in held_by.items()}
    assert all(len(t) == 1 for t in killed_tokens.values())

    # Housekeeping never resets a worktree its run still holds (the run is not finished).
    _bosun("gc", "--json")
    _bosun("pool", "drain", "--repo", str(repo), "--json")
    pool = _pool(repo)
    assert {w["run_id"]: w["path"] for w in pool["worktrees"]} == held_by
    for rid, path in held_by.items():
        assert [f.name for f in Path(path).glob("work-*.txt")] == killed_tokens[rid]

    # Four runs while the pool is held: each gets a fresh worktree, none a held one.
    first = _parallel([("delegate", str(task), "--repo", str(repo), "--profile", "pool_write", "--json", "--wait")
                       for _ in range(4)])
    assert [r["state"] for r in first] == ["verified"] * 4, first
    assert not {r["worktree"] for r in first} & set(held_by.values())

    # The killed runs are discarded: their leftover diffs are saved, their worktrees go back.
    for rid in held_by:
        res = _bosun("discard", rid, "--json")
        assert res["state"] == "cleaned", res
        saved = _tokens(isolated_home / "runs" / rid / "final.patch")
        assert [f"work-{t}.txt" for t in saved] == killed_tokens[rid]
    pool = _pool(repo)
    assert pool["idle"] == 2 and pool["leased"] == 0
    for w in pool["worktrees"]:
        assert git(Path(w["path"]), "status", "--porcelain", "--ignored") == ""

    # Six runs race for two idle worktrees, then are discarded at once (more back than the pool holds).
    second = _parallel([("delegate", str(task), "--repo", str(repo), "--profile", "pool_write", "--json", "--wait")
                        for _ in range(6)])
    assert [r["state"] for r in second] == ["verified"] * 6, second
    pooled = [r for r in second if r["worktree"] in {w["path"] for w in pool["worktrees"]}]
    assert len(pooled) == 2 and len({r["worktree"] for r in pooled}) == 2
    for r in second:
        assert len(_tokens(Path(r["run_dir"]) / "diff.patch")) == 1, r["id"]  # its own file, and only its own
    done = _parallel([("discard", r["id"], "--json") for r in [*first, *second]])
    assert [d["state"] for d in done] == ["cleaned"] * 10, done
    for r in [*first, *second]:
        assert _tokens(Path(r["run_dir"]) / "final.patch") == _tokens(Path(r["run_dir"]) / "diff.patch")

    pool = _pool(repo)
    assert pool["idle"] == 2 and pool["leased"] == 0 and pool["reclaiming"] == 0
    for w in pool["worktrees"]:
        assert git(Path(w["path"]), "status", "--porcelain", "--ignored") == ""
    _no_shared_leases(isolated_home)
    assert "bosun/" not in git(repo, "branch", "--list")
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(POOLWORKER) + " hang" not in ps

    # gc with a smaller pool removes the surplus idle worktrees (and only those).
    text = (repo / "bosun.toml").read_text().replace("size = 2", "size = 1")
    (repo / "bosun.toml").write_text(text)
    res = _bosun("gc", "--json")
    assert [r["kind"] for r in res["removed"]].count("pool_worktree") == 1
    assert _pool(repo)["idle"] == 1


def test_a_pooled_run_starts_from_the_new_base_and_reuses_set_up(tmp_path, isolated_home):
    repo = pool_repo(tmp_path / "repo", size=1)
    count = tmp_path / "setup-count"
    setup = (f"import pathlib; p = pathlib.Path({str(count)!r}); "
             "p.write_text(str(int(p.read_text()) + 1) if p.exists() else '1'); "
             "pathlib.Path('deps').mkdir(); pathlib.Path('deps/lib.txt').write_text('dep')")
    with (repo / "bosun.toml").open("a") as fh:
        fh.write(f"\n[worktree]\nsetup = [{json.dumps([sys.executable, '-c', setup])}]\n")
    git(repo, "commit", "-qam", "setup")
    task = task_yaml(tmp_path / "task.json")
    _bosun("pool", "warm", "--repo", str(repo), "--json")
    a = _bosun("delegate", str(task), "--repo", str(repo), "--profile", "pool_write", "--json")
    assert a["state"] == "verified" and "/pool/" in a["worktree"]
    assert _bosun("discard", a["id"], "--json")["state"] == "cleaned"
    b = _bosun("delegate", str(task), "--repo", str(repo), "--profile", "pool_write", "--json")
    assert b["worktree"] == a["worktree"] and b["state"] == "verified"
    assert count.read_text() == "1"  # same set-up inputs: the outputs were reused
    assert (Path(b["worktree"]) / "deps" / "lib.txt").read_text() == "dep"
    assert _bosun("discard", b["id"], "--json")["state"] == "cleaned"
    # A new commit on the branch: the pooled worktree moves to it, set-up runs again.
    (repo / "README.md").write_text("new\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-qm", "new base")
    c = _bosun("delegate", str(task), "--repo", str(repo), "--profile", "pool_write", "--json")
    assert c["worktree"] == a["worktree"] and c["state"] == "verified"
    assert (Path(c["worktree"]) / "README.md").read_text() == "new\n"
    assert git(Path(c["worktree"]), "rev-parse", "HEAD").strip() == git(repo, "rev-parse", "HEAD").strip()
    assert count.read_text() == "2"
    assert len(_tokens(Path(c["run_dir"]) / "diff.patch")) == 1


def test_a_slot_left_half_made_by_a_dead_process_is_removed(tmp_path, isolated_home):
    """A `reclaiming` slot whose owner died (bosun killed while creating or resetting it) is in an
    unknown state: the next warm removes it and makes a clean one; a live owner's slot is left alone."""
    import subprocess as sp

    from bosun.proc import process_start_time
    from bosun.store.db import open_store
    from bosun.store.worktrees import pool_insert, pool_rows

    repo = pool_repo(tmp_path / "repo", size=2)
    store = open_store()
    dead = sp.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    root = isolated_home / "pool" / "x"
    root.mkdir(parents=True)
    (root / "slot-9").mkdir()
    (root / "slot-9" / "half.txt").write_text("half-reset\n")
    assert pool_insert(store, str(root / "slot-9"), str(repo), "reclaiming", {"pid": dead.pid, "start": None})
    alive = sp.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert pool_insert(store, str(root / "slot-8"), str(repo), "reclaiming",
                           {"pid": alive.pid, "start": process_start_time(alive.pid)})
        res = _bosun("pool", "warm", "--repo", str(repo), "--json")
        paths = {w["path"]: w["state"] for w in res["worktrees"]}
        assert str(root / "slot-9") not in paths and not (root / "slot-9").exists()
        assert paths[str(root / "slot-8")] == "reclaiming"  # its owner is alive: not touched
        assert sorted(r["state"] for r in pool_rows(store, str(repo))) == ["idle", "reclaiming"]
    finally:
        alive.kill()
        alive.wait()


def test_set_up_outputs_a_worker_changed_are_not_reused(tmp_path, isolated_home):
    repo = pool_repo(tmp_path / "repo", size=1)
    count = tmp_path / "setup-count"
    setup = (f"import pathlib; p = pathlib.Path({str(count)!r}); "
             "p.write_text(str(int(p.read_text()) + 1) if p.exists() else '1'); "
             "pathlib.Path('deps').mkdir(); pathlib.Path('deps/lib.txt').write_text('dep')")
    text = 'sandbox = "off"\n' + (repo / "bosun.toml").read_text()
    (repo / "bosun.toml").write_text(text + f"\n[worktree]\nsetup = [{json.dumps([sys.executable, '-c', setup])}]\n")
    git(repo, "commit", "-qam", "setup, no sandbox")
    task = task_yaml(tmp_path / "task.json")
    _bosun("pool", "warm", "--repo", str(repo), "--json")
    a = _bosun("delegate", str(task), "--repo", str(repo), "--profile", "pool_poison", "--json")
    assert a["state"] == "rejected" and "/pool/" in a["worktree"]
    assert not next(g for g in a["gates"] if g["code"] == "ENVIRONMENT_CHANGED")["ok"]
    assert _bosun("discard", a["id"], "--json")["state"] == "cleaned"
    b = _bosun("delegate", str(task), "--repo", str(repo), "--profile", "pool_write", "--json")
    assert b["worktree"] == a["worktree"] and b["state"] == "verified", b["gates"]
    assert count.read_text() == "2"  # the poisoned outputs were made again, not reused
    assert (Path(b["worktree"]) / "deps" / "lib.txt").read_text() == "dep"


def test_the_baseline_borrows_an_idle_pooled_worktree_and_leaves_it_clean(tmp_path, isolated_home):
    repo = pool_repo(tmp_path / "repo", size=3)
    start = git(repo, "rev-parse", "HEAD").strip()
    _bosun("pool", "warm", "--repo", str(repo), "--json")
    a = _bosun("delegate", str(task_yaml(tmp_path / "a.json")), "--repo", str(repo), "--profile", "pool_write",
               "--json")
    assert a["state"] == "verified" and "/pool/" in a["worktree"]
    baseline = json.loads((Path(a["run_dir"]) / "baseline.json").read_text())["verification"]
    # The start tree's tests failed (the bug) in another of the pool's worktrees: no checkout of its own.
    assert baseline["checkout"] == "pool" and baseline["passed"] is False
    slots = _pool(repo)["worktrees"]
    assert sorted(s["state"] for s in slots) == ["idle", "idle", "leased"]
    for slot in slots:
        if slot["state"] == "idle":
            path = Path(slot["path"])
            assert git(path, "status", "--porcelain", "--ignored") == ""  # pytest's caches are gone too
            assert git(path, "rev-parse", "HEAD").strip() == start
    assert len(git(repo, "worktree", "list").splitlines()) == 4  # the repo and the pool's three
    # One idle worktree is left: b leases it, and its baseline never takes the last one from a next
    # run, so it adds a checkout of its own.
    task_b = task_yaml(tmp_path / "b.json", verify=[f"{sys.executable} -m pytest -q -x tests"])
    b = _bosun("delegate", str(task_b), "--repo", str(repo), "--profile", "pool_write", "--json")
    assert b["state"] == "verified" and "/pool/" in b["worktree"], b
    baseline_b = json.loads((Path(b["run_dir"]) / "baseline.json").read_text())["verification"]
    assert baseline_b["passed"] is False and "checkout" not in baseline_b and not baseline_b.get("cached")
    assert sorted(s["state"] for s in _pool(repo)["worktrees"]) == ["idle", "leased", "leased"]
    assert len(git(repo, "worktree", "list").splitlines()) == 4
