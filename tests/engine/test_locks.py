from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bosun.core.errors import Busy
from bosun.core.paths import ensure_home
from bosun.engine import locks


def test_lock_refuses_a_live_owner_and_reclaims_a_dead_one(tmp_path):
    ensure_home()
    path = locks.lock_path("run-a")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        from bosun.proc import process_start_time

        path.write_text(json.dumps({"pid": live.pid, "start": process_start_time(live.pid)}))
        with pytest.raises(Busy):
            locks.acquire("run-a")
    finally:
        live.kill()
        live.wait()
    # Now the owner is dead: the lock is reclaimed.
    locks.acquire("run-a")
    assert locks.read_owner("run-a")["pid"] != live.pid
    locks.release("run-a")
    assert not path.exists()


def test_pid_reuse_is_detected_by_start_time(tmp_path):
    ensure_home()
    import os

    # Our own pid with a wrong start time is a different (dead) process.
    locks.lock_path("run-b").write_text(json.dumps({"pid": os.getpid(), "start": 1}))
    locks.acquire("run-b")
    locks.release("run-b")


def test_reentrant_in_one_process():
    ensure_home()
    with locks.run_lock("run-c"):
        with locks.run_lock("run-c"):
            assert locks.lock_path("run-c").exists()
        assert locks.lock_path("run-c").exists()
    assert not locks.lock_path("run-c").exists()


def test_concurrency_cap_refuses_or_waits():
    ensure_home()
    with pytest.raises(Busy) as exc:
        with locks.concurrency_slot(lambda: ["a", "b", "c", "d"], 4, wait=False):
            pass
    assert "max_concurrent_runs" in exc.value.message
    holders = iter([["a", "b", "c", "d"], ["a", "b", "c", "d"], ["a", "b", "c"]])
    with locks.concurrency_slot(lambda: next(holders), 4, wait=True, poll_s=0.01):
        pass


def test_a_lock_file_is_a_format_versioned_document():
    import os

    ensure_home()
    with locks.run_lock("run-v"):
        doc = json.loads(locks.lock_path("run-v").read_text())
    assert doc["format_version"] == 1 and doc["pid"] == os.getpid() and "start" in doc


def test_the_model_catalog_cache_is_a_format_versioned_document(tmp_path, monkeypatch):
    from bosun.apps import models

    monkeypatch.setenv("BOSUN_CACHE_DIR", str(tmp_path / "cache"))
    models._write_cache("k", ["m1"])
    doc = json.loads((tmp_path / "cache" / "models" / "k.json").read_text())
    assert doc["format_version"] == 1 and doc["models"] == ["m1"]
    assert models._read_cache("k")["models"] == ["m1"]
