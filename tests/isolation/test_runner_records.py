"""The runner guard's channel as bosun reads it: only records under the command's key (or a key derived
from it for processes the guarded ones start) are read; anything else is counted as forged."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from bosun.isolation.runner_guard import PAYLOAD, open_guard
from bosun.isolation.runner_guard.records import MAX_BYTES, Fold, child_key


def line(record: dict, key: bytes, depth: int = 0) -> bytes:
    body = json.dumps({**record, "d": depth}).encode()
    return hashlib.blake2b(body, key=key, digest_size=16).hexdigest().encode() + b" %d " % depth + body + b"\n"


KEY = bytes(range(32))


def test_records_under_the_key_are_read_and_others_counted():
    fold = Fold([KEY])
    fold.feed(line({"kind": "start", "pid": 5, "argv": ["python"]}, KEY))
    fold.feed(line({"kind": "exit", "pid": 5}, KEY)[:20])  # split across reads
    fold.feed(line({"kind": "exit", "pid": 5}, KEY)[20:])
    fold.feed(line({"kind": "exit", "pid": 6}, b"x" * 32))  # another key
    fold.feed(b"2 passed\n")  # plain text on the channel
    fold.feed(line({"kind": "exit", "pid": 7}, KEY, depth=1))  # claims a depth its key is not
    summary = fold.summary(5, 0, None)
    assert [(p["pid"], p["exited"], p["top"]) for p in summary["processes"]] == [(5, True, True)]
    assert summary["forged"] == 3


def test_a_child_signs_with_the_derived_key_and_cannot_sign_for_its_parent():
    fold = Fold([KEY])
    child = child_key(KEY)
    fold.feed(line({"kind": "start", "pid": 8}, child, depth=1))
    fold.feed(line({"kind": "exit", "pid": 5}, child, depth=0))
    summary = fold.summary(None, 0, None)
    assert [p["pid"] for p in summary["processes"]] == [8] and summary["forged"] == 1


def test_a_flooded_channel_is_seen():
    fold = Fold([KEY])
    fold.feed(b"x" * (MAX_BYTES + 1))
    assert fold.summary(None, 0, None)["overflow"] is True


def test_the_guard_in_a_real_interpreter_signs_what_bosun_reads(tmp_path: Path):
    # The payload's key derivation and hash are the ones bosun checks, with a child process too.
    home = tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    guard = open_guard(home, tmp_path, 0)
    env = guard.env({"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"})
    code = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'pass'], check=True)"
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, pass_fds=())
    runner = guard.close(None, proc.returncode, None)
    assert proc.returncode == 0
    assert sorted(p["depth"] for p in runner["processes"]) == [0, 1]
    assert all(p["exited"] for p in runner["processes"]) and "forged" not in runner
    assert not guard.dir.exists() and not guard.fifo.exists()


def test_the_guards_directory_is_read_only_and_holds_its_bytecode(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    guard = open_guard(home, tmp_path, 3)
    try:
        files = sorted(p.relative_to(guard.dir).as_posix() for p in guard.dir.rglob("*") if p.is_file())
        tag = sys.implementation.cache_tag
        assert files == [f"__pycache__/bosun_runner_guard.{tag}.pyc", f"__pycache__/bosun_runner_guard_integrity.{tag}.pyc",
                         f"__pycache__/sitecustomize.{tag}.pyc", "bosun_runner_guard.py",
                         "bosun_runner_guard_integrity.py", "sitecustomize.py"]
        assert all(not os.access(guard.dir / f, os.W_OK) or os.geteuid() == 0 for f in files)
        assert (guard.dir / "sitecustomize.py").read_bytes() == (PAYLOAD / "guard_site.py").read_bytes()
        assert guard.dir.parent == home.parent  # beside the HOME, not in it: the sandbox lets commands write HOME
    finally:
        guard.close(None, 0, None)
