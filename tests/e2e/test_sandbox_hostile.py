"""Hostile `command` workers under the kernel sandbox: real processes, real git, real Landlock.

Each worker tries to change something that is not its own (the user's repository and git metadata,
bosun's database and another run's records and worktree, the user's HOME, /tmp outside its TMPDIR)
or leaves a daemon behind. The target must be byte-identical afterwards, the daemon dead before
verification starts, and the user's repository untouched.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
import uuid
from pathlib import Path

import pytest

from bosun.sandbox import probe
from tests.conftest import ROOT, run_bosun, user_state

HOSTILE = ROOT / "tests" / "workers" / "hostile.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(probe().landlock_abi == 0, reason="this kernel has no Landlock"),
]


def add_profile(config: Path, name: str, *args: str, top: str = "") -> None:
    text = config.read_text() if config.exists() else ""
    text = top + text + f"\n[profiles.{name}]\nadapter = \"command\"\ncommand = {json.dumps([sys.executable, str(HOSTILE), *args])}\n"
    config.write_text(text)


def delegate(cli, repo: Path, task: Path, profile: str) -> tuple[int, dict]:
    return cli("delegate", str(task), "--repo", str(repo), "--profile", profile, "--json")


def events(res: dict) -> list[dict]:
    lines = (Path(res["run_dir"]) / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def snapshot(paths: list[Path]) -> dict[str, bytes | None | list[str]]:
    out: dict[str, bytes | None | list[str]] = {}
    for p in paths:
        if p.is_dir():
            out[str(p)] = sorted(os.listdir(p))
        else:
            out[str(p)] = p.read_bytes() if p.exists() else None
        # Nothing created beside it either (other processes may use the same directory: /tmp).
        out[str(p) + ".*"] = sorted(n for n in os.listdir(p.parent) if n.startswith(p.name))
    return out


def test_writes_outside_the_worktree_are_refused_by_the_kernel(cli, repo, task_file, tmp_path, isolated_home, monkeypatch):
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    (user_home / ".bashrc").write_text("# the user's shell\n")
    monkeypatch.setenv("HOME", str(user_home))
    # Another run, finished, with its records and worktree.
    code, other = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0, other
    other_dir, other_wt = Path(other["run_dir"]), Path(other["worktree"])
    outside_tmp = tmp_path / "outside.txt"  # under /tmp, not the worker's TMPDIR
    outside_tmp.write_text("keep\n")
    fresh_tmp = Path("/tmp") / f"bosun-hostile-{uuid.uuid4().hex}.txt"
    targets = [
        repo / ".git" / "hooks" / "pre-commit",
        repo / ".git" / "config",
        repo / "src" / "calc.py",
        other_dir / "events.jsonl",
        other_dir / "task.json",
        other_wt / "src" / "calc.py",
        user_home / ".bashrc",
        outside_tmp,
        fresh_tmp,
    ]
    db = isolated_home / "bosun.db"
    add_profile(tmp_path / "no-user-config.toml", "hostile", "write", *map(str, targets), str(db))
    before, before_repo = snapshot(targets), user_state(repo)

    code, res = delegate(cli, repo, task_file, "hostile")

    assert snapshot(targets) == before
    assert user_state(repo) == before_repo
    assert not fresh_tmp.exists()
    assert db.exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
    # The worker's own report: every attempt was refused, none done.
    report = next(json.loads(e["text"]) for e in events(res) if e["type"] == "message" and '"attempts"' in e["text"])
    assert report["done"] == [] and report["refused"] == report["attempts"] == 7 * (len(targets) + 1), report
    # Its honest fix still went through, and it is the whole change.
    assert code == 0 and res["state"] == "verified", res
    assert res["files_changed"] == 1
    assert res["sandbox"]["mechanism"] == probe().mechanism and res["sandbox"]["abi"] >= 1
    assert next(e for e in events(res) if e["type"] == "sandbox")["mechanism"] == probe().mechanism


def test_with_private_reads_the_users_repository_and_bosuns_records_are_unreadable(cli, repo, task_file, tmp_path,
                                                                                   isolated_home):
    config = tmp_path / "no-user-config.toml"
    config.write_text('sandbox_reads = "worktree"\n')
    code, other = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0, other  # the git guard, the task file and the worktree stay readable
    holdout = repo / "holdout.txt"  # a file of the user's that is not in the worktree
    holdout.write_text("expected answers\n")
    targets = [holdout, repo / "src" / "calc.py", isolated_home / "bosun.db",
               Path(other["run_dir"]) / "events.jsonl", Path(other["worktree"]) / "src" / "calc.py"]
    add_profile(config, "reader", "read", *map(str, targets))
    before = user_state(repo)

    code, res = delegate(cli, repo, task_file, "reader")

    report = next(json.loads(e["text"]) for e in events(res) if e["type"] == "message" and '"attempts"' in e["text"])
    assert report["done"] == [] and report["refused"] == len(targets), report
    assert code == 0 and res["state"] == "verified", res
    assert res["sandbox"]["reads"] == "worktree"
    assert user_state(repo) == before


def _running_with(text: str) -> list[int]:
    """Live processes on this machine whose command line holds ``text``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        if text in cmd and stat[stat.rfind(")") + 2] not in "ZX":
            found.append(int(name))
    return found


@pytest.mark.parametrize("mechanism", ["namespaces", "landlock"])
def test_a_daemon_that_escapes_its_session_is_killed_before_verification(cli, repo, task_file, tmp_path, mechanism,
                                                                         monkeypatch):
    # Without the fail-to-pass baseline: under Landlock alone its verify step runs beside the worker,
    # and when it ends first it kills the daemon itself (an orphan no running step has seen), so the
    # worker's step, whose record this test reads, finds nothing left to contain. The daemon dies
    # either way. In a PID namespace it dies with the worker's last process, by construction.
    if mechanism == "landlock":
        monkeypatch.setenv("BOSUN_SANDBOX_PROBE", "landlock")
    elif probe().mechanism != "namespaces":
        pytest.skip("this machine has no user namespaces or no bwrap")
    add_profile(tmp_path / "no-user-config.toml", "daemon", "daemon", top='baseline = "off"\n')
    before = user_state(repo)

    code, res = delegate(cli, repo, task_file, "daemon")

    heartbeat = Path(res["worktree"]) / "heartbeat.txt"
    assert _running_with(str(heartbeat)) == []
    size = heartbeat.stat().st_size
    assert size > 0  # it did run while the worker was working
    time.sleep(0.3)
    assert heartbeat.stat().st_size == size
    assert res["sandbox"]["mechanism"] == mechanism
    from bosun.store.db import open_store

    worked = next(t for t in open_store().transitions(res["id"]) if t["to_state"] == "worked")
    if mechanism == "landlock":
        contained = [e for e in events(res) if e["type"] == "contained"]
        pid = int((Path(res["run_dir"]) / "home" / "daemon" / "daemon.pid").read_text())
        assert contained and pid in [k["pid"] for k in contained[0]["killed"]], contained
        assert contained[0]["ts"] <= worked["at"]  # killed before the run moved on to verification
    else:
        # Its last heartbeat came before the worker step ended: the namespace's end took it.
        last = int(heartbeat.read_text().split()[-1]) / 1e9
        assert last <= worked["at"]
    # Verified, but with no baseline nothing proves the fix: it waits for a person (exit 7).
    assert code == 7 and res["state"] == "verified" and res["verdict"]["outcome"] == "needs_review", res
    assert user_state(repo) == before


def test_required_on_a_kernel_without_landlock_refuses_before_the_worker_starts(repo, task_file, tmp_path):
    marker = tmp_path / "worker-ran"
    config = tmp_path / "user-config.toml"
    config.write_text('sandbox = "required"\n\n[profiles.touch]\nadapter = "command"\n'
                      f'command = ["/bin/sh", "-c", "touch {marker}"]\n')
    env = {"BOSUN_CONFIG": str(config), "BOSUN_SANDBOX_PROBE": "none"}
    out = run_bosun("delegate", str(task_file), "--repo", str(repo), "--profile", "touch", "--json", env=env)
    res = json.loads(out.stdout)
    assert out.returncode == 1, out.stdout
    assert res["state"] == "blocked"
    assert "required" in res["error"]["message"] and "Landlock" in res["error"]["message"]
    assert "sandbox" in res["error"]["hint"]
    assert not marker.exists()
    # auto on the same kernel runs the worker, and says the sandbox was not enforced.
    config.write_text(config.read_text().replace('"required"', '"auto"'))
    out = run_bosun("delegate", str(task_file), "--repo", str(repo), "--profile", "touch", "--json", env=env)
    res = json.loads(out.stdout)
    assert marker.exists()
    assert res["sandbox"]["mechanism"] == "none"


def test_a_worker_cannot_have_the_warm_process_act_for_it(cli, repo, task_file, tmp_path, isolated_home):
    # Another run, verified and waiting for the user's approval: what a worker would like approved.
    code, other = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0, other
    started = run_bosun("warm", "start", "--json")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    try:
        add_profile(tmp_path / "no-user-config.toml", "asker", "warm", info["socket"],
                    str(isolated_home / "bosun.db"), json.dumps(["approve", other["id"]]))
        code, res = delegate(cli, repo, task_file, "asker")
        report = next(json.loads(e["text"]) for e in events(res) if e["type"] == "message" and '"replies"' in e["text"])
        assert report["open_store_rw"].endswith(")"), report  # the kernel refused it
        assert set(report["replies"]) == {"store read-only", "own file read-write"}
        for reply in report["replies"].values():
            # Refused by the warm process itself, or the socket unreachable: never run.
            assert '"pid"' not in reply, report
            assert "refused" in reply, report
        assert code == 0 and res["state"] == "verified", res
        assert json.loads(run_bosun("show", other["id"], "--json").stdout)["state"] == "verified"
    finally:
        run_bosun("warm", "stop")
        try:
            os.kill(info["pid"], 9)
        except OSError:
            pass
