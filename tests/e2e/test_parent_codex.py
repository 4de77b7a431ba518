"""A real parent: Codex (the real CLI, scripted through bosun's replay server) drives `bosun mcp`.

Codex reads bosun's MCP server from `[mcp_servers.bosun]` in its config.toml (what `bosun mcp install
codex` writes). The scripted parent model delegates a bug fix to a real worker CLI (OpenCode, scripted
by a second replay server), waits until bosun has verified it, then approves and integrates. The fix
reaches the user's branch only through bosun, and the parent's tokens are read from Codex's rollout log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bosun.replay import ReplayServer
from bosun.replay.toolmap import result_object
from bosun.skills.install import codex_toml
from tests.conftest import git
from tests.e2e.cli_support import cli_binary
from tests.e2e.mcp_support import PARENT_TASK, opencode_worker_profile, parent_server_env
from tests.e2e.worker_support import FIX_SCRIPT, KEY_ENV

pytestmark = [pytest.mark.slow, pytest.mark.cli]
RUN = "{result:call_0_0.id}"
WAITS = 6


def _toml(value: object) -> str:
    return json.dumps(value)


def test_codex_delegates_through_bosun_mcp(repo: Path, tmp_path: Path):
    codex = cli_binary("codex")
    worker_model = ReplayServer(FIX_SCRIPT, log_path=tmp_path / "worker-model.jsonl")
    worker_model.start()
    opencode_worker_profile(worker_model.base_url("opencode"), cli_binary("opencode"), KEY_ENV)
    task = PARENT_TASK
    script = {
        "turns": [
            {"call": "mcp__bosun__delegate", "args": {"task": task, "profile": "oc"}},
            *[{"call": "mcp__bosun__wait", "args": {"run_id": RUN, "timeout_s": 50}}] * WAITS,
            {"call": "mcp__bosun__approve", "args": {"run_id": RUN}},
            {"call": "mcp__bosun__integrate", "args": {"run_id": RUN}},
            {"say": "bosun verified the fix; approved and integrated."},
        ],
        "consume_toolless": False,
    }
    server_env = parent_server_env("codex", KEY_ENV)
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    before_head = git(repo, "rev-parse", "HEAD").strip()

    with ReplayServer(script, root=repo, log_path=tmp_path / "parent-model.jsonl") as srv:
        # The [mcp_servers.bosun] table is the one `bosun mcp install codex` prints, with the test's
        # environment in place of the user's (BOSUN_HOME, the source tree...).
        table = codex_toml([sys.executable, "-m", "bosun", "mcp"])
        env_line = 'env = { PARENT_AGENT = "codex" }'
        assert env_line in table
        table = table.replace(env_line, "env = { " + ", ".join(f"{k} = {_toml(v)}" for k, v in server_env.items()) + " }")
        (codex_home / "config.toml").write_text("\n".join([
            'model = "deepseek-chat"', 'model_provider = "replay"', 'approval_policy = "never"',
            'sandbox_mode = "workspace-write"', "check_for_update_on_startup = false", 'web_search = "disabled"',
            "", "[model_providers.replay]", 'name = "replay"', f"base_url = {_toml(srv.base_url('codex'))}",
            'wire_api = "responses"', f'env_key = "{KEY_ENV}"', "", table,
        ]))
        env = dict(os.environ, CODEX_HOME=str(codex_home), HOME=str(tmp_path / "parent-home"))
        env[KEY_ENV] = "dummy"
        (tmp_path / "parent-home").mkdir()
        proc = subprocess.run(
            [codex, "exec", "--json", "--skip-git-repo-check", "--disable", "plugins", "--disable", "remote_plugin",
             "--disable", "apps", "add() is broken; get it fixed through bosun."],
            cwd=repo, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
        )
        results = srv.tool_results()
        errors = srv.errors
    worker_model.stop()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not errors, (errors, proc.stdout[-4000:])
    out = {cid: result_object(text) for cid, text in results.items()}  # after Codex's "Wall time" preamble
    started = out["call_0_0"]
    approved, landed = out[f"call_{WAITS + 1}_0"], out[f"call_{WAITS + 2}_0"]
    done = next(out[f"call_{i}_0"] for i in range(1, WAITS + 1) if out[f"call_{i}_0"]["done"])
    assert started["state"] == "prepared"
    assert done["state"] == "verified" and done["verification"]["passed"] is True, done
    assert approved["state"] == "approved" and landed["state"] == "cleaned", (approved, landed)
    assert "return a + b" in (repo / "src/calc.py").read_text()
    assert git(repo, "rev-parse", "HEAD~1").strip() == before_head
    assert f"Bosun-Run: {started['id']}" in git(repo, "log", "-1", "--format=%B")
    metrics = json.loads((Path(os.environ["BOSUN_HOME"]) / "runs" / started["id"] / "metrics.json").read_text())
    measured = metrics["parent_measured"]
    assert measured["agent"] == "codex" and measured["measured"] is True, measured
    # The window (delegate to approve) read from the rollout as Codex left it: each model response in
    # it, the one that called approve too, each counted once.
    responses = codex_responses(Path(measured["log"]), measured["from"], measured["to"])
    assert list(responses.values()).count("approve") == 1 and "delegate" not in responses.values(), responses
    assert [t["id"] for t in measured["turns"]] == list(responses), (measured["turns"], responses)
    assert measured["tokens"]["total_tokens"] == sum(t["tokens"] for t in measured["turns"]) > 0


def codex_responses(log: Path, start: float, end: float) -> dict[str, str | None]:
    """Codex's usage records of model responses timestamped in [start, end], in order: response id ->
    the tool that response called."""
    from datetime import datetime

    out: dict[str, str | None] = {}
    called = None
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        payload = entry.get("payload") or {}
        if entry.get("type") == "response_item" and payload.get("type") == "function_call":
            called = payload.get("name")
        elif entry.get("type") == "token_usage_record":
            at = datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).timestamp()
            if start <= at <= end:
                out[payload["response_id"]] = called
            called = None
    return out
