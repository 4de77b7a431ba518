"""A real parent: Claude Code (the real CLI, scripted through bosun's replay server) drives `bosun mcp`.

The scripted parent model delegates a bug fix to a real worker CLI (OpenCode, scripted by a second
replay server), waits (once too briefly: "call again"), then approves and integrates. The fix reaches
the user's branch only through bosun's approve and integrate, and the parent's own tokens are read back
from Claude Code's session log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bosun.replay import ReplayServer
from bosun.workers.claude import QUIET_ENV
from tests.conftest import git
from tests.e2e.cli_support import cli_binary
from tests.e2e.mcp_support import PARENT_TASK, opencode_worker_profile, parent_server_env
from tests.e2e.worker_support import FIX_SCRIPT, KEY_ENV

pytestmark = [pytest.mark.slow, pytest.mark.cli]
TOOLS = ("delegate", "wait", "approve", "integrate")
RUN = "{result:call_0_0.id}"
WAITS = 6  # long waits: a loaded machine may need several; once the run is done each returns at once


def test_claude_code_delegates_through_bosun_mcp(repo: Path, tmp_path: Path):
    claude = cli_binary("claude")
    worker_model = ReplayServer(FIX_SCRIPT, log_path=tmp_path / "worker-model.jsonl")
    worker_model.start()
    opencode_worker_profile(worker_model.base_url("opencode"), cli_binary("opencode"), KEY_ENV)
    task = PARENT_TASK
    script = {
        "turns": [
            {"call": "mcp__bosun__delegate", "args": {"task": task, "profile": "oc"}},
            {"call": "mcp__bosun__wait", "args": {"run_id": RUN, "timeout_s": 1}},
            *[{"call": "mcp__bosun__wait", "args": {"run_id": RUN, "timeout_s": 50}}] * WAITS,
            {"call": "mcp__bosun__approve", "args": {"run_id": RUN}},
            {"call": "mcp__bosun__integrate", "args": {"run_id": RUN}},
            {"say": "bosun verified the fix; approved and integrated."},
        ],
        "consume_toolless": False,
    }
    config_dir = tmp_path / "claude-config"
    server_env = parent_server_env("claude-code", KEY_ENV, CLAUDE_CONFIG_DIR=str(config_dir))
    mcp_config = tmp_path / "mcp.json"
    mcp_config.write_text(json.dumps({"mcpServers": {"bosun": {
        "command": sys.executable, "args": ["-m", "bosun", "mcp"], "env": server_env}}}))
    before_head = git(repo, "rev-parse", "HEAD").strip()

    with ReplayServer(script, root=repo, log_path=tmp_path / "parent-model.jsonl") as srv:
        env = dict(os.environ, **QUIET_ENV)
        env.update(HOME=str(tmp_path / "parent-home"), CLAUDE_CONFIG_DIR=str(config_dir),
                   ANTHROPIC_BASE_URL=srv.base_url("anthropic"), ANTHROPIC_API_KEY="dummy",
                   ANTHROPIC_MODEL="mock-model", ANTHROPIC_SMALL_FAST_MODEL="mock-model",
                   ENABLE_TOOL_SEARCH="false", MCP_TIMEOUT="60000", MCP_TOOL_TIMEOUT="60000")
        (tmp_path / "parent-home").mkdir()
        proc = subprocess.run(
            [claude, "-p", "--output-format", "stream-json", "--verbose", "--model", "mock-model",
             "--mcp-config", str(mcp_config), "--strict-mcp-config",
             "--allowedTools", ",".join(f"mcp__bosun__{t}" for t in TOOLS),
             "--", "add() is broken; get it fixed through bosun."],
            cwd=repo, env=env, capture_output=True, text=True, timeout=600,
        )
        results = srv.tool_results()
        errors = srv.errors
    worker_model.stop()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not errors, errors
    out = {cid: json.loads(text) for cid, text in results.items()}
    started, first = out["call_0_0"], out["call_1_0"]
    approved, landed = out[f"call_{WAITS + 2}_0"], out[f"call_{WAITS + 3}_0"]
    done = next(out[f"call_{i}_0"] for i in range(2, WAITS + 2) if out[f"call_{i}_0"]["done"])
    assert started["state"] == "prepared"
    assert first["done"] is False  # the worker takes longer than 1 s: "call wait again"
    assert done["done"] is True and done["state"] == "verified" and done["verification"]["passed"] is True, done
    assert done["profile"] == "oc" and done["final_message"] == FIX_SCRIPT[-1]["say"]
    assert worker_model.turns_used == len(FIX_SCRIPT) and not worker_model.errors
    assert approved["state"] == "approved" and landed["state"] == "cleaned", (approved, landed)

    # The fix landed through bosun's integrate, as bosun's own commit on the user's branch.
    assert "return a + b" in (repo / "src/calc.py").read_text()
    assert git(repo, "rev-parse", "HEAD~1").strip() == before_head
    assert f"Bosun-Run: {started['id']}" in git(repo, "log", "-1", "--format=%B")

    metrics = json.loads((Path(os.environ["BOSUN_HOME"]) / "runs" / started["id"] / "metrics.json").read_text())
    measured = metrics["parent_measured"]
    assert measured["agent"] == "claude-code"
    assert measured["measured"] is True, measured
    # The window (delegate to approve) read from the log as Claude Code left it: every turn in it,
    # the one that called approve too (written after that call returned), each counted once.
    turns = claude_turns(Path(measured["log"]), measured["from"], measured["to"])
    approving = [t for t, called in turns.items() if called == "mcp__bosun__approve"]
    assert len(approving) == 1, turns
    assert [t["id"] for t in measured["turns"]] == list(turns), (measured["turns"], turns)
    assert measured["tokens"]["total_tokens"] == sum(t["tokens"] for t in measured["turns"]) > 0


def claude_turns(log: Path, start: float, end: float) -> dict[str, str | None]:
    """Claude Code's assistant messages timestamped in [start, end], in order: id -> the tool it called."""
    from datetime import datetime

    out: dict[str, str | None] = {}
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        msg = entry.get("message") or {}
        if entry.get("type") != "assistant" or "usage" not in msg:
            continue
        at = datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).timestamp()
        if start <= at <= end:
            calls = [c.get("name") for c in msg.get("content") or [] if c.get("type") == "tool_use"]
            out[msg["id"]] = calls[0] if calls else out.get(msg["id"])
    return out
