"""Driving `bosun mcp` through the MCP SDK's own client, over stdio, as a host would."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import ROOT

SLEEPY_WORKER = '''
import json, sys, time
from pathlib import Path
sys.stdin.read()
time.sleep(float(sys.argv[1]))
p = Path("src/calc.py")
p.write_text(p.read_text().replace("return a - b  # bug", "return a + b"))
print(json.dumps({"type": "usage", "input_tokens": 900, "output_tokens": 40, "cached_input_tokens": 0}))
print("Fixed add().")
'''


def add_sleepy_profile(tmp_path: Path, seconds: float = 3.0) -> None:
    """A `command` worker that takes a few seconds, in the user config (the repo stays clean)."""
    script = tmp_path / "sleepy_worker.py"
    script.write_text(SLEEPY_WORKER)
    cfg = Path(os.environ["BOSUN_CONFIG"])
    cfg.write_text(
        "[profiles.sleepy]\nadapter = \"command\"\n"
        f"command = [{json.dumps(sys.executable)}, {json.dumps(str(script))}, \"{seconds}\"]\n"
    )


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")
    env.update(extra or {})
    return env


def with_session(repo: Path, body: Callable[[ClientSession], Awaitable[Any]], env: dict[str, str] | None = None) -> Any:
    async def main() -> Any:
        params = StdioServerParameters(command=sys.executable, args=["-m", "bosun", "mcp"], env=server_env(env),
                                       cwd=str(repo))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return anyio.run(main)


async def call(session: ClientSession, tool: str, args: dict[str, Any], **kw: Any) -> tuple[bool, dict[str, Any]]:
    """(is_error, the JSON object the tool returned)."""
    res = await session.call_tool(tool, args, **kw)
    text = "".join(c.text for c in res.content if getattr(c, "type", "") == "text")
    return bool(res.is_error), json.loads(text)


async def wait_done(session: ClientSession, run_id: str, rounds: int = 6) -> dict[str, Any]:
    for _ in range(rounds):
        err, out = await call(session, "wait", {"run_id": run_id, "timeout_s": 30})
        assert not err, out
        if out["done"]:
            return out
    raise AssertionError(f"run {run_id} not done after {rounds} waits: {out}")


# -- real parents (Claude Code, Codex) --------------------------------------------------------------
PARENT_TASK = {"title": "Fix add()", "prompt": "add() in src/calc.py subtracts; make it add. Do not touch the tests.",
               "verify": [f"{sys.executable} -m pytest -q tests"], "locked": ["tests/**"], "timeout_s": 240}
SERVER_ENV_KEYS = ("BOSUN_HOME", "BOSUN_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
                   "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_CONFIG_NOSYSTEM", "PATH")


def opencode_worker_profile(worker_base_url: str, opencode: str, key_env: str) -> None:
    """The user config a parent's delegations run with: profile ``oc``, a real OpenCode."""
    Path(os.environ["BOSUN_CONFIG"]).write_text(
        f'[profiles.oc]\nadapter = "opencode"\nmodel = "mock-model"\nbase_url = "{worker_base_url}"\n'
        f'api_key_env = "{key_env}"\nbinary = "{opencode}"\ntimeout_s = 240\n')


def parent_server_env(parent_agent: str, key_env: str, **extra: str) -> dict[str, str]:
    """The environment the host starts `bosun mcp` with: the test's isolated bosun and git."""
    env = {k: os.environ[k] for k in SERVER_ENV_KEYS}
    env.update(PYTHONPATH=str(ROOT / "src"), PARENT_AGENT=parent_agent, **extra)
    env[key_env] = "dummy"
    return env
