"""``bosun delegate --dry-run``: the command a run would start, built by the functions the run builds it with.

The profile gets its effort the way an attempt gives it (``attempts.with_effort``), the environment
the way an attempt makes it (``attempts.worker_env``, with the git guard), and the command from
``cli_worker.command_line``, the one function a worker's run takes its argv, env and stdin from. The
adapter writes its per-run configuration into a throwaway directory; nothing is started, no run or
worktree is created. Key values never appear: argv words and env values that contain one are
redacted, and the env is shown by name only (the values of key variables as ``<redacted>``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bosun.core.config import Profile, Settings
    from bosun.core.contract import TaskContract

REDACTED = "<redacted>"
RUN_DIR = "<run-dir>"
RUN_ID = "<run-id>"  # a run's id is made when it is created: the dry run has none
PORT = "<port>"  # a CLI that serves itself on loopback gets a free port when its run starts


def worker_command(task: TaskContract, profile: Profile, worktree: Path, settings: Settings) -> dict[str, Any]:
    """``{adapter, model, effort, argv, env, stdin, note}`` for the first attempt of ``task`` on ``profile``."""
    from bosun.core.contract import Mode
    from bosun.engine.attempts import loopback_port, mode_permissions, with_effort, worker_env
    from bosun.engine.prompt import render_prompt
    from bosun.isolation.guard import install_guard
    from bosun.workers.base import WorkerContext
    from bosun.workers.cli_worker import command_line
    from bosun.workers.registry import get_worker

    worker = get_worker(profile.adapter)
    prompt = render_prompt(task)
    warnings: list[str] = []
    profile = with_effort(profile, lambda ev: warnings.append(ev["message"]))
    out: dict[str, Any] = {"adapter": profile.adapter, "model": profile.model, "effort": profile.effort,
                           "argv": None, "env": [], "stdin": f"the task prompt ({len(prompt)} characters)",
                           "note": "; ".join(warnings) or None}
    with tempfile.TemporaryDirectory(prefix="bosun-dry-run-") as tmp_name:
        tmp = Path(tmp_name)
        home, wtmp = tmp / "home" / profile.name, tmp / "tmp"
        home.mkdir(parents=True)
        wtmp.mkdir()
        env = worker_env(profile, home, wtmp, install_guard(tmp / "guard"))
        ctx = WorkerContext(
            run_id=RUN_ID, worktree=worktree, run_dir=tmp, home=home, tmp=wtmp, task=task,
            task_file=tmp / "task.json", profile=profile, prompt=prompt, env=env, emit=lambda ev: None,
            timeout_s=task.timeout_s or profile.timeout_s, read_only=task.mode != Mode.code,
            permissions=mode_permissions(task),
            own_port=loopback_port(worker, profile, _limited(settings, task)),
        )
        if profile.adapter == "native":
            warnings.insert(0, f"bosun's own agent loop: POST {(profile.base_url or '').rstrip('/')}/chat/completions "
                               f"with model {profile.model!r}; no process is started")
            out["note"] = "; ".join(warnings)
        started = command_line(worker, ctx, binary=profile.binary or profile.adapter)
        if started is not None:
            argv, env, _stdin = started
            out["argv"] = [PORT if ctx.own_port and a == str(ctx.own_port) else _redact(_shorten(a, tmp), profile)
                           for a in argv]
        out["env"] = sorted(_env_view(env, profile, tmp).items())
    out["env"] = dict(out["env"])
    return out


def _limited(settings: Settings, task: TaskContract) -> bool:
    """Whether the run's connects would be limited to its provider (attempts: ``limited``)."""
    from bosun.isolation.confinement import plan
    from bosun.sandbox import SandboxFailed

    try:
        confined = plan(settings, private_reads=bool(task.holdout)).confined
    except SandboxFailed:
        return False  # `required` refuses the run itself: the check's problems say so
    return confined and settings.network == "provider-only"


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
