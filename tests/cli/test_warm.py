"""The warm process's checks of a caller, without a warm process: each refuses what it must."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bosun.cli.warm_checks import Refused, check_store_writable, well_formed
from bosun.cli.warm_server import Server, changed_modules
from bosun.core import warm_client


def test_only_validating_verbs_go_warm_and_bosun_warm_0_keeps_them_here(monkeypatch):
    monkeypatch.delenv("BOSUN_WARM", raising=False)
    assert warm_client.eligible(["delegate", "task.yaml", "--json"])
    assert warm_client.eligible(["plan", "run", "plan.yaml"])
    for argv in (["list", "--json"], ["show", "x"], ["delegate", "--help"], ["mcp"], ["warm", "start"], []):
        assert not warm_client.eligible(argv), argv
    for off in ("0", "off", "no", "false"):
        monkeypatch.setenv("BOSUN_WARM", off)
        assert not warm_client.eligible(["delegate", "task.yaml"])


def test_a_socket_directory_anyone_else_can_enter_is_not_used(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    assert warm_client.private_dir_ok(str(private))
    os.chmod(private, 0o755)
    assert not warm_client.private_dir_ok(str(private))
    link = tmp_path / "link"
    link.symlink_to(private)
    os.chmod(private, 0o700)
    assert not warm_client.private_dir_ok(str(link))  # a symlink could point anywhere
    assert not warm_client.private_dir_ok(str(tmp_path / "missing"))


def test_a_client_with_no_store_or_no_warm_process_runs_the_command_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("BOSUN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BOSUN_WARM", raising=False)
    assert warm_client.run(["check", "task.yaml"]) is None  # no store yet
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "bosun.db").write_bytes(b"")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    assert warm_client.run(["check", "task.yaml"]) is None  # nobody listens


def test_the_store_must_be_sent_open_for_writing_and_be_the_store(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    db = home / "bosun.db"
    db.write_bytes(b"sqlite")
    other = tmp_path / "other.db"
    other.write_bytes(b"sqlite")
    fd = os.open(db, os.O_RDWR)
    try:
        check_store_writable(fd, str(db))
    finally:
        os.close(fd)
    for path, flags in ((db, os.O_RDONLY), (db, os.O_WRONLY), (other, os.O_RDWR)):
        fd = os.open(path, flags)
        try:
            with pytest.raises(Refused):
                check_store_writable(fd, str(db))
        finally:
            os.close(fd)


def test_a_request_with_a_field_of_the_wrong_type_is_refused():
    good = {"argv": ["check", "t.yaml"], "env": {"A": "1"}, "cwd": "/", "umask": 18}
    assert well_formed(good) == good
    for bad in ({**good, "argv": "check"}, {**good, "argv": [1]}, {**good, "env": {"A": 1}},
                {**good, "env": {"A=B": "1"}}, {**good, "env": {"A": "x\0y"}}, {**good, "argv": ["a\0"]},
                {**good, "cwd": None}, {**good, "cwd": "/no/such/dir"}, {**good, "umask": "18"},
                {**good, "umask": -1}, ["check"], None):
        with pytest.raises(Refused):
            well_formed(bad)


def test_a_changed_or_removed_module_file_is_found(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    stamps = {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in (a, b)}
    assert changed_modules(stamps) == []
    a.write_text("x = 10\n")
    b.unlink()
    assert sorted(changed_modules(stamps)) == sorted([str(a), str(b)])


def test_the_socket_path_fits_and_differs_per_home(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    deep = "/tmp/" + "d" * 200 + "/home"
    path = warm_client.socket_path(deep)
    assert len(path.encode()) < 100 and path.startswith(f"/tmp/bosun-{os.getuid()}/")
    assert warm_client.socket_path(deep + "2") != path
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert Path(warm_client.socket_path(deep)).parent == tmp_path / "bosun"
    assert Server(deep, 60).path == warm_client.socket_path(deep)


def test_plan_verbs_that_only_read_stay_on_their_fast_path():
    assert warm_client.validating(["plan", "run", "plan.yaml"])
    for verb in ("list", "status", "watch"):
        assert not warm_client.validating(["plan", verb, "--json"])


def test_asking_the_warm_process_loads_nothing_heavy(tmp_path):
    import json
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    (home / "bosun.db").write_bytes(b"")
    (tmp_path / "run" / "bosun").mkdir(parents=True, mode=0o700)
    code = ("import sys, json; import bosun.core.warm_client as w; w.run(['check', 't.yaml']); "
            "print(json.dumps(sorted(sys.modules)))")
    env = {**os.environ, "BOSUN_HOME": str(home), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    env.pop("BOSUN_WARM", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert "socket" in loaded  # it did try to connect
    heavy = {"argparse", "urllib.parse", "hashlib", "subprocess", "pydantic", "typing", "ipaddress", "bosun.cli"}
    assert not loaded & heavy, sorted(loaded & heavy)


def test_a_copy_that_has_reported_lets_go_of_the_callers_pipes_before_it_ends():
    """Once its output is flushed, a copy holds none of the caller's streams: a parent reading them to
    their end is not kept waiting while the copy's interpreter shuts down (here: while it sleeps)."""
    import select

    from bosun.cli.warm_server import _release_streams

    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the copy: its stdin, stdout and stderr are the caller's pipe
        try:
            for fd in (0, 1, 2):
                os.dup2(write_end, fd)
            os.close(write_end)
            os.close(read_end)
            os.write(1, b"the result\n")
            _release_streams()
            os.write(1, b"after the release: not the caller's\n")
            import time

            time.sleep(60)
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        got = b""
        while True:
            ready, _, _ = select.select([read_end], [], [], 20)
            assert ready, "the pipe stayed open while the copy lived on"
            chunk = os.read(read_end, 4096)
            if not chunk:
                break
            got += chunk
        assert got == b"the result\n"
        assert os.waitpid(child, os.WNOHANG) == (0, 0)  # the copy still runs: the end came from the release
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)
        os.close(read_end)
