"""bosun under load and faults, as a user with several agents delegating at once: many concurrent
`delegate --auto-approve --wait` runs on one repository and one state directory, a third of the bosun
processes killed (SIGKILL or SIGTERM) at random moments of their runs (worker, baseline, verification,
landing), the rest landing concurrently as they finish, the killed ones recovered and landed
concurrently too. Then: every run verified or landed after at most one `recover`; every change landed
exactly once and the final tree passing its tests; no checkout, branch, lock or process left after
`gc`; the database intact; the user's own files byte for byte as they were.

The seed of the random choices is printed (and taken from BOSUN_SOAK_SEED when set) to replay a run.
"""

from __future__ import annotations

import fcntl
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import git
from tests.engine.load_support import (
    dirty_the_user_tree,
    finish,
    landings_of,
    make_load_repo,
    registered_worktrees,
    start_bosun,
    task_file,
)

pytestmark = pytest.mark.slow

COUNT = 12
CAP = 4
MOMENTS = ("worker", "baseline", "verification", "landing")
BUDGET_S = 120.0


@dataclass
class Delegation:
    index: int
    proc: subprocess.Popen[str]
    moment: str | None = None  # where to kill it; None: it runs to its end
    signum: int = signal.SIGKILL
    killed_at: str | None = None  # where it was when the signal went
    run_id: str | None = None
    result: tuple[int, dict, str] | None = field(default=None, repr=False)


def _run_rows(home: Path) -> dict[str, tuple[str, str]]:
    """title -> (id, state), read the way another process would, without taking any lock."""
    db = home / "bosun.db"
    if not db.exists():
        return {}
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return {t: (i, s) for i, t, s in con.execute("SELECT id, title, state FROM runs")}
        finally:
            con.close()
    except sqlite3.Error:
        return {}


def _phases(home: Path, d: Delegation, state: str) -> set[str]:
    """Which of the moments the run is in now, as its state and its files show (the baseline runs
    while the worker works)."""
    rdir = home / "runs" / str(d.run_id)
    fixed = home / "worktrees" / str(d.run_id) / "src" / f"m{d.index}.py"
    now = set()
    # Only once the worker wrote its fix: a run killed before it changed anything goes back to
    # prepared on recover, to be worked again (no change to verify yet).
    if state == "working" and fixed.is_file() and fixed.read_text() == f"VALUE = {d.index + 1}\n":
        now.add("worker")  # the worker is still at work
        if any((rdir / "baseline").glob("verify-*")):
            now.add("baseline")
    if state == "worked" and any(rdir.glob("verify-home-*")):
        now.add("verification")
    if state == "approved":
        now.add("landing")
    return now


def _kill_at_their_moments(home: Path, runs: list[Delegation], deadline: float) -> None:
    """Watch the victims' runs and signal each bosun process at its moment; one that ran past its moment
    is killed at the next one it is seen in (the point is a third killed mid-run, at varied moments)."""
    pending = [d for d in runs if d.moment]
    while pending and time.monotonic() < deadline:
        rows = _run_rows(home)
        for d in list(pending):
            if d.proc.poll() is not None:
                pending.remove(d)  # it finished first: it lands like the rest
                continue
            row = rows.get(f"Fix m{d.index}")
            if row is None:
                continue
            d.run_id, state = row
            now = _phases(home, d, state)
            if not now:
                continue
            past = max(MOMENTS.index(m) for m in now) > MOMENTS.index(str(d.moment))
            if d.moment in now or past:
                os.kill(d.proc.pid, d.signum)  # the bosun process alone, as a crash or `kill` would
                d.killed_at = str(d.moment) if d.moment in now else max(now, key=MOMENTS.index)
                pending.remove(d)
        time.sleep(0.01)


def _user_files(repo: Path) -> dict:
    from bosun.isolation.snapshot import uncommitted_state

    return {"paths": uncommitted_state(repo), "stash": git(repo, "stash", "list"),
            "branch": git(repo, "symbolic-ref", "HEAD").strip(),
            "staged": git(repo, "diff", "--cached", "--name-only")}


def _land(run_id: str, state: str) -> tuple[int, dict, str]:
    if state == "verified":
        code, doc, err = finish(start_bosun("approve", run_id, "--json"))
        if code != 0:
            return code, doc, err
    return finish(start_bosun("integrate", run_id, "--json"))


def _in_parallel(work: dict[str, object]) -> dict[str, object]:
    """Each call of ``work`` (name -> zero-argument callable) in its own thread; their results by name."""
    out: dict[str, object] = {}
    threads = [threading.Thread(target=lambda k=k, f=f: out.__setitem__(k, f())) for k, f in work.items()]  # type: ignore[misc]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _processes_under(root: Path) -> list[str]:
    """Live processes (other than this one) whose command line or directory is in ``root``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
            if (entry / "stat").read_text().split(")")[-1].split()[0] == "Z":
                continue  # a zombie has already exited
        except OSError:
            continue
        if str(root) in cmd or cwd.startswith(str(root)):
            found.append(f"{entry.name}: {cmd.strip()} (in {cwd})")
    return found


def test_soak(tmp_path, isolated_home):
    seed = int(os.environ.get("BOSUN_SOAK_SEED") or random.SystemRandom().randrange(1 << 30))
    print(f"BOSUN_SOAK_SEED={seed}")
    rng = random.Random(seed)
    started, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    repo = make_load_repo(tmp_path / "repo", COUNT, cap=CAP)
    dirty_the_user_tree(repo)
    mine = _user_files(repo)

    victims = rng.sample(range(COUNT), COUNT // 3)
    runs = []
    for i in range(COUNT):
        task = task_file(tmp_path, i, sleep_s=round(rng.uniform(1, 4), 2))
        proc = start_bosun("delegate", str(task), "--repo", str(repo), "--auto-approve", "--wait",
                           "--wait-limit", "100s", "--json")
        runs.append(Delegation(i, proc))
    for n, i in enumerate(victims):
        runs[i].moment = MOMENTS[n % len(MOMENTS)]
        runs[i].signum = rng.choice((signal.SIGKILL, signal.SIGTERM))
    _kill_at_their_moments(isolated_home, runs, started + 60)
    for d in runs:
        d.result = finish(d.proc, timeout=max(5.0, started + 100 - time.monotonic()))
    killed = [d for d in runs if d.killed_at]
    story = f"seed {seed}: killed " + ", ".join(f"m{d.index} at {d.killed_at} ({signal.Signals(d.signum).name})"
                                                for d in killed)
    print(story)
    assert len(killed) >= COUNT // 3 - 1, story  # (one may finish before its moment comes)
    for d in runs:
        if not d.killed_at:
            code, doc, err = d.result
            assert code == 0 and doc.get("state") == "cleaned", (story, d.index, doc.get("error"), err[-2000:])

    # Every run ends verified or landed after at most one recover, recovered concurrently.
    rows = {t: r for t, r in _run_rows(isolated_home).items()}
    assert sorted(rows) == sorted(f"Fix m{i}" for i in range(COUNT)), story  # one run per task, none lost
    stuck = {rid: state for rid, state in rows.values() if state in ("working", "worked", "interrupted")}
    recovered = _in_parallel({rid: (lambda rid=rid: finish(start_bosun("recover", rid, "--json")))
                              for rid in stuck})
    for rid, (code, doc, err) in recovered.items():  # type: ignore[misc]
        assert code == 0 and doc["state"] == "verified", (story, rid, doc.get("error"), err[-2000:])

    # The rest land concurrently.
    rows = {t: r for t, r in _run_rows(isolated_home).items()}
    to_land = {rid: state for rid, state in rows.values() if state in ("verified", "approved")}
    landed = _in_parallel({rid: (lambda rid=rid, st=st: _land(rid, st)) for rid, st in to_land.items()})
    for rid, (code, doc, err) in landed.items():  # type: ignore[misc]
        assert code == 0 and doc["state"] == "cleaned", (story, rid, doc.get("error"), err[-2000:])

    # Every change landed exactly once, and the final tree passes its tests.
    final = {rid: state for rid, state in _run_rows(isolated_home).values()}
    assert landings_of(repo) == {rid: 1 for rid in final}, story
    export = tmp_path / "final"
    export.mkdir()
    archive = tmp_path / "final.tar"
    git(repo, "archive", "--output", str(archive), "main")
    with tarfile.open(archive) as tar:
        tar.extractall(export, filter="data")
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_all.py"],
                           cwd=export, capture_output=True, text=True)
    assert tests.returncode == 0, tests.stdout[-2000:]

    # Nothing left after gc: no checkout, no branch, no lock, no process.
    code, doc, err = finish(start_bosun("gc", "--json"))
    assert code == 0, (doc, err)
    assert set(final.values()) <= {"cleaned"}, (story, final)
    assert registered_worktrees(repo) == [str(repo)], story
    assert git(repo, "branch", "--list", "bosun/*").strip() == "", story
    locks = isolated_home / "locks"
    assert sorted(p.name for p in locks.glob("*.lock") if not p.name.startswith(".")) == [], story
    for queue in locks.glob(".*.lock"):
        with queue.open("rb") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody holds it (raises otherwise)
    deadline = time.monotonic() + 10
    while _processes_under(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)  # the last verify commands of a SIGKILLed landing end on their own
    assert _processes_under(tmp_path) == [], story

    # The database is intact; the user's own files are byte for byte as they were.
    con = sqlite3.connect(isolated_home / "bosun.db")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    assert _user_files(repo) == mine, story

    wall = time.monotonic() - started
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    print(f"soak: {wall:.1f} s wall, {cpu:.1f} s CPU of child processes; {story}")
    assert wall < BUDGET_S, f"{wall:.0f} s"
