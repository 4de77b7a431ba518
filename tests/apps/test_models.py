"""`bosun models PROFILE` says which reasoning effort a run will pass, not only the one configured."""

from __future__ import annotations

from pathlib import Path


def _add(repo: Path, text: str) -> None:
    (repo / "bosun.toml").write_text((repo / "bosun.toml").read_text() + "\n" + text + "\n")


def test_models_shows_the_effort_a_run_uses(cli, repo, tmp_path, monkeypatch):
    monkeypatch.setenv("BOSUN_CACHE_DIR", str(tmp_path / "cache"))
    # gpt-5 takes minimal..high: the configured max is snapped to high, as an attempt snaps it.
    _add(repo, '[profiles.cx]\nadapter = "codex"\nmodel = "gpt-5"\nbase_url = "http://127.0.0.1:9/v1"\neffort = "max"\n'
               '[profiles.qw]\nadapter = "qwen"\nmodel = "qwen3-coder"\nbase_url = "http://127.0.0.1:9/v1"\neffort = "high"')
    code, res = cli("models", "cx", "--repo", str(repo), "--json")
    assert code == 0, res
    (entry,) = res["profiles"]
    assert entry["efforts"] == ["minimal", "low", "medium", "high"]
    assert entry["effort"] == "high" and entry["effort_configured"] == "max", entry
    assert "using 'high'" in entry["effort_note"]
    code, text = cli("models", "cx", "--repo", str(repo))
    assert "effort high; levels: minimal, low, medium, high" in text and "using 'high'" in text, text
    code, res = cli("models", "qw", "--repo", str(repo), "--json")
    (entry,) = res["profiles"]
    assert entry["effort"] is None and entry["effort_configured"] == "high"  # qwen has no such setting
    assert entry["effort_note"] == "effort 'high' ignored: the qwen adapter has no effort setting"
