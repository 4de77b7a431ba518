"""The parents' verbs through the CLI: skill install, mcp install --print, savings; start-up stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, make_repo


def test_skill_install_and_uninstall_through_the_cli(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    repo = make_repo(tmp_path / "repo")
    code, out = cli("skill", "install", "codex", "--repo", str(repo), "--json")
    assert code == 0 and out["path"] == str(home / ".agents/skills/bosun")
    code, again = cli("skill", "install", "opencode", "--repo", str(repo), "--json")
    assert code == 0 and again["unchanged"] is True  # the same directory, already up to date
    code, out = cli("skill", "install", "claude", "--project", "--repo", str(repo), "--json")
    assert code == 0 and (repo / ".claude/skills/bosun/SKILL.md").is_file()
    code, out = cli("skill", "install", "codex", "--uninstall", "--repo", str(repo), "--json")
    assert code == 0 and not (home / ".agents/skills/bosun").exists()
    code, out = cli("skill", "install", "codex", "--uninstall", "--repo", str(repo), "--json")
    assert code == 2 and out["error"]["code"] == "NOT_FOUND"
    code, out = cli("skill", "install", "codex", "--plugin", str(tmp_path / "p"), "--json")
    assert code == 2 and "--plugin is for Claude Code" in out["error"]["message"]


def test_mcp_install_print(cli):
    code, out = cli("mcp", "install", "codex", "--print", "--json")
    assert code == 0 and out["ran"] is False and out["command"][:3] == ["codex", "mcp", "add"]
    code, out = cli("mcp", "install", "--json")
    assert code == 2


def test_mcp_install_codex_prints_the_table_that_works(cli):
    import tomllib

    code, text = cli("mcp", "install", "codex", "--print")
    assert code == 0 and isinstance(text, str)
    head, _, toml = text.partition("\n")
    table = tomllib.loads(toml)["mcp_servers"]["bosun"]
    assert table["required"] is True and table["startup_timeout_sec"] >= 30
    # The command that leaves those keys out is not offered as if it were the same registration.
    assert "codex mcp add" not in toml and all(key in head for key in ("startup_timeout_sec", "required")), head


def test_savings_with_no_runs(cli, repo: Path):
    code, out = cli("savings", "--repo", str(repo), "--json")
    assert code == 0 and out["runs"] == 0 and out["parent_measured"]["runs"] == 0


def test_start_up_does_not_import_the_mcp_sdk():
    probe = ("import sys; from bosun.cli.main import build_parser; import bosun.cli.handlers; build_parser(); "
             "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'starlette', 'uvicorn'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}).stdout
    assert out.strip() == "[]"
