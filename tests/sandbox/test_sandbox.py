"""The Landlock sandbox and process containment, on real processes."""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from bosun import proc
from bosun.sandbox import PROBE_ENV, Confinement, SandboxFailed, prepare, probe

needs_landlock = pytest.mark.skipif(probe().landlock_abi == 0, reason="this kernel has no Landlock")


def use(mechanism: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Confine with ``mechanism``: namespaces (where this machine has them) or Landlock alone."""
    if mechanism == "landlock":
        monkeypatch.setenv(PROBE_ENV, "landlock")
    elif probe().mechanism != "namespaces":
        pytest.skip("no user namespaces or no bwrap here")


def run(script: str, cwd: Path, confine: Confinement | None) -> proc.SupervisedResult:
    return proc.run_supervised(["/bin/sh", "-c", script], cwd=cwd, env=proc.allowlisted_env(), timeout_s=30,
                               confine=confine)


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (outside / "kept.txt").write_text("kept\n")
    return inside, outside


@needs_landlock
@pytest.mark.parametrize("mechanism", ["namespaces", "landlock"])
def test_writes_only_where_allowed_reads_everywhere(dirs, mechanism, monkeypatch):
    use(mechanism, monkeypatch)
    inside, outside = dirs
    res = run(
        f"echo a > {inside}/a && mkdir {inside}/d && echo b > {inside}/d/b && echo ok-inside; "
        f"echo x > {outside}/new || echo refused-new; echo x >> {outside}/kept.txt || echo refused-append; "
        f"rm -f {outside}/kept.txt || echo refused-rm; mv {inside}/a {outside}/a || echo refused-mv; "
        f"echo x > /dev/null && echo devnull-ok; cat {outside}/kept.txt; "
        f"sh -c 'echo nested > {outside}/nested' || echo refused-nested",
        inside, Confinement(writable=(inside,)),
    )
    out = res.stdout.text()
    for word in ("ok-inside", "refused-new", "refused-append", "refused-rm", "refused-mv", "devnull-ok", "kept",
                 "refused-nested"):
        assert word in out, (word, out, res.stderr.text())
    assert sorted(os.listdir(outside)) == ["kept.txt"]
    assert (outside / "kept.txt").read_text() == "kept\n"


@needs_landlock
@pytest.mark.parametrize("mechanism", ["namespaces", "landlock"])
def test_no_device_nodes_even_in_a_writable_directory(dirs, mechanism, monkeypatch):
    use(mechanism, monkeypatch)
    inside, _ = dirs
    res = run(f"mknod {inside}/mem c 1 1 || echo refused", inside, Confinement(writable=(inside,)))
    assert "refused" in res.stdout.text()
    assert not (inside / "mem").exists()


@needs_landlock
@pytest.mark.parametrize("mechanism", ["namespaces", "landlock"])
def test_deny_read_hides_contents_but_not_the_rest(dirs, mechanism, monkeypatch):
    use(mechanism, monkeypatch)
    inside, outside = dirs
    (outside / "sub").mkdir()
    (outside / "sub" / "deep.txt").write_text("deep\n")
    sibling = outside.parent / "sibling.txt"
    sibling.write_text("visible\n")
    res = run(
        f"cat {outside}/kept.txt || echo refused-read; cat {outside}/sub/deep.txt || echo refused-deep; "
        f"cat {sibling}; ls {outside}; cat /etc/hostname > /dev/null && echo etc-ok",
        inside, Confinement(writable=(inside,), deny_read=(outside,)),
    )
    out = res.stdout.text()
    lines = out.splitlines()
    assert "refused-read" in lines and "refused-deep" in lines and "kept" not in lines and "deep" not in lines
    assert "visible" in out and "etc-ok" in out
    # Landlock can only refuse reading contents: names stay listable. A namespace shows an empty directory.
    assert ("kept.txt" in out) == (mechanism == "landlock")


@needs_landlock
@pytest.mark.skipif(probe().landlock_abi < 4, reason="TCP rules need Landlock ABI 4")
@pytest.mark.parametrize("mechanism", ["namespaces", "landlock"])
def test_connect_only_to_allowed_ports(dirs, mechanism, monkeypatch):
    use(mechanism, monkeypatch)
    inside, _ = dirs
    servers = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    allowed, other = (s.getsockname()[1] for s in servers)
    code = (
        "import socket,sys\n"
        "for port in map(int, sys.argv[1:]):\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', port), timeout=5).close(); print(port, 'ok')\n"
        "    except OSError as exc: print(port, 'refused', exc.errno)\n"
    )
    res = proc.run_supervised([sys.executable, "-c", code, str(allowed), str(other)], cwd=inside,
                              env=proc.allowlisted_env(), timeout_s=30,
                              confine=Confinement(writable=(inside,), connect_ports=(allowed,)))
    for s in servers:
        s.close()
    assert f"{allowed} ok" in res.stdout.text() and f"{other} refused" in res.stdout.text(), res.stderr.text()


def test_a_forced_probe_reports_no_landlock(monkeypatch, dirs):
    monkeypatch.setenv(PROBE_ENV, "none")
    assert probe().mechanism == "none" and probe().to_dict()["abi"] == 0
    with pytest.raises(OSError):
        prepare(Confinement(writable=(dirs[0],)))
    assert issubclass(SandboxFailed, Exception)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def test_a_setsid_double_fork_daemon_with_no_environment_is_killed(tmp_path):
    pidfile = tmp_path / "pid"
    script = f"(setsid env -i /bin/sh -c 'echo $$ > {pidfile}; exec sleep 300' &) ; sleep 0.3"
    res = run(script, tmp_path, None)
    pid = int(pidfile.read_text())
    assert not _alive(pid)
    assert pid in [k["pid"] for k in res.contained]
    assert any("sleep 300" in str(k["cmd"]) for k in res.contained)


def test_an_orphan_that_exited_on_its_own_is_reaped_when_the_step_ends(tmp_path):
    """Nothing is left to stop, and still no zombie stays as bosun's child."""
    pidfile = tmp_path / "pid"
    script = f"(setsid sh -c 'echo $$ > {pidfile}; exit 0' &) ; sleep 0.3"
    res = run(script, tmp_path, None)
    pid = int(pidfile.read_text())
    assert res.contained == []
    assert not Path(f"/proc/{pid}").exists()  # collected, not a zombie


@pytest.mark.slow
def test_a_step_ending_leaves_another_running_steps_processes_alone(tmp_path):
    pidfile = tmp_path / "pid"
    results: dict[str, proc.SupervisedResult] = {}
    # B: a child that lives long enough to be seen in B's tree, then is orphaned while B still runs.
    b_script = f"(setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' & sleep 1.5) & sleep 4"
    tb = threading.Thread(target=lambda: results.__setitem__("b", run(b_script, tmp_path, None)))
    tb.start()
    results["a"] = run("sleep 2.5", tmp_path, None)
    pid = int(pidfile.read_text())
    assert _alive(pid)  # A ended; B's orphan is B's
    assert results["a"].contained == []
    tb.join()
    assert not _alive(pid)
    assert pid in [k["pid"] for k in results["b"].contained]


def test_doctor_says_what_this_machine_enforces(cli, tmp_path, monkeypatch):
    code, out = cli("doctor", "--json", "--repo", str(tmp_path))
    assert isinstance(out, dict), out
    sb = out["sandbox"]
    assert sb["mechanism"] == probe().mechanism and sb["containment"] in ("pid-namespace", "subreaper", "none")
    assert set(sb["held"]) == {"writes", "reads", "process_view", "containment", "privilege", "network"}
    assert sb["setting"] == "auto" and sb["ok"] is True
    monkeypatch.setenv(PROBE_ENV, "none")
    (tmp_path / "bosun.toml").write_text('sandbox = "required"\n')
    code, out = cli("doctor", "--json", "--repo", str(tmp_path))
    assert out["sandbox"]["mechanism"] == "none" and out["sandbox"]["ok"] is False
    assert out["ok"] is False and code == 1
    # Landlock alone cannot give a private process view or take root's privilege: required is not met.
    monkeypatch.setenv(PROBE_ENV, "landlock")
    code, out = cli("doctor", "--json", "--repo", str(tmp_path))
    assert out["sandbox"]["ok"] is False and code == 1
    assert any(m.startswith("process view") for m in out["sandbox"]["missing"]), out["sandbox"]
