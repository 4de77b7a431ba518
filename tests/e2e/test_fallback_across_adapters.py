"""A fallback chain across adapters, with real processes: native hits a 429, Pi finishes the task."""

from __future__ import annotations

import pytest

from bosun.replay import ReplayServer
from tests.e2e.cli_support import cli_binary

pytestmark = [pytest.mark.slow, pytest.mark.cli]

FIX = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
    {"say": "Fixed add()."},
]


def test_rate_limited_profile_falls_back_to_another_adapter_and_cools_down(cli, repo, task_file, monkeypatch):
    pi = cli_binary("pi")
    monkeypatch.setenv("BOSUN_TEST_KEY", "dummy")
    with ReplayServer([{"fault": 429, "retry_after": 900}]) as limited, ReplayServer(FIX + FIX) as good:
        with (repo / "bosun.toml").open("a") as fh:
            fh.write(
                f'\n[profiles.cheap]\nadapter = "native"\nmodel = "m"\nbase_url = "{limited.base_url("openai")}"\n'
                'fallbacks = ["backup"]\n'
                f'\n[profiles.backup]\nadapter = "pi"\nmodel = "mock-model"\nbase_url = "{good.base_url("openai")}"\n'
                f'api_key_env = "BOSUN_TEST_KEY"\nbinary = "{pi}"\n'
            )
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "cheap", "--auto-approve", "--json")
        assert code == 0, res
        assert res["state"] == "cleaned" and res["profile"] == "backup"
        assert "return a + b" in (repo / "src" / "calc.py").read_text()
        from bosun.store.db import open_store

        store = open_store()
        assert [(a["profile"], a["error_class"]) for a in store.attempts(res["id"])] == [
            ("cheap", "rate_limited"), ("backup", None)]
        assert 800 < store.cooldowns()["cheap"]["until"] - __import__("time").time() <= 900

        # The next run skips the cooling profile entirely.
        (repo / "src" / "calc.py").write_text((repo / "src" / "calc.py").read_text().replace("a + b", "a - b  # bug"))
        from tests.conftest import git

        git(repo, "commit", "-qam", "reintroduce the bug")
        seen = len(limited.requests)
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "cheap", "--json")
        assert code == 0 and res["profile"] == "backup"
        assert len(limited.requests) == seen
        code, out = cli("workers", "--repo", str(repo), "--json")
        cheap = next(w for w in out["workers"] if w["profile"] == "cheap")
        assert cheap["cooldown_until"] is not None
