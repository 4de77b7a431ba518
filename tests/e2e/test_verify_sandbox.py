"""Verify commands run the worker's code: the kernel sandbox confines them as it confines the worker."""

from __future__ import annotations

import sys

import pytest

from bosun.sandbox import probe
from tests.conftest import task_yaml


@pytest.mark.skipif(probe().mechanism == "none", reason="this kernel has no Landlock")
def test_a_verify_command_cannot_write_outside_the_tree_it_verifies(cli, repo, tmp_path):
    target = tmp_path / "outside.txt"
    code_line = f"open({str(target)!r}, 'w').write('pwned')"
    task = task_yaml(tmp_path / "t.json", verify=[[sys.executable, "-c", code_line]])
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 3, res
    assert res["verification"]["passed"] is False
    tail = res["verification"]["commands"][0]["output_tail"]
    assert "Permission" in tail or "Read-only file system" in tail, tail
    assert not target.exists()


VERIFY_PROBE = """import json, os, socket, sys
out = {}
for name, path in (("db", sys.argv[1]), ("key", sys.argv[2])):
    try:
        open(path, "rb").read()
        out[name] = "READ"
    except OSError as exc:
        out[name] = type(exc).__name__
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[3])), 5).close()
    out["host_service"] = "REACHED"
except OSError as exc:
    out["host_service"] = type(exc).__name__
inner = socket.create_server(("127.0.0.1", 0))
socket.create_connection(inner.getsockname(), 5).close()
out["own_loopback"] = "ok"
out["processes"] = len([p for p in os.listdir("/proc") if p.isdigit()])
print("PROBE " + json.dumps(out))
"""


@pytest.mark.skipif(probe().mechanism != "namespaces", reason="no user namespaces or no bwrap here")
def test_a_verify_command_reads_and_reaches_nothing_beyond_its_tree(cli, repo, tmp_path, isolated_home, monkeypatch):
    # The verify commands run the worker's code: a test of its own could read bosun's database or the
    # user's key, or reach a service the user runs. With no setting it has none of them, but a
    # loopback of its own for the servers its tests start.
    import json
    import socket

    user_home = tmp_path / "user-home"
    (user_home / ".ssh").mkdir(parents=True)
    (user_home / ".ssh" / "id_ed25519").write_text("the user's key\n")
    monkeypatch.setenv("HOME", str(user_home))
    service = socket.create_server(("127.0.0.1", 0))
    script = tmp_path / "probe.py"
    script.write_text(VERIFY_PROBE)
    argv = [sys.executable, str(script), str(isolated_home / "bosun.db"), str(user_home / ".ssh" / "id_ed25519"),
            str(service.getsockname()[1])]
    task = task_yaml(tmp_path / "t.json", verify=[argv])
    try:
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    finally:
        service.close()
    tail = res["verification"]["commands"][0]["output_tail"]
    found = json.loads(tail.split("PROBE ", 1)[1].splitlines()[0])
    assert found["db"] != "READ" and found["key"] != "READ" and found["host_service"] != "REACHED", found
    assert found["own_loopback"] == "ok" and found["processes"] <= 3, found
    assert res["sandbox"]["verify"] == {"mechanism": "namespaces", "network": "a loopback of its own, nothing else"}
