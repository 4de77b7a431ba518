"""Independent verification: bosun runs the task's verify commands itself.

The worker's claims about tests are never used. The caller hands over a directory that holds exactly
the bytes to verify (see :mod:`bosun.isolation.verification`) and a HOME made for this verification alone.
Each command runs through ``bosun.proc`` with the allowlisted environment (plus the entry's own
``env``), in the entry's ``cwd``, its own process group and a timeout; the result records argv,
exit code, duration and the tail of its output.

The environment keeps Python from reading anything outside the tree that a worker could have
prepared: no user site-packages (``PYTHONNOUSERSITE``), no bytecode written or trusted from a cache
directory the tree does not hold (``PYTHONDONTWRITEBYTECODE``), no pytest cache, and no relative
``PATH`` entry (one would find programs in the tree). Every command runs under the runner guard
(:mod:`bosun.isolation.runner_guard`): its Python processes report to bosun what the code under test
did to the test runner, and the command's entry carries that report as ``runner``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from bosun import proc
from bosun.core.contract import TaskContract, VerifyCommand

DEFAULT_VERIFY_TIMEOUT_S = 600.0
OUTPUT_TAIL_CHARS = 4000

# What shows a verify command as it runs: ``show(label)`` is entered for the command's duration (the
# CLI's terminal ticker, cli/ticker.py). A context variable rather than a parameter: verification is
# reached from delegate, verify and integrate through several engine layers, and a thread (the
# baseline's, a plan's parallel tasks) starts without it, so no two tickers share one terminal line.
SHOW_PROGRESS: ContextVar[Callable[[str], AbstractContextManager[None]] | None] = ContextVar(
    "bosun_verify_progress", default=None)


# Set by bosun for every verify command; an entry's own ``env`` may add variables but not change these.
PINNED = ("HOME", "TMPDIR", "PYTHONNOUSERSITE", "PYTHONDONTWRITEBYTECODE", "BOSUN_RUNNER_GUARD")


def verify_env(home: Path) -> dict[str, str]:
    return proc.allowlisted_env(
        extra_keys=("VIRTUAL_ENV",),
        overrides={
            "HOME": str(home),
            "TMPDIR": str(home / "tmp"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTEST_ADDOPTS": "-p no:cacheprovider",
            "CI": "true",
        },
    )


def run_verification(task: TaskContract, worktree: Path, home: Path, default_timeout: float | None = None,
                     confine: Any = None, should_stop: Any = None) -> dict[str, Any]:
    """Run every verify command in ``worktree``; ``confine`` (a ``bosun.sandbox.Confinement``) applies
    the kernel sandbox to them, as to the worker: they run the worker's code."""
    from bosun.isolation.runner_guard import open_guard

    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env = verify_env(home)
    commands = []
    passed = True
    for cmd in task.verify:
        argv = cmd.argv()
        timeout = cmd.timeout_s or default_timeout or DEFAULT_VERIFY_TIMEOUT_S
        entry: dict[str, Any] = {"argv": argv, "shell": cmd.shell, "timeout_s": timeout}
        cwd = worktree / cmd.cwd if cmd.cwd else worktree
        if cmd.env:
            entry["env"] = dict(cmd.env)
        if cmd.cwd:
            entry["cwd"] = cmd.cwd
        if not cwd.is_dir():
            entry.update(exit_code=127, duration_s=0.0, timed_out=False,
                         output_tail=f"cannot run {argv[0]}: the directory {cmd.cwd} is not in the tree")
            passed = False
            commands.append(entry)
            continue
        cmd_env = proc.without_relative_path({**env, **{k: v for k, v in cmd.env.items() if k not in PINNED}})
        # pytest reports every test's outcome to a file of bosun's: the proof can then name tests.
        auto_junit = home / "junit" / f"{len(commands)}.xml"
        auto_junit.parent.mkdir(parents=True, exist_ok=True)
        auto_junit.unlink(missing_ok=True)
        cmd_env["PYTEST_ADDOPTS"] = (cmd_env.get("PYTEST_ADDOPTS", "") + f" --junitxml={auto_junit}").strip()
        show = SHOW_PROGRESS.get()
        guard = open_guard(home, worktree, len(commands))
        started: list[int] = []
        try:
            with show(" ".join(argv)) if show is not None else nullcontext():
                res = proc.run_supervised(argv, cwd=cwd, env=guard.env(cmd_env), timeout_s=timeout, stdout_grace_s=1.0,
                                          confine=confine, should_stop=should_stop, on_start=started.append)
        except (FileNotFoundError, PermissionError) as exc:
            guard.close(None, None, None)
            entry.update(exit_code=127, duration_s=0.0, timed_out=False, output_tail=f"cannot run {argv[0]}: {exc}")
            passed = False
            commands.append(entry)
            continue
        except BaseException:
            guard.close(None, None, None)
            raise
        junit = cwd / cmd.junit if cmd.junit else auto_junit
        entry["runner"] = guard.close(started[0] if started else None, res.exit_code, junit)
        ok = res.ok
        entry.update(
            exit_code=res.exit_code,
            duration_s=round(res.duration_s, 3),
            process_s=round(res.process_s, 4),  # the command alone, without bosun's set-up and clean-up
            timed_out=res.timed_out,
            output_tail=res.output_tail(OUTPUT_TAIL_CHARS),
        )
        if res.timed_out:
            entry["output_tail"] += f"\n[bosun: killed after {timeout:g}s timeout]"
        if res.cancelled:
            entry["cancelled"] = True
            passed = False
            commands.append(entry)
            break
        tests = read_junit(junit)
        if tests is not None:
            entry["tests"] = tests
        passed = passed and ok
        commands.append(entry)
    return {"passed": passed if task.verify else None, "commands": commands}


MAX_TEST_IDS = 5000


def read_junit(path: Path) -> dict[str, list[str]] | None:
    """``{passed, failed, skipped}`` test ids from a JUnit XML file; None when there is none."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    out: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    for case in root.iter("testcase"):
        name = f"{case.get('classname') or ''}::{case.get('name') or ''}".lstrip(":")
        kinds = {child.tag for child in case}
        key = "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
        if len(out[key]) < MAX_TEST_IDS:
            out[key].append(name)
    return out


def verify_commit(
    repo: Path, commit: str, commands: list[VerifyCommand], workdir: Path, title: str,
    confine_to: Any = None, should_stop: Any = None,
) -> dict[str, Any]:
    """Run ``commands`` on ``commit`` in a temporary detached worktree under ``workdir``, then remove it.

    ``confine_to(worktree, home)`` returns the kernel sandbox for the commands (or None)."""
    import shutil

    from bosun.isolation.git import git
    from bosun.isolation.worktree import remove_worktree

    wt = verify_worktree(workdir)
    remove_worktree(repo, wt, None, delete_branch=False)  # left by a crash
    shutil.rmtree(wt, ignore_errors=True)
    wt.parent.mkdir(parents=True, exist_ok=True)
    git(["worktree", "add", "--quiet", "--detach", str(wt), commit], repo)
    try:
        return verify_checkout(wt, commit, commands, workdir, title, confine_to, should_stop)
    finally:
        remove_worktree(repo, wt, None, delete_branch=False)
        shutil.rmtree(wt, ignore_errors=True)


def verify_worktree(workdir: Path) -> Path:
    """Where :func:`verify_commit` checks a commit out under ``workdir``. Named for ``workdir``: git names
    a worktree's admin directory after its last path component, and two runs' baselines added at once
    under one name raced for ``.git/worktrees/verify-worktree`` (one of them lost its checkout)."""
    import hashlib

    return workdir / f"verify-{hashlib.sha256(str(workdir).encode()).hexdigest()[:12]}"


def verify_checkout(
    wt: Path, commit: str, commands: list[VerifyCommand], workdir: Path, title: str,
    confine_to: Any = None, should_stop: Any = None,
) -> dict[str, Any]:
    """Run ``commands`` in ``wt``, a checkout of ``commit`` the caller made and removes or resets."""
    import shutil

    home = workdir / "verify-home"
    try:
        task = TaskContract(title=title[:200] or "plan", prompt="plan verification", verify=commands)
        result = run_verification(task, wt, home, confine=confine_to(wt, home) if confine_to else None,
                                  should_stop=should_stop)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    result["commit"] = commit
    return result


def verify_confinement(repo: Path, workdir: Path, home: Path) -> Any:
    """The kernel sandbox for verify commands (they run the worker's code): writes only in the tree
    being verified and the verification's own HOME. None when the sandbox is off or unavailable
    (``required`` already refused the run before its worker started)."""
    from bosun.core.config import load_settings
    from bosun.sandbox import Confinement, probe

    if load_settings(repo).sandbox == "off" or probe().mechanism == "none":
        return None
    return Confinement(writable=(workdir, home))
