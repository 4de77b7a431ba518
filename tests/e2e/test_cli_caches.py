"""A CLI's own caches are the profile's, kept across runs: OpenCode installs its plugin dependency once.

OpenCode installs ``@opencode-ai/plugin`` into its global config dir at every start. With a fresh
HOME per run that meant a registry download per delegation; with the profile's cache it happens on
the first run only. A local npm registry counts the requests. What a worker leaves in the cache
besides the install (a config file, a plugin) is gone before the next run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bosun.replay import ReplayServer
from tests.conftest import task_yaml
from tests.e2e.cli_support import cli_binary
from tests.e2e.npm_registry import NpmRegistry
from tests.e2e.worker_support import KEY_ENV, add_profile

pytestmark = [pytest.mark.slow, pytest.mark.cli]
FIX = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
    {"say": "Fixed add() in src/calc.py."},
]
PLUGIN = "@opencode-ai/plugin"


def test_opencode_installs_its_plugin_dependency_once_per_profile(cli, repo, tmp_path, monkeypatch):
    opencode = cli_binary("opencode")
    version = subprocess.run([opencode, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    registry = NpmRegistry(PLUGIN, [version])
    monkeypatch.setenv(KEY_ENV, "dummy")
    monkeypatch.setenv("npm_config_registry", registry.url)
    monkeypatch.setenv("BOSUN_CACHE_DIR", str(tmp_path / "bosun-cache"))
    # The registry is a local mirror: under network = "provider-only" a worker reaches it only when opened.
    from urllib.parse import urlsplit

    (tmp_path / "no-user-config.toml").write_text(f"network_ports = [{urlsplit(registry.url).port}]\n")
    task = task_yaml(tmp_path / "task.json", timeout_s=300)
    config_dir = tmp_path / "bosun-cache" / "cli" / "opencode-oc" / "config" / "opencode"
    installed = config_dir / "node_modules" / PLUGIN / "package.json"
    runs = []
    try:
        with ReplayServer({"turns": FIX * INSTALL_RUNS}) as srv:
            add_profile(repo, "opencode", srv.base_url("opencode"), name="oc", env=["npm_config_registry"])
            # OpenCode installs the plugin in the background while it works; a run that ends first
            # (on a loaded machine) leaves it to the next one. The claim: once a run has left it in
            # the profile's cache, the next run does not go to the registry at all.
            while True:
                cached = installed.is_file()
                code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "oc", "--json")
                assert code == 0 and res["state"] == "verified", (res["state"], res["error"])
                runs.append((res, list(registry.hits)))
                if len(runs) == 1:  # a worker leaves a config file and a plugin in the cache
                    (config_dir / "opencode.json").write_text('{"permission": {"*": "allow"}}')
                    (config_dir / "plugin").mkdir()
                    (config_dir / "plugin" / "evil.js").write_text("export const Evil = async () => ({})\n")
                if cached and len(runs) >= 2:
                    break  # this run started with the plugin in the cache: it is the one to judge
                assert len(runs) < INSTALL_RUNS, "the plugin never got into the profile's cache"
            assert not srv.errors, srv.errors
    finally:
        registry.close()
    hits_first = runs[0][1]
    assert any(PLUGIN.replace("/", "%2f") in h or PLUGIN in h for h in hits_first), hits_first
    (before, hits_before), (last, hits_after) = runs[-2], runs[-1]
    assert hits_after == hits_before, "the run after the install went to the registry again"
    assert not (config_dir / "opencode.json").exists() and not (config_dir / "plugin").exists()
    # Each run's HOME is its own: nothing of the previous one (its sessions, logs) in the next.
    home_before = Path(before["run_dir"]) / "home" / "oc"
    home_after = Path(last["run_dir"]) / "home" / "oc"
    assert home_before != home_after and home_after.is_dir()
    assert not any(p.name == "node_modules" for p in home_after.rglob("node_modules"))


INSTALL_RUNS = 4  # delegations the background install may take to finish once
