"""bosun's state on a full disk, or on a read-only one: a clear error with its code and hint (one JSON
object under --json, no traceback), and a run that `recover` finishes once the disk takes writes again.

A real small filesystem: a tmpfs mounted for the test (skipped, with the reason, where mounting is not
allowed), filled by the worker itself, as a worker writing a huge file would.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.engine.load_support import finish, make_load_repo, start_bosun, task_file


@pytest.fixture
def small_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {res.stderr.strip() or res.returncode}")
    monkeypatch.setenv("BOSUN_HOME", str(mnt / "home"))
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _one_json_object(out: str) -> dict:
    doc = json.loads(out)  # the whole of stdout is one object
    assert isinstance(doc, dict)
    return doc


def test_a_full_disk_is_a_clear_error_and_recover_finishes_the_run(tmp_path, small_home):
    repo = make_load_repo(tmp_path / "repo", 1)
    task = task_file(tmp_path, 0)
    doc = json.loads(task.read_text())
    doc["prompt"] += "@fill big.bin\n"  # the fix, then a file that fills the disk bosun's state is on
    task.write_text(json.dumps(doc))

    proc = start_bosun("delegate", str(task), "--repo", str(repo), "--json")
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == 1, (out, err)
    assert "Traceback" not in err
    res = _one_json_object(out)
    run_id = res["id"]
    assert res["error"]["code"] == "DISK_FULL", res["error"]
    assert str(small_home) in res["error"]["message"]
    assert f"`bosun recover {run_id}`" in res["error"]["hint"]
    assert res["state"] in ("working", "interrupted", "worked")

    (small_home / "home" / "worktrees" / run_id / "big.bin").unlink()  # space is back
    code, res, err = finish(start_bosun("recover", run_id, "--json"))
    assert code == 0 and res["state"] == "verified", (res.get("error"), err)
    assert res["verification"]["passed"] is True


def test_a_read_only_state_directory_is_a_clear_error(tmp_path, small_home):
    repo = make_load_repo(tmp_path / "repo", 1)
    code, _, err = finish(start_bosun("list", "--json"))  # the store exists, then its disk goes read-only
    assert code == 0, err
    subprocess.run(["mount", "-o", "remount,ro", str(small_home)], check=True)

    proc = start_bosun("delegate", str(task_file(tmp_path, 0)), "--repo", str(repo), "--json")
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == 1 and "Traceback" not in err, (out, err)
    res = _one_json_object(out)
    assert res["error"]["code"] == "READ_ONLY", res
    assert str(small_home) in res["error"]["message"] and "writable" in res["error"]["hint"]
    proc = start_bosun("delegate", str(task_file(tmp_path, 0)), "--repo", str(repo))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in err and "hint:" in err, err
