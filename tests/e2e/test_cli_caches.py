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
    task = task_yaml(tmp_path / "task.json", timeout_s=300)
    runs = []
    try:
        with ReplayServer({"turns": FIX * 2}) as srv:
            add_profile(repo, "opencode", srv.base_url("opencode"), name="oc", env=["npm_config_registry"])
            for round_ in range(2):
                code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "oc", "--json")
                assert code == 0 and res["state"] == "verified", (res["state"], res["error"])
                runs.append((res, list(registry.hits)))
                if round_ == 0:  # a worker leaves a config file and a plugin in the cache
                    config_dir = tmp_path / "bosun-cache" / "cli" / "opencode-oc" / "config" / "opencode"
                    (config_dir / "opencode.json").write_text('{"permission": {"*": "allow"}}')
                    (config_dir / "plugin").mkdir()
                    (config_dir / "plugin" / "evil.js").write_text("export const Evil = async () => ({})\n")
            assert not srv.errors, srv.errors
    finally:
        registry.close()
    (first, hits_first), (second, hits_second) = runs
    assert any(PLUGIN.replace("/", "%2f") in h or PLUGIN in h for h in hits_first), hits_first
    assert hits_second == hits_first, "the second run went to the registry again"
    installed = tmp_path / "bosun-cache" / "cli" / "opencode-oc" / "config" / "opencode" / "node_modules" / PLUGIN
    assert (installed / "package.json").is_file()
    config_dir = installed.parents[2]
    assert not (config_dir / "opencode.json").exists() and not (config_dir / "plugin").exists()
    # Each run's HOME is its own: nothing of the first (its sessions, logs) in the second's.
    home_first = Path(first["run_dir"]) / "home" / "oc"
    home_second = Path(second["run_dir"]) / "home" / "oc"
    assert home_first != home_second and home_second.is_dir()
    assert not any(p.name == "node_modules" for p in home_second.rglob("node_modules"))
