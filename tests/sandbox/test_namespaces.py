"""The namespace sandbox (bubblewrap) on real processes: what a confined process sees, reaches and leaves."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bosun import proc
from bosun.sandbox import Confinement, probe
from bosun.sandbox.bubblewrap import mounts
from bosun.sandbox.held import held, missing
from bosun.sandbox.policy import Support

needs_namespaces = pytest.mark.skipif(probe().mechanism != "namespaces", reason="no user namespaces or no bwrap here")


def run(script: str, cwd: Path, confine: Confinement, timeout: float = 30) -> proc.SupervisedResult:
    return proc.run_supervised(["/bin/sh", "-c", script], cwd=cwd, env=proc.allowlisted_env(), timeout_s=timeout,
                               confine=confine)


def test_deeper_rules_win_and_hidden_directories_end_read_only(tmp_path: Path) -> None:
    hidden, inside, git_dir = tmp_path / "state", tmp_path / "state" / "wt", tmp_path / "state" / "wt" / ".gitdir"
    git_dir.mkdir(parents=True)
    (tmp_path / "key").write_text("k")
    args = mounts(Confinement(writable=(inside,), deny_read=(hidden, tmp_path / "key"), readable=(git_dir,)))
    joined = " ".join(args)
    assert joined.index(f"--tmpfs {hidden}") < joined.index(f"--bind {inside} {inside}")
    assert f"--ro-bind /dev/null {tmp_path / 'key'}" in joined
    assert f"--ro-bind {git_dir}" not in joined  # inside a writable path: readable already
    assert args[-2:] == ["--remount-ro", str(hidden)]


@needs_namespaces
def test_a_confined_step_outlives_its_spawning_thread(tmp_path: Path) -> None:
    # bwrap's --die-with-parent follows the thread that forked it: the step must not die when that ends.
    res = run("sleep 1; echo alive", tmp_path, Confinement(writable=(tmp_path,)))
    assert res.exit_code == 0 and "alive" in res.stdout.text(), (res.exit_code, res.stderr.text())


@needs_namespaces
def test_it_sees_only_its_own_processes_and_no_privilege(tmp_path: Path) -> None:
    res = run("ls /proc | grep -c '^[0-9]'; grep CapEff /proc/self/status; id -u; "
              f"cat /proc/{os.getpid()}/environ || echo no-environ", tmp_path, Confinement(writable=(tmp_path,)))
    out = res.stdout.text().split()
    assert int(out[0]) <= 4, out  # bwrap's init, the shell, its ls and grep
    assert out[1:3] == ["CapEff:", "0000000000000000"], out
    assert out[-1] == "no-environ", out  # bosun's pid names nothing in its namespace


@needs_namespaces
def test_a_private_network_has_its_own_loopback_and_nothing_else(tmp_path: Path) -> None:
    outside = socket.create_server(("127.0.0.1", 0))
    code = textwrap.dedent(f"""
        import socket
        inner = socket.create_server(("127.0.0.1", 0))
        socket.create_connection(inner.getsockname(), 5).close()
        print("own loopback ok")
        try:
            socket.create_connection(("127.0.0.1", {outside.getsockname()[1]}), 5)
            print("REACHED the host")
        except OSError as exc:
            print("host refused", exc.errno)
    """)
    res = proc.run_supervised([sys.executable, "-c", code], cwd=tmp_path, env=proc.allowlisted_env(), timeout_s=30,
                              confine=Confinement(writable=(tmp_path,), private_network=True))
    outside.close()
    out = res.stdout.text()
    assert "own loopback ok" in out and "host refused" in out and "REACHED" not in out, (out, res.stderr.text())


@needs_namespaces
def test_nothing_outlives_bosun_itself(tmp_path: Path) -> None:
    """A bosun killed outright (SIGKILL, the OOM killer) takes its confined workers with it."""
    marker = tmp_path / "ticks"
    parent = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from bosun import proc
        from bosun.sandbox import Confinement
        proc.run_supervised(["/bin/sh", "-c", "while :; do echo x >> {marker}; sleep 0.05; done"],
                            cwd={str(tmp_path)!r}, env=proc.allowlisted_env(), confine=Confinement(writable=({str(tmp_path)!r},)))
    """)
    bosun = subprocess.Popen([sys.executable, "-c", parent], env={**os.environ, "PYTHONPATH": str(Path(proc.__file__).parents[1])})
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the confined loop never started"
    os.kill(bosun.pid, signal.SIGKILL)
    bosun.wait()
    time.sleep(0.5)
    size = marker.stat().st_size
    time.sleep(0.5)
    assert marker.stat().st_size == size


def test_what_holds_is_said_and_required_sees_what_is_missing() -> None:
    ns = held(Support(7, "pid-namespace", bwrap="/usr/bin/bwrap"), ports=(443, 8080))
    assert missing(ns) == [] and ns["network"] == "provider-only: TCP connects to port(s) 443, 8080 only"
    alone = held(Support(7, "subreaper"))
    assert [m.split(" (")[0] for m in missing(alone)] == ["process view", "privilege"]
    old = held(Support(3, "subreaper"), network="any")
    assert old["network"].startswith("any") and "network" not in " ".join(missing(old))
    assert held(Support(3, "subreaper"))["network"].startswith("not enforced")
