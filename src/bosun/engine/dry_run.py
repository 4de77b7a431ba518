"""``bosun delegate --dry-run``: the command a run would start, built the way the run builds it.

The adapter writes its per-run configuration into a throwaway directory and returns its argv; nothing
is started, no run or worktree is created. Key values never appear: argv words and env values that
contain one are redacted, and the env is shown by name only (the values of key variables as
``<redacted>``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bosun.core.config import Profile
    from bosun.core.contract import TaskContract

REDACTED = "<redacted>"
RUN_DIR = "<run-dir>"


def worker_command(task: TaskContract, profile: Profile, worktree: Path) -> dict[str, Any]:
    """``{adapter, argv, env, stdin, note}`` for the first attempt of ``task`` on ``profile``."""
    from bosun import proc
    from bosun.core.contract import Mode
    from bosun.engine.attempts import mode_permissions
    from bosun.engine.prompt import render_prompt
    from bosun.workers.base import WorkerContext
    from bosun.workers.cli_worker import CliWorker
    from bosun.workers.registry import get_worker

    worker = get_worker(profile.adapter)
    prompt = render_prompt(task)
    out: dict[str, Any] = {"adapter": profile.adapter, "model": profile.model, "argv": None, "env": [],
                           "stdin": f"the task prompt ({len(prompt)} characters)", "note": None}
    with tempfile.TemporaryDirectory(prefix="bosun-dry-run-") as tmp_name:
        tmp = Path(tmp_name)
        home, wtmp = tmp / "home" / profile.name, tmp / "tmp"
        home.mkdir(parents=True)
        wtmp.mkdir()
        env = proc.allowlisted_env(extra_keys=profile.key_env_names(),
                                   overrides={"HOME": str(home), "TMPDIR": str(wtmp)})
        ctx = WorkerContext(
            run_id="dry-run", worktree=worktree, run_dir=tmp, home=home, tmp=wtmp, task=task,
            task_file=tmp / "task.json", profile=profile, prompt=prompt, env=env, emit=lambda ev: None,
            timeout_s=task.timeout_s or profile.timeout_s, read_only=task.mode != Mode.code,
            permissions=mode_permissions(task),
        )
        argv: list[str] | None = None
        if profile.adapter == "native":
            out["note"] = (f"bosun's own agent loop: POST {(profile.base_url or '').rstrip('/')}/chat/completions "
                           f"with model {profile.model!r}; no process is started")
        elif profile.adapter == "command":
            argv = list(profile.command) + list(profile.extra_args)
        elif isinstance(worker, CliWorker):
            binary = worker.binary(profile) or profile.binary or profile.adapter
            argv, env, _stdin = worker.prepare(ctx, binary)
        if argv is not None:
            out["argv"] = [_redact(_shorten(a, tmp), profile) for a in argv]
        out["env"] = sorted(_env_view(env, profile, tmp).items())
    out["env"] = dict(out["env"])
    return out


def _key_values(profile: Profile) -> list[str]:
    return [v for v in (os.environ.get(n) for n in profile.key_env_names()) if v and len(v) >= 4]


def _redact(text: str, profile: Profile) -> str:
    for value in _key_values(profile):
        text = text.replace(value, REDACTED)
    return text


def _shorten(text: str, tmp: Path) -> str:
    return text.replace(str(tmp), RUN_DIR)


def _env_view(env: dict[str, str], profile: Profile, tmp: Path) -> dict[str, str]:
    keys = set(profile.key_env_names())
    return {k: REDACTED if k in keys else _redact(_shorten(v, tmp), profile) for k, v in env.items()}
