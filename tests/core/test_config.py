from __future__ import annotations

import pytest

from bosun.core.config import load_settings
from bosun.core.errors import BadInput


def test_precedence_cli_env_repo_user(tmp_path, monkeypatch):
    user = tmp_path / "user.toml"
    user.write_text('max_concurrent_runs = 2\n[profiles.a]\nadapter = "command"\ncommand = ["x"]\ntimeout_s = 10\n')
    monkeypatch.setenv("BOSUN_CONFIG", str(user))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bosun.toml").write_text('max_concurrent_runs = 3\n[profiles.a]\ntimeout_s = 20\n')
    s = load_settings(repo)
    assert s.max_concurrent_runs == 3
    assert s.profiles["a"].timeout_s == 20 and s.profiles["a"].command == ["x"]  # merged field by field
    monkeypatch.setenv("BOSUN_MAX_CONCURRENT_RUNS", "5")
    assert load_settings(repo).max_concurrent_runs == 5
    assert load_settings(repo, {"max_concurrent_runs": 6}).max_concurrent_runs == 6


def test_unknown_key_and_bad_value(tmp_path, monkeypatch):
    repo = tmp_path
    (repo / "bosun.toml").write_text("max_concurent_runs = 3\n")
    with pytest.raises(BadInput) as exc:
        load_settings(repo)
    assert "max_concurent_runs" in exc.value.message
    (repo / "bosun.toml").write_text("max_concurrent_runs = 99\n")
    with pytest.raises(BadInput):
        load_settings(repo)
    (repo / "bosun.toml").write_text("max_concurrent_runs = \n")
    with pytest.raises(BadInput) as exc:
        load_settings(repo)
    assert "invalid TOML" in exc.value.message


def test_unknown_profile_lists_known(tmp_path):
    (tmp_path / "bosun.toml").write_text('[profiles.cheap]\nadapter = "command"\n')
    with pytest.raises(BadInput) as exc:
        load_settings(tmp_path).profile("nope")
    assert "cheap" in exc.value.message


def test_errors_name_the_file_and_line(tmp_path):
    (tmp_path / "bosun.toml").write_text('default_profile = "a"\n\n[profiles.a]\nadapter = "command"\ntimeout = 5\n')
    with pytest.raises(BadInput) as exc:
        load_settings(tmp_path)
    assert "bosun.toml:5" in exc.value.message and "timeout" in exc.value.message
    (tmp_path / "bosun.toml").write_text('[profiles.a]\nadapter = "nosuch"\n')
    with pytest.raises(BadInput) as exc:
        load_settings(tmp_path)
    assert "bosun.toml:2" in exc.value.message
