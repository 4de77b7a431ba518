"""The playbook skill, the Claude Code plugin and MCP registration, installed into temporary homes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bosun.core.errors import BadInput, NotFound
from bosun.skills import install as si
from bosun.skills.playbook import frontmatter_problems, parse_frontmatter
from tests.conftest import make_repo

USER_CONFIG = """
default_profile = "cheap"

[profiles.cheap]
adapter = "native"
model = "deepseek-chat"
base_url = "https://api.example.invalid/v1"
strengths = ["python"]
"""

WHERE = {
    ("claude", False): ".claude/skills/bosun",
    ("codex", False): ".agents/skills/bosun",
    ("agents", False): ".agents/skills/bosun",
    ("opencode", False): ".agents/skills/bosun",
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    Path(os.environ["BOSUN_CONFIG"]).write_text(USER_CONFIG)
    return {"HOME": str(home)}


@pytest.mark.parametrize("host", si.HOSTS)
def test_user_install_is_a_valid_skill_listing_only_the_users_profiles(host: str, env, tmp_path: Path):
    repo = make_repo(tmp_path / "repo")  # its bosun.toml defines the test profiles: not the user's
    out = si.install_skill(host, False, repo, env)
    skill = Path(env["HOME"]) / WHERE[(host, False)] / "SKILL.md"
    assert out["path"] == str(skill.parent) and out["changed"] == [str(skill)]
    text = skill.read_text()
    assert frontmatter_problems(text, "bosun") == []
    assert parse_frontmatter(text)["name"] == "bosun"
    assert "| `cheap` (default) | native | deepseek-chat | cheap | python |" in text
    assert "`fix`" not in text and "edit_locked" not in text  # a repo's profiles are not the user's

    again = si.install_skill(host, False, repo, env)
    assert again["unchanged"] is True and skill.read_text() == text

    gone = si.uninstall_skill(host, False, repo, env)
    assert set(gone["removed"]) == {str(skill), str(skill.parent / si.MANIFEST)}
    assert not skill.parent.exists()


def test_project_install_lists_the_repos_profiles_and_spares_other_files(env, tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    neighbour = repo / ".claude" / "skills" / "other" / "SKILL.md"
    neighbour.parent.mkdir(parents=True)
    neighbour.write_text("---\nname: other\ndescription: not bosun's\n---\n")
    si.install_skill("claude", True, repo, env)
    text = (repo / ".claude/skills/bosun/SKILL.md").read_text()
    assert "`fix`" in text and "`cheap`" in text
    si.uninstall_skill("claude", True, repo, env)
    assert neighbour.exists() and not (repo / ".claude/skills/bosun").exists()


def test_foreign_and_edited_files_are_left_alone(env, tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    mine = Path(env["HOME"]) / ".claude/skills/bosun/SKILL.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own bosun notes\n")
    with pytest.raises(BadInput, match="not written by bosun"):
        si.install_skill("claude", False, repo, env)
    with pytest.raises(NotFound):
        si.uninstall_skill("claude", False, repo, env)
    assert mine.read_text() == "my own bosun notes\n"

    mine.unlink()
    si.install_skill("claude", False, repo, env)
    mine.write_text(mine.read_text() + "\nmy addition\n")
    out = si.uninstall_skill("claude", False, repo, env)
    assert out["kept_changed_by_user"] == [str(mine)] and mine.exists()


def test_doctor_warns_on_duplicates_and_stale_installs(env, tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    assert si.warnings(repo, env) == []
    si.install_skill("claude", False, repo, env)
    si.install_skill("claude", True, repo, env)
    warns = si.warnings(repo, env)
    assert any(w.startswith("claude sees the bosun skill 2 times") for w in warns), warns
    si.uninstall_skill("claude", True, repo, env)
    assert si.warnings(repo, env) == []

    Path(os.environ["BOSUN_CONFIG"]).write_text(USER_CONFIG.replace("deepseek-chat", "deepseek-v4"))
    warns = si.warnings(repo, env)
    assert len(warns) == 1 and "stale" in warns[0]
    si.install_skill("claude", False, repo, env)
    assert si.warnings(repo, env) == []


def test_plugin_directory(env, tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    target = tmp_path / "plugin"
    out = si.install_plugin(target, repo)
    plugin = json.loads((target / ".claude-plugin/plugin.json").read_text())
    assert plugin["name"] == "bosun"
    market = json.loads((target / ".claude-plugin/marketplace.json").read_text())
    assert market["plugins"][0]["name"] == "bosun"
    server = json.loads((target / ".mcp.json").read_text())["mcpServers"]["bosun"]
    assert server["args"][-1] == "mcp" and server["env"]["PARENT_AGENT"] == "claude-code"
    hooks = json.loads((target / "hooks/hooks.json").read_text())
    assert "skills/bosun/SKILL.md" in hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert frontmatter_problems((target / "skills/bosun/SKILL.md").read_text(), "bosun") == []
    assert "claude plugin install bosun@bosun" in out["next"]
    si.uninstall_plugin(target)
    assert not target.exists()


def test_mcp_install_runs_the_hosts_own_command_or_prints_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    calls: list[list[str]] = []

    def runner(argv: list[str]) -> tuple[int, str]:
        calls.append(argv)
        return 0, "ok"

    monkeypatch.setenv("PATH", str(tmp_path))  # no host CLI on PATH
    out = si.mcp_install("claude", False, run=runner)
    assert out["ran"] is False and "not on PATH" in out["reason"] and calls == []
    assert out["command"][:7] == ["claude", "mcp", "add", "-s", "user", "-e", "PARENT_AGENT=claude-code"]
    assert out["command"][7:9] == ["bosun", "--"] and out["command"][-1] == "mcp"
    codex = si.mcp_install("codex", False, run=runner)
    assert "[mcp_servers.bosun]" in codex["config_toml"] and 'PARENT_AGENT = "codex"' in codex["config_toml"]

    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    out = si.mcp_install("claude", True, run=runner)
    assert out["ran"] is True
    assert calls[0][1:] == ["mcp", "remove", "-s", "project", "bosun"]
    assert calls[1][0] == str(fake) and calls[1][1:4] == ["mcp", "add", "-s"]
    with pytest.raises(BadInput):
        si.mcp_install("codex", True, run=runner)


def test_codex_registration_is_the_table_the_command_cannot_carry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    import tomllib

    calls: list[list[str]] = []

    def runner(argv: list[str]) -> tuple[int, str]:
        calls.append(argv)
        return 0, "ok"

    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))  # Codex is installed: bosun still does not run `codex mcp add`
    monkeypatch.delenv("CODEX_HOME", raising=False)
    out = si.mcp_install("codex", False, run=runner)
    assert calls == [] and out["ran"] is False, out
    table = tomllib.loads(out["config_toml"])["mcp_servers"]["bosun"]
    # `codex mcp add` carries the command, its arguments and --env; every other key is named as one it cannot.
    assert set(out["command_cannot_set"]) == set(table) - {"command", "args", "env"} != set()
    assert all(key in out["reason"] for key in out["command_cannot_set"]), out["reason"]
    assert "~/.codex/config.toml" in out["reason"]
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    assert str(tmp_path / "ch" / "config.toml") in si.mcp_install("codex", False, print_only=True)["reason"]
