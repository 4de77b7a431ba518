"""Helpers for the end-to-end tests of the Codex, Claude Code, Qwen Code, Gemini CLI and Kilo adapters.

Each test appends a profile for the real CLI to the sample repo's bosun.toml, points it at bosun's
ReplayServer and runs ``bosun delegate`` in-process.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

from tests.e2e.cli_support import cli_binary

KEY_ENV = "BOSUN_TEST_KEY"
# Every real CLI runs under the kernel sandbox, and the run fails if it cannot be enforced. On a
# development machine without Landlock, BOSUN_TEST_SANDBOX=auto runs them unconfined instead.
SANDBOX = os.environ.get("BOSUN_TEST_SANDBOX", "required")
# Base URL flavour and model per adapter. Codex advertises apply_patch only for known model slugs.
API = {"codex": "codex", "claude": "anthropic", "qwen": "openai", "gemini": "gemini", "kilo": "openai"}
MODEL = {"codex": "gpt-5.5"}

# The sample repo (tests/conftest.py) has the bug in src/calc.py. The worker also tries to commit: the
# CLI's own deny rules must refuse it (bosun's git guard would too, but then the CLI reports no denial).
FIX_SCRIPT = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
    {"run": "git commit -am wip"},
    {"say": "Fixed add() in src/calc.py: it subtracted instead of adding."},
]
RESUME_SCRIPT = [
    {"read": "src/calc.py", "usage": {"input": 1000, "output": 10, "cached": 100}},
    {"say": "add() subtracts; should I change it?", "usage": {"input": 2000, "output": 20, "cached": 200}},
    # Qwen Code edits only files read in the same process, so the resumed run reads again.
    {"read": "src/calc.py", "usage": {"input": 3000, "output": 30, "cached": 300}},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b",
     "usage": {"input": 4000, "output": 40, "cached": 400}},
    {"say": "Done.", "usage": {"input": 5000, "output": 50, "cached": 500}},
]
READ_ONLY_SCRIPT = [
    {"read": "src/calc.py"},
    {"say": "add() subtracts instead of adding."},
]
# For CLIs that keep their edit tool in read-only modes and refuse the call instead.
READ_ONLY_EDIT_SCRIPT = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
    {"say": "add() subtracts instead of adding."},
]
FAULTS = {
    # A fault repeated more often than any CLI retries, so the failure reaches the CLI's output.
    "auth": [{"fault": 401, "repeat": 20}, {"say": "unreachable"}],
    "rate_limited": [{"fault": 429, "retry_after": 0.1, "repeat": 20}, {"say": "unreachable"}],
    "model_unavailable": [{"fault": "model_not_found", "repeat": 20}, {"say": "unreachable"}],
}
FAULT_STATE = {"auth": "blocked", "rate_limited": "failed", "model_unavailable": "failed"}


@cache
def binary(name: str) -> str:
    """The installed CLI (a shim running it under Node 22), or a skip/fail when it is missing."""
    return cli_binary(name)


def add_profile(
    repo: Path, adapter: str, base_url: str, name: str | None = None, model: str | None = None, **extra: object
) -> str:
    name = name or adapter
    lines = [
        f"\n[profiles.{name}]",
        f'adapter = "{adapter}"',
        f'model = "{model or MODEL.get(adapter, "mock-model")}"',
        f'base_url = "{base_url}"',
        f'api_key_env = "{KEY_ENV}"',
        f'binary = "{binary(adapter)}"',
        "timeout_s = 120",
    ]
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    config = repo / "bosun.toml"
    text = config.read_text() if config.exists() else ""
    if not text.startswith("sandbox ="):
        text = f"sandbox = {json.dumps(SANDBOX)}\n" + text  # a top-level key: before every table
    config.write_text(text + "\n".join(lines) + "\n")
    return name


def events(res: dict) -> list[dict]:
    path = Path(res["run_dir"]) / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def processes_of(run_dir: str) -> list[str]:
    """Live processes whose environment mentions the run directory (the worker's HOME is inside it)."""
    marker = run_dir.encode()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in env:
            found.append(f"{pid}: {cmd[:200]}")
    return found


def check_fix(cli, repo: Path, task_file: Path, adapter: str) -> dict:
    """Delegate the sample bug to ``adapter`` through the replay server; assert it landed; return the result."""
    from bosun.replay import ReplayServer

    with ReplayServer(FIX_SCRIPT) as srv:
        profile = add_profile(repo, adapter, srv.base_url(API[adapter]))
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", profile, "--auto-approve", "--json")
        turns, errors = srv.turns_used, list(srv.errors)
    assert code == 0, res
    assert not errors, errors
    assert res["state"] == "cleaned", res
    assert turns == 4
    assert "return a + b" in (repo / "src" / "calc.py").read_text()
    assert res["usage"]["input_tokens"] > 0 and res["usage"]["output_tokens"] > 0, res["usage"]
    assert res["final_message"] == FIX_SCRIPT[-1]["say"], res
    if SANDBOX == "required":
        assert res["sandbox"]["mechanism"] in ("namespaces", "landlock"), res["sandbox"]
    evs = events(res)
    results = [e for e in evs if e["type"] == "tool_result"]
    denied = [e for e in results if e["denied"]]
    assert len(denied) == 1 and "git commit" in json.dumps(denied[0]["output"]) + json.dumps(evs), results
    assert all(e["ok"] for e in results if not e["denied"]), results
    assert any(e["type"] == "session" and e["session_id"] for e in evs)
    assert not processes_of(res["run_dir"])
    return res


def check_read_only(
    cli, repo: Path, tmp_path: Path, adapter: str, script: list | None = None
) -> tuple[dict, list[str]]:
    """An explore task: the CLI may read, never edit. Returns the result and the tools advertised last."""
    from bosun.replay import ReplayServer
    from tests.conftest import task_yaml

    task = task_yaml(tmp_path / "explore.json", mode="explore", verify=[], locked=[], prompt="How does add() work?")
    script = script or READ_ONLY_SCRIPT
    with ReplayServer(script) as srv:
        profile = add_profile(repo, adapter, srv.base_url(API[adapter]))
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", profile, "--json")
        tools = list(srv.requests[-1].get("tools") or [])
        errors = list(srv.errors)
    assert not errors, errors
    assert res["final_message"] == script[-1]["say"], res
    results = [e for e in events(res) if e["type"] == "tool_result"]
    failed = [e for e in results if not e["ok"]]
    if script is READ_ONLY_EDIT_SCRIPT:
        assert len(failed) == 1, results
        # The CLI's own refusal is marked denied; under bosun's kernel sandbox the write may instead
        # fail (EACCES, EROFS) before the CLI's own rules are consulted.
        assert failed[0]["denied"] or res["sandbox"]["mechanism"] in ("namespaces", "landlock"), results
    else:
        assert all(e["denied"] for e in failed), results
    assert "return a - b" in (repo / "src" / "calc.py").read_text()
    worktree = Path(res["worktree"]) / "src" / "calc.py"
    assert not worktree.exists() or "return a - b" in worktree.read_text()
    return res, tools


def check_resume(cli, repo: Path, task_file: Path, adapter: str) -> None:
    """`bosun work --resume` continues the CLI's own session: the model sees the earlier turns."""
    from bosun.replay import ReplayServer
    from bosun.store.db import open_store

    with ReplayServer(RESUME_SCRIPT) as srv:
        profile = add_profile(repo, adapter, srv.base_url(API[adapter]))
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", profile, "--json")
        assert res["state"] == "rejected", res  # nothing changed yet
        first = open_store().get_run(res["id"]).session_id
        assert first
        first_requests = len(srv.requests)
        code, res = cli("work", res["id"], "--resume", "Yes, fix it.", "--json")
        assert res["state"] == "worked", res
        code, res = cli("verify", res["id"], "--json")
        assert code == 0 and res["state"] == "verified", res
        last = json.dumps(srv.requests[-1]["body"])
        errors = list(srv.errors)
        served = [r for r in srv.requests if r.get("source") == "turn"]
        second = [r for r in srv.requests[first_requests:] if r.get("source") == "turn"]
    assert not errors, errors
    assert open_store().get_run(res["id"]).session_id == first
    assert "Yes, fix it." in last and "should I change it" in last
    assert len(served) == 5
    # Each run's usage events add up to what the model served in that run (no double counting of the
    # first run when the CLI resumes a session).
    evs = events(res)
    starts = [i for i, e in enumerate(evs) if e["type"] == "message" and e.get("text", "").startswith("attempt 1")]
    assert len(starts) == 2, starts
    for chunk, reqs in ((evs[starts[0]:starts[1]], served[:2]), (evs[starts[1]:], second)):
        got = [sum(e[k] for e in chunk if e["type"] == "usage") for k in ("input_tokens", "output_tokens")]
        want = [sum(r["usage"][k] for r in reqs) for k in ("input", "output")]
        assert got == want, (got, want)


def check_fault(cli, repo: Path, task_file: Path, adapter: str, fault: str) -> dict:
    from bosun.replay import ReplayServer

    with ReplayServer(FAULTS[fault]) as srv:
        profile = add_profile(repo, adapter, srv.base_url(API[adapter]), name=f"{adapter}_{fault}")
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", profile, "--auto-approve", "--json")
    assert code != 0, res
    assert res["state"] == FAULT_STATE[fault], res
    assert res["error"]["code"] == fault.upper(), res["error"]
    errs = [e for e in events(res) if e["type"] == "error"]  # retries (retryable) included
    assert errs and all(e["error_class"] == fault for e in errs), errs
    assert "return a - b" in (repo / "src" / "calc.py").read_text()
    assert not processes_of(res["run_dir"])
    return res
