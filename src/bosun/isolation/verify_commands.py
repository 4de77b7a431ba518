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
from bosun.gates.invocations import runner_of
from bosun.isolation.test_reports import clear_report, read_junit, read_unittest, report_path, unittest_files

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
                     confine: Any = None, should_stop: Any = None, addopts: str = "") -> dict[str, Any]:
    """Run every verify command in ``worktree``; ``confine`` (a ``bosun.sandbox.Confinement``) applies
    the kernel sandbox to them, as to the worker: they run the worker's code. ``addopts`` go to every
    pytest as well (a run of bosun's own that asks more of pytest than the task does), ``{tree}`` in
    them standing for ``worktree``."""
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
        # pytest reports every test's outcome, and the file it ran it from, to a file of bosun's: the
        # proof then names tests, and the test-integrity checks know which files are tests.
        auto_junit = home / "junit" / f"{len(commands)}.xml"
        auto_junit.parent.mkdir(parents=True, exist_ok=True)
        auto_junit.unlink(missing_ok=True)
        cmd_env["PYTEST_ADDOPTS"] = (cmd_env.get("PYTEST_ADDOPTS", "")
                                     + f" -o junit_family=xunit1 --junitxml={auto_junit} "
                                     + addopts.replace("{tree}", str(worktree))).strip()
        runner = runner_of(cmd)
        own_reports = reports_of(cmd, worktree)
        for path in own_reports:
            clear_report(path, worktree)
        if runner:
            entry["runner"] = runner
        show = SHOW_PROGRESS.get()
        guard = open_guard(home, worktree, len(commands))
        started: list[int] = []
        try:
            with show(" ".join(argv)) if show is not None else nullcontext():
                res = proc.run_supervised(argv, cwd=cwd, env=guard.env(cmd_env), timeout_s=timeout, stdout_grace_s=1.0,
                                          confine=guard.confined(confine), should_stop=should_stop,
                                          on_start=started.append)
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
        entry["guard"] = guard.close(started[0] if started else None, res.exit_code, junit)
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
        tests = read_report(runner, [*own_reports, auto_junit], res, worktree, cwd,
                            discovered_files(cmd, worktree) if runner == "unittest" else None)
        if tests is not None:
            entry["tests"] = tests
            disagreement = disagrees(res.exit_code, tests)
            if disagreement:
                entry["report_disagrees"] = disagreement
                ok = False
        passed = passed and ok
        commands.append(entry)
    return {"passed": passed if task.verify else None, "commands": commands}


def reports_of(cmd: VerifyCommand, worktree: Path) -> list[Path]:
    """The report files a verify entry writes itself, inside the tree: its ``junit`` file, and the
    ``--junitxml`` of a pytest it runs (which overrides bosun's own)."""
    from bosun.gates.invocations import entry_invocations, python_module

    found: list[Path] = []
    if cmd.junit:
        found.append(worktree / (cmd.cwd or "") / cmd.junit)
    for inv in entry_invocations(cmd):
        if inv.program in ("pytest", "py.test") or python_module(inv) == "pytest":
            named = report_path(list(inv.argv))
            if named and not Path(named).is_absolute():
                found.append(worktree / inv.cwd / named)
    return [p for p in found if _within(p, worktree)]


def discovered_files(cmd: VerifyCommand, worktree: Path) -> list[str]:
    """The files the ``python -m unittest`` of a verify entry runs tests from."""
    from bosun.gates.invocations import entry_invocations, python_module

    out: list[str] = []
    for inv in entry_invocations(cmd):
        if python_module(inv) == "unittest":
            args = list(inv.argv[inv.argv.index("unittest") + 1:]) if "unittest" in inv.argv else []
            out += unittest_files(args, worktree, worktree / inv.cwd)
    return out


def _within(path: Path, root: Path) -> bool:
    import os.path

    return os.path.normpath(path).startswith(os.path.normpath(root) + os.sep)


def read_report(runner: str | None, junit_files: list[Path], res: Any, worktree: Path,
                cwd: Path, files: list[str] | None = None) -> dict[str, Any] | None:
    """The per-test report of one command: the first JUnit file it wrote, else unittest's summary
    (with ``files``, those its discovery runs)."""
    for path in junit_files:
        found = read_junit(path, worktree, cwd)
        if found is not None:
            return found
    if runner == "unittest":
        return read_unittest(res.stderr.text() + "\n" + res.stdout.text(), worktree, cwd, files)
    return None


def disagrees(exit_code: int | None, tests: dict[str, Any]) -> str | None:
    """A sentence when the exit code and the runner's report contradict each other: exit 0 with
    failures reported is a failure, whatever the exit code says."""
    failed = tests["counts"]["failed"] + len(tests["collect_errors"])
    if exit_code == 0 and failed:
        return f"exited 0, but its report lists {failed} failing test(s)"
    if exit_code not in (0, None) and tests["count"] and not failed:
        return f"its report lists every test as passed or skipped, but it exited {exit_code}"
    return None


def verify_commit(
    repo: Path, commit: str, commands: list[VerifyCommand], workdir: Path, title: str,
    confine_to: Any = None, should_stop: Any = None, prepare: Callable[[Path], None] | None = None,
    addopts: str = "",
) -> dict[str, Any]:
    """Run ``commands`` on ``commit`` in a temporary detached worktree under ``workdir``, then remove it.

    ``confine_to(worktree, home)`` returns the kernel sandbox for the commands (or None);
    ``prepare(worktree)`` changes the checkout before they run (the own-tests run lays the change's
    test files over it)."""
    import shutil

    from bosun.isolation.git import git
    from bosun.isolation.worktree import remove_worktree

    wt = verify_worktree(workdir)
    remove_worktree(repo, wt, None, delete_branch=False)  # left by a crash
    shutil.rmtree(wt, ignore_errors=True)
    wt.parent.mkdir(parents=True, exist_ok=True)
    git(["worktree", "add", "--quiet", "--detach", str(wt), commit], repo)
    pointer = (wt / ".git").read_bytes()
    try:
        return verify_checkout(wt, commit, commands, workdir, title, confine_to, should_stop, prepare, addopts)
    finally:
        _put_back(wt / ".git", pointer)  # the commands ran code that could write it: git removes what it made
        remove_worktree(repo, wt, None, delete_branch=False)
        shutil.rmtree(wt, ignore_errors=True)


def _put_back(gitfile: Path, pointer: bytes) -> None:
    """The checkout's ``.git`` file as ``git worktree add`` wrote it, whatever replaced it since."""
    import shutil

    try:
        if not gitfile.is_symlink() and gitfile.is_file() and gitfile.read_bytes() == pointer:
            return
        if gitfile.is_dir() and not gitfile.is_symlink():
            shutil.rmtree(gitfile)
        else:
            gitfile.unlink(missing_ok=True)
        gitfile.write_bytes(pointer)
    except OSError:
        pass  # the removal below then fails and says so


def verify_worktree(workdir: Path) -> Path:
    """Where :func:`verify_commit` checks a commit out under ``workdir``. Named for ``workdir``: git names
    a worktree's admin directory after its last path component, and two runs' baselines added at once
    under one name raced for ``.git/worktrees/verify-worktree`` (one of them lost its checkout)."""
    import hashlib

    return workdir / f"verify-{hashlib.sha256(str(workdir).encode()).hexdigest()[:12]}"


def verify_checkout(
    wt: Path, commit: str, commands: list[VerifyCommand], workdir: Path, title: str,
    confine_to: Any = None, should_stop: Any = None, prepare: Callable[[Path], None] | None = None,
    addopts: str = "",
) -> dict[str, Any]:
    """Run ``commands`` in ``wt``, a checkout of ``commit`` the caller made and removes or resets."""
    import shutil

    home = workdir / "verify-home"
    if prepare is not None:
        prepare(wt)
    try:
        task = TaskContract(title=title[:200] or "plan", prompt="plan verification", verify=commands)
        result = run_verification(task, wt, home, confine=confine_to(wt, home) if confine_to else None,
                                  should_stop=should_stop, addopts=addopts)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    result["commit"] = commit
    return result


def verify_confinement(repo: Path, workdir: Path, home: Path, reads: tuple[Path, ...] = ()) -> Any:
    """The kernel sandbox for verify commands (they run the worker's code): ``isolation/confinement.py``."""
    from bosun.isolation.confinement import verify_confinement as confinement

    return confinement(repo, workdir, home, reads)
