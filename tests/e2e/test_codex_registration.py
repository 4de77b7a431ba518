"""What `bosun mcp install codex` says about Codex is true of the real Codex CLI: `codex mcp add` writes
the command, its arguments and --env, and none of the keys bosun names as ones it cannot set; the
printed table, as it stands, is a server Codex reads with every one of them."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from bosun.skills import install as si
from tests.e2e.cli_support import cli_binary

pytestmark = pytest.mark.cli


def _codex(codex: str, home: Path, *args: str) -> str:
    env = dict(os.environ, CODEX_HOME=str(home), HOME=str(home))
    res = subprocess.run([codex, *args], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_codex_mcp_add_leaves_out_what_bosun_says_and_the_table_has_it(tmp_path: Path) -> None:
    codex = cli_binary("codex")
    out = si.mcp_install("codex", False, print_only=True)
    added, printed = tmp_path / "added", tmp_path / "printed"
    added.mkdir()
    printed.mkdir()

    _codex(codex, added, *out["command"][1:])
    written = tomllib.loads((added / "config.toml").read_text())["mcp_servers"]["bosun"]
    table = tomllib.loads(out["config_toml"])["mcp_servers"]["bosun"]
    assert set(table) - set(written) == set(out["command_cannot_set"]), written
    assert {k: written[k] for k in ("command", "args", "env")} == {k: table[k] for k in ("command", "args", "env")}

    (printed / "config.toml").write_text(out["config_toml"])
    seen = json.loads(_codex(codex, printed, "mcp", "get", "bosun", "--json"))
    assert seen["startup_timeout_sec"] == table["startup_timeout_sec"]
    assert seen["tool_timeout_sec"] == table["tool_timeout_sec"]
    assert seen["transport"]["env_vars"] == table["env_vars"]
