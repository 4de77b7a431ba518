"""`bosun models` through a CLI's own listing (`opencode models`), run with a throwaway HOME."""

from __future__ import annotations

import pytest

from tests.e2e.cli_support import cli_binary

pytestmark = [pytest.mark.slow, pytest.mark.cli]


def test_opencode_profile_without_base_url_lists_the_cli_catalog(cli, repo, tmp_path, monkeypatch):
    monkeypatch.setenv("BOSUN_CACHE_DIR", str(tmp_path / "cache"))
    binary = cli_binary("opencode")
    with (repo / "bosun.toml").open("a") as fh:
        fh.write(f'\n[profiles.oc]\nadapter = "opencode"\nmodel = "opencode/no-such-model"\nbinary = "{binary}"\n')
    code, res = cli("models", "oc", "--repo", str(repo), "--json")
    assert code == 0, res
    (entry,) = res["profiles"]
    assert entry["source"] == "opencode models" and entry["error"] is None, entry
    assert entry["models"] and all("/" in m for m in entry["models"]), entry["models"][:5]
    assert entry["listed"] is False  # the profile's model is not offered: `bosun models` says so
