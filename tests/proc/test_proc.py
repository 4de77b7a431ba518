from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from bosun import proc
from bosun.core import pipes


def test_bounded_buffer_keeps_head_and_tail():
    buf = pipes.BoundedBuffer(head=10, tail=10)
    for i in range(1000):
        buf.write(f"{i:04d}".encode())
    assert buf.total == 4000
    assert buf.truncated
    assert buf.head_text() == "0000000100"
    assert buf.tail_text().endswith("0999")
    assert "bytes omitted" in buf.text()


def test_timeout_kills_the_group_and_children():
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    res = proc.run_supervised([sys.executable, "-c", code], cwd=".", env=dict(os.environ), timeout_s=1)
    assert res.timed_out
    assert res.duration_s < 10


def test_lines_callback_and_stdin():
    lines = []
    res = proc.run_supervised(
        [sys.executable, "-c", "import sys; data = sys.stdin.read(); print(data.upper()); print('two')"],
        cwd=".", env=dict(os.environ), stdin_data=b"hello", on_line=lines.append,
    )
    assert res.ok and lines == ["HELLO", "two"]


def test_idle_timeout():
    res = proc.run_supervised(
        [sys.executable, "-c", "import time; print('x', flush=True); time.sleep(30)"],
        cwd=".", env=dict(os.environ), idle_timeout_s=1,
    )
    assert res.idle_timed_out and not res.ok


def test_relative_path_entries_never_reach_a_child():
    # In a worktree, a relative entry finds the worker's programs: `node_modules/.bin/python3`.
    source = {"PATH": "node_modules/.bin:/usr/local/bin::.:bin:/usr/bin"}
    assert proc.allowlisted_env(source=source)["PATH"] == "/usr/local/bin:/usr/bin"
    assert proc.allowlisted_env(source={}, overrides={"PATH": "./x:/bin"})["PATH"] == "/bin"
    assert proc.without_relative_path({"HOME": "/h"}) == {"HOME": "/h"}


def test_allowlisted_env_drops_secrets():
    env = proc.allowlisted_env(extra_keys=["MY_KEY"], source={"PATH": "/bin", "MY_KEY": "k", "AWS_SECRET": "s", "LC_ALL": "C"})
    assert env == {"PATH": "/bin", "MY_KEY": "k", "LC_ALL": "C"}


def test_process_start_time():
    assert proc.process_start_time(os.getpid()) is not None
    assert proc.pid_alive(os.getpid(), proc.process_start_time(os.getpid()))
    assert not proc.pid_alive(os.getpid(), -5)


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfd on this platform: the polling fallback sleeps")
def test_supervision_waits_for_the_exit_without_sleeping(monkeypatch):
    # Popen.wait(timeout) polls with sleeps of up to 50 ms: each step ended that much after its process.
    # Patched (the only way to see a sleep from outside): any sleep while the child runs fails the run.
    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"slept {seconds}s while waiting for the child")

    monkeypatch.setattr(time, "sleep", no_sleep)
    res = proc.run_supervised([sys.executable, "-c", "print('done')"],
                              cwd=".", env=dict(os.environ))
    assert res.ok and res.stdout.text() == "done\n"
    assert 0 < res.started_at <= res.exited_at and res.process_s == res.exited_at - res.started_at


def test_exit_watch_reports_running_then_exited():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    watch = pipes.ExitWatch(child)
    try:
        assert watch.wait(0) is False and child.returncode is None
        assert child.stdin is not None
        child.stdin.close()
        assert watch.wait(30) is True and child.returncode == 0  # reaped
    finally:
        watch.close()
