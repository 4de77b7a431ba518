from __future__ import annotations

import os
import sys

from bosun import proc


def test_bounded_buffer_keeps_head_and_tail():
    buf = proc.BoundedBuffer(head=10, tail=10)
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


def test_allowlisted_env_drops_secrets():
    env = proc.allowlisted_env(extra_keys=["MY_KEY"], source={"PATH": "/bin", "MY_KEY": "k", "AWS_SECRET": "s", "LC_ALL": "C"})
    assert env == {"PATH": "/bin", "MY_KEY": "k", "LC_ALL": "C"}


def test_process_start_time():
    assert proc.process_start_time(os.getpid()) is not None
    assert proc.pid_alive(os.getpid(), proc.process_start_time(os.getpid()))
    assert not proc.pid_alive(os.getpid(), -5)
