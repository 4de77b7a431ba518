"""Independent verification: bosun runs the task's verify commands itself, in the worktree.

The worker's claims about tests are never used. Each command runs through ``bosun.proc`` with the
allowlisted environment, its own process group and a timeout; the result records argv, exit code,
duration and the tail of its output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bosun import proc
from bosun.contract import TaskContract

DEFAULT_VERIFY_TIMEOUT_S = 600.0
OUTPUT_TAIL_CHARS = 4000


def verify_env(home: Path) -> dict[str, str]:
    # Bytecode and pytest caches would otherwise show up as untracked files in the change.
    return proc.allowlisted_env(
        extra_keys=("VIRTUAL_ENV",),
        overrides={
            "HOME": str(home),
            "TMPDIR": str(home / "tmp"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_ADDOPTS": "-p no:cacheprovider",
            "CI": "true",
        },
    )


def run_verification(task: TaskContract, worktree: Path, home: Path, default_timeout: float | None = None) -> dict[str, Any]:
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env = verify_env(home)
    commands = []
    passed = True
    for cmd in task.verify:
        argv = cmd.argv()
        timeout = cmd.timeout_s or default_timeout or DEFAULT_VERIFY_TIMEOUT_S
        entry: dict[str, Any] = {"argv": argv, "shell": cmd.shell, "timeout_s": timeout}
        try:
            res = proc.run_supervised(argv, cwd=worktree, env=env, timeout_s=timeout, stdout_grace_s=1.0)
        except (FileNotFoundError, PermissionError) as exc:
            entry.update(exit_code=127, duration_s=0.0, timed_out=False, output_tail=f"cannot run {argv[0]}: {exc}")
            passed = False
            commands.append(entry)
            continue
        ok = res.ok
        entry.update(
            exit_code=res.exit_code,
            duration_s=round(res.duration_s, 3),
            timed_out=res.timed_out,
            output_tail=res.output_tail(OUTPUT_TAIL_CHARS),
        )
        if res.timed_out:
            entry["output_tail"] += f"\n[bosun: killed after {timeout:g}s timeout]"
        passed = passed and ok
        commands.append(entry)
    return {"passed": passed if task.verify else None, "commands": commands}
