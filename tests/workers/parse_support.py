"""Helpers for the parser tests of the Codex, Claude Code, Qwen Code, Gemini CLI and Kilo adapters.

The streams in tests/fixtures/streams/<cli>-<version>-<case>.jsonl were recorded from the real CLIs
with tests/fixtures/streams/record.py (the adapter's own argv, env and config files, against bosun's
ReplayServer). Cases: ``fix`` (read, edit, answer; usage with cached tokens), ``denied`` (git commit,
``echo && git push``, curl, a missing file, answer), ``auth`` (401), ``rate_limited`` (429 with
Retry-After 0.1), ``model_unavailable`` (404 model_not_found).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bosun import proc
from bosun.core.config import Profile
from bosun.core.contract import TaskContract
from bosun.engine.attempts import mode_permissions
from bosun.workers.base import Usage, WorkerContext, WorkerResult
from bosun.workers.cli_base import finish_result

STREAMS = Path(__file__).resolve().parent.parent / "fixtures" / "streams"
# The `fix` script's usage overrides: three model turns of 1000/20 (400 cached), 1200/30 (1000 cached)
# and 1300/10 (1200 cached).
FIX_USAGE = Usage(input_tokens=3500, cached_input_tokens=2600, output_tokens=60)


def stream(cli: str, version: str, case: str) -> Path:
    return STREAMS / f"{cli}-{version}-{case}.jsonl"


def feed(parser: Any, path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        events.extend(parser.feed(line))
    return events


def usage_sum(events: list[dict[str, Any]]) -> Usage:
    total = Usage()
    for ev in events:
        if ev["type"] == "usage":
            total.add(Usage.from_event(ev))
    return total


def same_tokens(a: Usage, b: Usage) -> bool:
    keys = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")
    return all(getattr(a, k) == getattr(b, k) for k in keys)


def make_ctx(
    tmp_path: Path,
    adapter: str,
    mode: str = "code",
    resume: str | None = None,
    emit: Any = None,
    env: dict[str, str] | None = None,
    **prof: Any,
) -> WorkerContext:
    fields: dict[str, Any] = {
        "name": adapter, "adapter": adapter, "model": "mock-model", "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "BOSUN_TEST_KEY",
    }
    fields.update(prof)
    profile = Profile(**fields)
    task = TaskContract(title="t", prompt="p", mode=mode, verify=["python -m pytest -q tests"])
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    base_env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(tmp_path), "BOSUN_TEST_KEY": "sk-test"}
    base_env.update(env or {})
    return WorkerContext(
        run_id="r1", worktree=tmp_path, run_dir=tmp_path, home=home, tmp=tmp_path, task=task,
        task_file=tmp_path / "task.json", profile=profile, prompt="do it", env=base_env,
        emit=emit or (lambda ev: None), timeout_s=60, resume_session=resume, read_only=mode != "code",
        permissions=mode_permissions(task),
    )


def result_of(parser: Any, exit_code: int, tmp_path: Path, adapter: str, stderr: str = "") -> WorkerResult:
    """What run_cli would make of the parsed stream and the process's exit code."""
    res = proc.SupervisedResult([adapter], exit_code, 1.0)
    if stderr:
        res.stderr.write(stderr.encode())
    return finish_result(make_ctx(tmp_path, adapter), parser.state, res)
