"""Pre-flight checks: what can be known to fail before a run, a branch or a token is spent.

``check_task`` runs every check and returns every problem, each with a hint that fits its cause:
the repository and the base ref exist, a profile is routed to, its key variable is set, its worker
CLI is installed (and recent enough), and each verify command's program can be found. ``prepare``
raises ``PreflightFailed`` (exit 2) before it creates anything; ``bosun check``, ``delegate
--dry-run`` and ``plan check`` report the same problems without running anything.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.errors import BosunError, Problem, ProblemsFound

if TYPE_CHECKING:
    from bosun.core.config import Profile, Settings
    from bosun.core.contract import TaskContract, VerifyCommand
    from bosun.engine.routing import Choice
    from bosun.store.db import Store

# Words a `shell: true` command may start with that are not programs on PATH.
_SHELL_WORDS = frozenset(
    "! [ [[ { ( . : alias bash builtin case cd command declare echo eval exec exit export false for "
    "function if let local printf pwd read set sh shift source test time true type ulimit umask unset "
    "until wait while".split()
)


class PreflightFailed(ProblemsFound):
    """The task cannot run as it stands; nothing was created. Exit 2, every problem listed."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems, code="PREFLIGHT")


@dataclass
class Preflight:
    """What the checks found: the repository, the base commit, the routing choice, the problems."""

    repo: Path | None = None
    base: str | None = None
    choice: Choice | None = None
    settings: Settings | None = None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)  # the task can run, but its verdict will need a person

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_if_failed(self) -> None:
        if self.problems:
            raise PreflightFailed(self.problems)


def check_task(
    task: TaskContract,
    repo_path: Path,
    profile_name: str | None = None,
    store: Store | None = None,
    settings: Settings | None = None,
    check_base: bool = True,
    overrides: dict[str, Any] | None = None,
    probe: bool = False,
) -> Preflight:
    """Every pre-flight check for one task; never raises for a problem it can report. ``probe`` also
    tries the chosen profile's endpoint (`bosun check --probe`)."""
    from bosun.core.config import load_settings
    from bosun.engine.routing import choose_profile
    from bosun.isolation.git import repo_root, resolve_commit

    pf = Preflight(warnings=task_warnings(task))
    try:
        pf.repo = repo_root(repo_path)
    except BosunError as exc:
        pf.problems.append(Problem("NOT_A_REPO", exc.message, exc.hint or "cd into your repository or pass --repo"))
        return pf
    if check_base:
        try:
            pf.base = resolve_commit(pf.repo, task.base)
        except BosunError as exc:
            pf.problems.append(Problem("BAD_BASE", exc.message, exc.hint or "set base: to a branch, tag or commit"))
    try:
        pf.settings = settings or load_settings(pf.repo, overrides)
    except BosunError as exc:
        pf.problems.append(Problem("BAD_CONFIG", exc.message, exc.hint))
        return pf
    try:
        pf.choice = choose_profile(pf.settings, task, profile_name, store)
    except BosunError as exc:
        pf.problems.append(Problem(exc.code if exc.code != "BAD_INPUT" else "NO_PROFILE", exc.message, exc.hint))
    if pf.choice is not None:
        pf.problems += profile_problems(pf.choice.profile)
        pf.problems += review_problems(task, pf.settings, pf.choice.profile)
        if probe:
            pf.problems += endpoint_problems(pf.choice.profile)
    pf.problems += verify_problems(task, pf.repo, pf.base)
    if task.best_of is not None:
        # In the contract so a task that asks for it is told, before anything runs, not silently given one try.
        pf.problems.append(Problem(
            "NOT_AVAILABLE", "best_of is not available yet: this bosun runs one candidate per task",
            "remove best_of from the task; repair: (rounds with the evidence) and a profile's escalate_to "
            "give a refused change more tries"))
    return pf


def endpoint_problems(profile: Profile) -> list[Problem]:
    """The profile's endpoint answers (asked for: `--probe`)."""
    from bosun.workers.endpoint import probe

    problem = probe(profile.base_url) if profile.base_url else None
    if problem is None:
        return []
    return [Problem("ENDPOINT_UNREACHABLE", f"profile {profile.name}: {problem}",
                    f"start the server at {profile.base_url}, or fix base_url in [profiles.{profile.name}] "
                    "of bosun.toml")]


def profile_problems(profile: Profile) -> list[Problem]:
    """The profile's key is set and its worker can run (CLI installed, recent enough, configured)."""
    from bosun.workers.registry import get_worker

    problems = []
    if profile.api_key_env and not os.environ.get(profile.api_key_env):
        problems.append(Problem(
            "MISSING_KEY", f"profile {profile.name}: {profile.api_key_env} is not set",
            f"export {profile.api_key_env}=... (the key for profile {profile.name}), or pick another "
            "profile with --profile",
        ))
    try:
        info = get_worker(profile.adapter).describe(profile)
    except BosunError as exc:
        return [*problems, Problem("WORKER_UNAVAILABLE", f"profile {profile.name}: {exc.message}", exc.hint)]
    for text in info.problems:
        if text.startswith("could not run"):
            # `CLI --version` did not answer in time (a busy machine, a slow Node start): that proves
            # nothing, and a CLI that truly cannot start fails before it spends a token.
            continue
        missing = "not found" in text and (info.binary is None)
        code = "CLI_NOT_FOUND" if missing else "PROFILE_UNUSABLE"
        hint = ("install it (`scripts/install-worker-clis.sh` installs the pinned CLIs) or set binary = "
                "\"/path/to/cli\" in the profile" if missing else
                f"fix profile {profile.name} in bosun.toml; `bosun doctor --profile {profile.name}` checks it")
        problems.append(Problem(code, f"profile {profile.name}: {text}", hint))
    return problems


def review_problems(task: TaskContract, settings: Settings, worker: Profile) -> list[Problem]:
    """The cross-review can run: its profile exists, is usable, and is not the worker's (nor one the
    worker falls back to): a worker does not review its own change."""
    from bosun.core.contract import Mode
    from bosun.core.review_config import effective_review

    config = effective_review(task.review, settings.review)
    if config is None or task.mode != Mode.code:
        return []
    fix = "set review.profile in the task (or [review] profile in bosun.toml) to a profile of another model"
    if not config.profile:
        return [Problem("NO_REVIEWER", f"the cross-review has {config.rounds} round(s) but no profile", fix)]
    reviewer = settings.profiles.get(config.profile)
    if reviewer is None:
        known = ", ".join(sorted(settings.profiles)) or "none"
        return [Problem("UNKNOWN_REVIEWER", f"the reviewer profile {config.profile!r} is not defined (profiles: {known})",
                        fix)]
    if reviewer.name == worker.name or reviewer.name in worker.fallbacks:
        role = "the worker's profile" if reviewer.name == worker.name else f"a fallback of the worker {worker.name}"
        return [Problem("SAME_REVIEWER", f"the reviewer {reviewer.name} is {role}: a worker does not review its own change",
                        f"{fix}, or delegate with --profile naming another worker")]
    return [Problem(p.code, f"reviewer {p.message}", p.hint) for p in profile_problems(reviewer)]


def verify_problems(task: TaskContract, repo: Path, base: str | None) -> list[Problem]:
    """Each verify command's program can be found (on PATH, or in the repository for ./paths), and its
    ``cwd`` exists."""
    problems = []
    for cmd in task.verify:
        shown = " ".join(cmd.run)
        cwd = cmd.cwd
        if cwd and not _in_tree(cwd, repo, base, directory=True):
            problems.append(Problem("VERIFY_CWD_MISSING", f"verify command `{shown}`: directory {cwd!r} not found",
                                    "cwd is relative to the repository root; fix it in the task file"))
            continue
        program = _program(cmd)
        given = cmd.env.get("PATH") or os.environ.get("PATH", "")
        # As the verify command will see it: relative entries would find programs in the worktree.
        path_env = os.pathsep.join(p for p in given.split(os.pathsep) if os.path.isabs(p))
        if program is None or _resolvable(program, repo, base, cwd, path_env):
            missing = _missing_module(cmd, program, repo, cwd, path_env) if program else None
            if missing:
                module, close = missing
                install = f"`{program} -m pip install {module}`"
                hint = (f"did you mean `{program} -m {close}`? fix the verify command in the task file (if {module} "
                        f"is a module you need, install it for that interpreter: {install})" if close else
                        f"install it for that interpreter ({install}), or name another interpreter in the "
                        "verify command")
                problems.append(Problem(
                    "VERIFY_MODULE_MISSING", f"verify command `{shown}`: {program} cannot import {module!r}",
                    hint + "; no worker was run, nothing was created"))
            continue
        close = _close_programs(program, path_env)
        hint = f"did you mean `{close}`? " if close else ""
        in_repo = os.pathsep.join(p if os.path.isabs(p) else str(repo / (cwd or "") / p) for p in given.split(os.pathsep))
        if path_env != given and "/" not in program and _resolvable(program, repo, base, cwd, in_repo):
            hint += ("bosun ignores relative PATH entries (in a worktree they would run the worker's files): "
                     "name the program by its path in the verify command, or put its directory on PATH as an "
                     "absolute path; ")
        hint += "fix the verify command in the task file (no worker was run, nothing was created)"
        problems.append(Problem("VERIFY_NOT_FOUND", f"verify command `{shown}`: program {program!r} not found", hint))
    return problems


def _missing_module(cmd: VerifyCommand, program: str, repo: Path, cwd: str | None,
                    path_env: str) -> tuple[str, str | None] | None:
    """For ``python -m MODULE``: ``(MODULE, the closest module that interpreter has)`` when it cannot find
    MODULE (``pytest`` not installed, a typo: ``pytset`` -> ``pytest``), asked of the interpreter itself in
    one quick process. A module the repository itself holds (at its root, under ``src/`` or the command's
    directory) is left to the run: the worker may make it."""
    argv = cmd.run if not cmd.shell else shlex.split(cmd.run[0])
    if len(argv) < 3 or argv[1] != "-m" or not os.path.basename(program).startswith("python"):
        return None
    module = argv[2]
    top = module.split(".")[0]
    for root in {repo, repo / "src", repo / (cwd or ".")}:
        if (root / top).exists() or (root / f"{top}.py").exists():
            return None
    exe = program if "/" in program else shutil.which(program, path=path_env)
    if exe is None:
        return None
    from bosun.proc import run_quick

    # Not found: the top-level module names it has that are close to the one asked for, one a line.
    probe = ("import importlib.util, sys\ntry:\n    found = importlib.util.find_spec(sys.argv[1])\n"
             "except ImportError:\n    found = None\nif not found:\n"
             "    import difflib, pkgutil\n"
             "    names = {m.name for m in pkgutil.iter_modules()} | set(sys.builtin_module_names)\n"
             "    print('\\n'.join(difflib.get_close_matches(sys.argv[1].split('.')[0], names, 1, 0.75)))\n"
             "sys.exit(0 if found else 3)")
    env = {**os.environ, **cmd.env, "PATH": path_env}
    try:
        res = run_quick([exe, "-c", probe, module], cwd=repo / (cwd or "."), env=env, timeout=10)
    except Exception:  # noqa: BLE001 - an interpreter that cannot even be asked is the run's to report
        return None
    if res.returncode != 3:
        return None
    close = res.stdout.strip().splitlines()
    return module, (close[0] + module[len(top):] if close else None)


def _program(cmd: VerifyCommand) -> str | None:
    """The program a verify command starts, or None when a shell line is too complex to tell."""
    if not cmd.shell:
        return cmd.run[0]
    try:
        words = shlex.split(cmd.run[0])
    except ValueError:
        return None
    if not words:
        return None
    first = words[0]
    if first in _SHELL_WORDS or "=" in first or any(c in first for c in "$`(){};|&<>*?"):
        return None
    return first


def _resolvable(program: str, repo: Path, base: str | None, cwd: str | None, path_env: str) -> bool:
    if "/" not in program:
        return shutil.which(program, path=path_env) is not None
    if Path(program).is_absolute():
        return Path(program).exists()
    return _in_tree(os.path.join(cwd or "", program), repo, base)


def _in_tree(rel: str, repo: Path, base: str | None, directory: bool = False) -> bool:
    """``rel`` exists in the user's tree (uncommitted work is carried into the worktree) or at ``base``."""
    rel = os.path.normpath(rel)
    path = repo / rel
    if path.is_dir() if directory else path.exists():
        return True
    if base is None:
        return False
    from bosun.isolation.git import git

    return git(["cat-file", "-e", f"{base}:{rel}"], repo, check=False).returncode == 0


def _close_programs(program: str, path_env: str) -> str | None:
    """The nearest program name on PATH (``pytset`` -> ``pytest``), to put in the hint."""
    import difflib

    if "/" in program:
        return None
    names: set[str] = set()
    for d in path_env.split(os.pathsep):
        try:
            names.update(os.listdir(d))
        except OSError:
            continue
    found = difflib.get_close_matches(program, sorted(names), n=1, cutoff=0.75)
    return found[0] if found else None


def task_warnings(task: TaskContract) -> list[Problem]:
    """What makes the run's verdict need a person whatever the worker does: said before it starts."""
    from bosun.core.contract import Mode

    if task.mode == Mode.code and not task.verify:
        return [Problem("NOT_VERIFIED", "the task has no verify commands: bosun will check nothing, and the run "
                        "will need a person's review before it can land (proof: not-required does not change that)",
                        "add `verify:` commands that fail without the fix and pass with it")]
    return []


def to_json(pf: Preflight) -> dict[str, Any]:
    return {
        "ok": pf.ok,
        "repo": str(pf.repo) if pf.repo else None,
        "base": pf.base,
        "routing": pf.choice.to_dict() if pf.choice else None,
        "problems": [p.to_dict() for p in pf.problems],
        "warnings": [p.to_dict() for p in pf.warnings],
    }
