"""The sandbox as it comes, against a worker paid to pass: no sandbox setting anywhere.

Each test is one attack a hostile `command` worker (tests/workers/intruder.py) made on the sandbox's
old defaults, run as a real process against real git, a real dashboard and real listeners: bosun's
state, the hidden acceptance test (through the dashboard and through git), the environment of the
bosun process, the user's keys, root's privileges over the user's files, local services, and a
daemon that outlives the worker. Every attack is caught; the user's files, their modes, `.git`, other
runs and secrets are as they were; and the honest part of the same run still verifies.

Where a machine has no user namespaces (simulated with BOSUN_SANDBOX_PROBE=landlock), what Landlock
alone holds is checked too, and what it cannot hold must be said in the run's record.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bosun.isolation import modewatch
from bosun.sandbox import probe
from tests.conftest import ROOT, git, run_bosun, task_yaml, user_state

INTRUDER = ROOT / "tests" / "workers" / "intruder.py"
MARKER = "held-out-4217"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(probe().landlock_abi == 0, reason="this kernel has no Landlock")]


@pytest.fixture(params=["namespaces", "landlock"])
def mechanism(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The machine's sandbox: namespaces where it has them, or Landlock alone."""
    if request.param == "landlock":
        monkeypatch.setenv("BOSUN_SANDBOX_PROBE", "landlock")
    elif probe().mechanism != "namespaces":
        pytest.skip("no user namespaces or no bwrap here")
    return str(request.param)


def intruder(config: Path, name: str, *args: str, top: str = "") -> None:
    """A profile that runs the intruder; ``top`` goes before it (settings)."""
    text = config.read_text() if config.exists() else ""
    config.write_text(top + text + f"\n[profiles.{name}]\nadapter = \"command\"\n"
                      f"command = {json.dumps([sys.executable, str(INTRUDER), *args])}\n")


def report(res: dict) -> dict:
    lines = (Path(res["run_dir"]) / "events.jsonl").read_text().splitlines()
    texts = [json.loads(line).get("text", "") for line in lines]
    return json.loads(next(t for t in texts if t.startswith("{") and ('"done"' in t or '"daemon_log"' in t)))


def kept(repo: Path) -> tuple[dict, dict]:
    """Everything of the user's that must come out as it went in: git state and every file's mode."""
    return user_state(repo), modewatch.take((repo,))


def assert_kept(repo: Path, before: tuple[dict, dict]) -> None:
    assert user_state(repo) == before[0]
    assert modewatch.changes(before[1]) == {}  # modes, owners and flags of every file that was there


def assert_honest_part_verified(code: int, res: dict) -> None:
    assert code == 0 and res["state"] == "verified", res
    assert res["verification"]["passed"] is True and res["verification"]["proven"] is True


@contextmanager
def dashboard(home: Path, repo: Path, token: str) -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"BOSUN_HOME": str(home), "BOSUN_DASH_TOKEN": token}
    proc = subprocess.Popen([sys.executable, "-m", "bosun", "dash", "--port", str(port), "--no-open", "--repo", str(repo)],
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **env},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert time.monotonic() < deadline and proc.poll() is None, "the dashboard did not start"
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("opened", [False, True], ids=["default", "dashboard-port-opened"])
def test_bosuns_state_and_the_open_dashboard_are_out_of_reach(cli, repo, task_file, tmp_path, isolated_home, opened):
    code, other = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0, other
    with dashboard(isolated_home, repo, "the-users-dashboard-token") as port:
        dash_json = isolated_home / "dash.json"
        # Even with the dashboard's port opened to workers, its pages need the token the worker cannot read.
        top = f"network_ports = [{port}]\n" if opened else ""
        intruder(tmp_path / "no-user-config.toml", "snoop", "state", str(dash_json), str(isolated_home / "bosun.db"),
                 other["id"], str(port), top=top)
        before = kept(repo)
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "snoop", "--json")
    found = report(res)
    assert found["done"] == [] and found["token_found"] is False, found
    assert len(found["refused"]) == 4
    if opened:  # reached, and refused by the dashboard itself
        assert all("403" in r for r in found["refused"][2:]), found
    code_other, shown = cli("show", other["id"], "--json")
    assert shown["state"] == "verified" and Path(other["worktree"]).is_dir()
    assert_kept(repo, before)
    assert_honest_part_verified(code, res)


def test_the_hidden_test_is_nowhere_the_worker_can_reach(cli, repo, tmp_path, mechanism):
    hidden = f"from calc import add\n\n\ndef test_add_more():\n    assert add(10, 20) == 30  # {MARKER}\n"
    (repo / "tests" / "test_hidden.py").write_text(hidden)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "acceptance test")
    intruder(tmp_path / "no-user-config.toml", "seeker", "gitdir", str(repo), "tests/test_hidden.py", MARKER)
    task = task_yaml(tmp_path / "t.json", holdout=["tests/test_hidden.py"])
    before = kept(repo)
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "seeker", "--json")
    found = report(res)
    assert found["done"] == [], found
    assert MARKER not in json.dumps(found)
    if mechanism == "namespaces":
        # Its git still works, on a repository of the start tree alone.
        assert found["status_ok"] and found["history"] == 1 and found["status"] == "", found
        assert "start tree alone" in res["sandbox"]["held"]["reads"]
    else:
        assert "cannot read the repository" in res["sandbox"]["held"]["reads"]
    assert_kept(repo, before)
    assert_honest_part_verified(code, res)
    assert "test_hidden" not in (Path(res["run_dir"]) / "diff.patch").read_text()


def test_the_bosun_process_environment_never_reaches_the_worker(repo, task_file, tmp_path, mechanism):
    secret = "sk-bosun-parent-" + "9" * 24
    config = tmp_path / "user-config.toml"
    intruder(config, "peek", "environ", "BOSUN_TEST_PARENT_SECRET")
    env = {"BOSUN_CONFIG": str(config), "BOSUN_TEST_PARENT_SECRET": secret}
    if mechanism == "landlock":
        env["BOSUN_SANDBOX_PROBE"] = "landlock"
    out = run_bosun("delegate", str(task_file), "--repo", str(repo), "--profile", "peek", "--json", env=env)
    res = json.loads(out.stdout)
    found = report(res)
    held = res["sandbox"]["held"]
    if mechanism == "namespaces":
        assert found["found"] is False, found
        assert found["pids"] <= 4, found  # bwrap's init, the worker, its shell at most: nothing of bosun's
        assert held["process_view"].startswith("private")
    else:
        # Landlock alone cannot hide other processes (the worker reads bosun's environment): the record
        # says so instead of claiming it.
        assert found["found"] is True, found
        assert held["process_view"].startswith("not enforced")
    assert_honest_part_verified(out.returncode, res)
    # `required` on such a machine refuses before any worker starts.
    if mechanism == "landlock":
        config.write_text('sandbox = "required"\n' + config.read_text())
        out = run_bosun("delegate", str(task_file), "--repo", str(repo), "--profile", "peek", "--json", env=env)
        res = json.loads(out.stdout)
        assert out.returncode == 1 and res["state"] == "blocked", res
        assert "process view" in res["error"]["message"] and "bubblewrap" in res["error"]["hint"]


def test_the_users_keys_and_bosuns_database_are_unreadable(cli, repo, task_file, tmp_path, isolated_home, monkeypatch,
                                                           mechanism):
    user_home = tmp_path / "user-home"
    (user_home / ".ssh").mkdir(parents=True)
    key = user_home / ".ssh" / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nthe user's key\n")
    (user_home / ".aws").mkdir()
    (user_home / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = x\n")
    monkeypatch.setenv("HOME", str(user_home))
    code, first = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0, first
    intruder(tmp_path / "no-user-config.toml", "thief", "keys", str(key), str(user_home / ".aws" / "credentials"),
             str(isolated_home / "bosun.db"), str(Path(first["run_dir"]) / "events.jsonl"))
    before = kept(repo)
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "thief", "--json")
    found = report(res)
    assert found["done"] == [] and len(found["refused"]) == 4, found
    assert_kept(repo, before)
    assert_honest_part_verified(code, res)


def test_root_cannot_chattr_chmod_chown_or_mount_the_users_files(cli, repo, task_file, tmp_path, mechanism):
    if os.geteuid() != 0:
        pytest.skip("the attack is root's")
    (repo / "README.md").write_text("# calc\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "readme")
    intruder(tmp_path / "no-user-config.toml", "root", "privilege", str(repo))
    before = kept(repo)
    try:
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "root", "--json")
        found = report(res)
        assert_kept(repo, before)  # modes, owners and flags as they were (put back, without namespaces)
        if mechanism == "namespaces":
            assert found["done"] == [] and len(found["refused"]) == 5, found
            assert res["sandbox"]["held"]["privilege"].startswith("none")
            assert_honest_part_verified(code, res)
            code, out = cli("approve", res["id"], "--json")
            code, out = cli("integrate", res["id"], "--json")
            assert code == 0, out  # the user's index is writable: git could land it
            assert "return a + b" in (repo / "src" / "calc.py").read_text()
        else:
            # Landlock does not cover these: the mode watch put everything back, and the run is refused.
            # (README.md is not even readable to it: Landlock hides the user's tree.)
            assert "chattr +i .git/index" in found["done"] and "chmod 0777 .git/hooks" in found["done"], found
            assert code == 3, res
            gate = next(g for g in res["gates"] if g["code"] == "USER_FILES_TAMPERED")
            assert not gate["ok"] and ".git/index" in gate["detail"] and ".git/hooks" in gate["detail"], gate
            assert res["sandbox"]["held"]["privilege"].startswith("not enforced")
            git(repo, "add", "README.md")  # the user's git can write its index again
            code, out = cli("approve", res["id"], "--waive", "USER_FILES_TAMPERED", "--reason", "x", "--json")
            assert code == 2 and "cannot be waived" in out["error"]["message"], out
    finally:
        for path in (repo / "README.md", repo / ".git" / "index"):
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def listen() -> tuple[socket.socket, int]:
    srv = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        try:
            for _ in range(8):
                srv.accept()
        except OSError:
            pass  # the test closed the listener: nothing more to accept

    threading.Thread(target=accept, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_local_services_are_out_of_reach_but_the_provider_is_not(cli, repo, task_file, tmp_path, mechanism):
    nats, nats_port = listen()  # a service the user runs: a NATS hub, a database
    provider, provider_port = listen()
    config = tmp_path / "no-user-config.toml"
    intruder(config, "net", "connect", str(nats_port), str(provider_port))
    config.write_text(config.read_text() + f'base_url = "http://127.0.0.1:{provider_port}/v1"\n')
    try:
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "net", "--json")
    finally:
        nats.close()
        provider.close()
    found = report(res)
    assert found["done"] == [f"connect 127.0.0.1:{provider_port}"], found
    allowed = res["sandbox"]["network"].split("port(s) ")[1].removesuffix(" only").split(", ")
    assert str(provider_port) in allowed and str(nats_port) not in allowed, res["sandbox"]
    assert_honest_part_verified(code, res)


def test_nothing_the_worker_started_outlives_it(cli, repo, task_file, tmp_path):
    if probe().mechanism != "namespaces":
        pytest.skip("containment by construction needs a PID namespace")
    intruder(tmp_path / "no-user-config.toml", "lingerer", "linger")
    before = user_state(repo)
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "lingerer", "--json")
    log = Path(report(res)["daemon_log"])
    assert_honest_part_verified(code, res)  # nothing put the bug back while the tests ran
    code, out = cli("approve", res["id"], "--json")
    assert code == 0, out
    code, out = cli("integrate", res["id"], "--json")  # re-verification on the merged result
    assert code == 0, out
    assert "return a + b" in (repo / "src" / "calc.py").read_text()
    assert not log.exists(), "the daemon ran after the worker exited"
    running = subprocess.run(["pgrep", "-f", "daemon.py"], capture_output=True, text=True).stdout.split()
    assert not [p for p in running if str(log.parent) in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    assert user_state(repo) != before  # it landed
