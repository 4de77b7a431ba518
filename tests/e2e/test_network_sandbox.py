"""`network = "provider-only"`: a sandboxed worker may open TCP connections to its provider's port only."""

from __future__ import annotations

import json
import socket
import sys
import threading
from pathlib import Path

import pytest

from bosun.sandbox import probe
from tests.conftest import task_yaml

PROBE = """import json, socket, sys
out = {}
for name, port in (("provider", int(sys.argv[1])), ("other", int(sys.argv[2]))):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
        out[name] = "connected"
    except OSError as exc:
        out[name] = type(exc).__name__
    finally:
        s.close()
open("net.json", "w").write(json.dumps(out))
print("done")
"""


def listener() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def accept() -> None:
        try:
            for _ in range(4):
                srv.accept()
        except OSError:
            pass  # the test closed the listener: nothing more to accept

    threading.Thread(target=accept, daemon=True).start()
    return srv, srv.getsockname()[1]


@pytest.mark.skipif(probe().landlock_abi < 4, reason="this kernel has no Landlock network rules")
@pytest.mark.parametrize("network", ["provider-only", "any"])
def test_provider_only_allows_the_provider_port_alone(cli, repo, tmp_path, network):
    provider, provider_port = listener()
    other, other_port = listener()
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    toml = repo / "bosun.toml"
    toml.write_text(f'network = "{network}"\n' + toml.read_text() + (
        f'\n[profiles.net]\nadapter = "command"\nbase_url = "http://127.0.0.1:{provider_port}/v1"\n'
        f"command = [{json.dumps(sys.executable)}, {json.dumps(str(script))}, "
        f'"{provider_port}", "{other_port}"]\n'))
    task = task_yaml(tmp_path / "t.json", verify=[])
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "net", "--json")
    seen = json.loads((Path(res["worktree"]) / "net.json").read_text())
    assert seen["provider"] == "connected"
    if network == "provider-only":
        assert seen["other"] != "connected"
        assert "provider-only" in res["sandbox"]["network"]
    else:
        assert seen["other"] == "connected"
    provider.close()
    other.close()
