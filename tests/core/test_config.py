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


def _ladder_toml(path, *rungs: tuple[str, str | None]) -> None:
    text = ""
    for name, up in rungs:
        text += f'[profiles.{name}]\nadapter = "command"\ncommand = ["x"]\n'
        text += f'escalate_to = "{up}"\n' if up else ""
    (path / "bosun.toml").write_text(text)


def test_an_escalation_ladder_loads_rung_by_rung(tmp_path):
    from bosun.core.config import ladder

    _ladder_toml(tmp_path, ("cheap", "mid"), ("mid", "top"), ("top", None))
    s = load_settings(tmp_path)
    assert [p.name for p in ladder(s, "cheap")] == ["cheap", "mid", "top"]
    assert [p.name for p in ladder(s, "top")] == ["top"]
    assert s.repair == 1  # the default: one repair round per rung


def test_a_ladder_with_an_unknown_rung_or_a_cycle_is_refused_at_load(tmp_path):
    _ladder_toml(tmp_path, ("cheap", "mid"), ("mid", "nosuch"))
    with pytest.raises(BadInput) as exc:
        load_settings(tmp_path)
    assert exc.value.code == "BAD_CONFIG"
    assert "escalate_to = 'nosuch' names no profile" in exc.value.message and "cheap, mid" in exc.value.message
    _ladder_toml(tmp_path, ("cheap", "mid"), ("mid", "top"), ("top", "mid"))
    with pytest.raises(BadInput) as exc:
        load_settings(tmp_path)
    assert "cycle: mid -> top -> mid" in exc.value.message, exc.value.message
    _ladder_toml(tmp_path, ("solo", "solo"))
    with pytest.raises(BadInput) as exc:
        load_settings(tmp_path)
    assert "cycle: solo -> solo" in exc.value.message
    assert exc.value.hint  # says what to do


def test_repair_rounds_are_bounded(tmp_path):
    (tmp_path / "bosun.toml").write_text("repair = 4\n")
    with pytest.raises(BadInput) as exc:
        load_settings(tmp_path)
    assert "repair" in exc.value.message
