"""The one way bosun runs git, plus the few repository questions everything else asks.

Every git call goes through ``git()``: it pins the options that keep bosun's own calls from running
the user's hooks or fsmonitor, from prompting, and from rewriting the user's index as a side effect
of a status call, and it turns failures into ``GitError`` with the command and git's last word.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bosun.core.errors import BadInput, BosunError

TYPE_CHECKING = False  # typing's would import typing: `repo_root` is on the path of read-only verbs
if TYPE_CHECKING:
    from collections.abc import Mapping

    from bosun import proc

# Prepended to every call: bosun's plumbing must never run the user's hooks (they may be slow,
# interactive or have side effects) nor a configured fsmonitor command.
GIT_PREFIX = ("git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")

# Fixed environment for every call: English messages (some stderr is parsed), no credential prompt
# that would hang a child with no terminal, and no opportunistic index refresh by read-only commands.
GIT_ENV = {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}

# Variables that redirect git to another repository, index or object store. They leak into bosun's
# environment when it is started from a git hook or alias and would silently aim every call at the
# wrong place, so they are dropped unless a caller passes them explicitly (throwaway indexes do).
_REPO_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)

DEFAULT_TIMEOUT_S = 600.0


class GitError(BosunError):
    """A git command bosun relies on failed in a way the user did not cause directly."""

    code = "GIT_ERROR"

    def __init__(
        self,
        message: str,
        hint: str = "check the repository with `git status`; this is usually a repository problem",
        *,
        argv: list[str] | None = None,
        returncode: int | None = None,
        stderr: str = "",
    ) -> None:
        super().__init__(message, hint)
        self.argv = argv or []
        self.returncode = returncode
        self.stderr = stderr

    @classmethod
    def from_failure(cls, args: list[str], returncode: int | None, stderr: str, cwd: Path | str) -> GitError:
        last = _last_line(stderr)
        status = "timed out" if returncode is None else f"failed (exit {returncode})"
        message = f"git {' '.join(args)} {status} in {cwd}" + (f": {last}" if last else "")
        return cls(message, argv=args, returncode=returncode, stderr=stderr)


def _last_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


# What git may see of bosun's environment: where to find programs and the user's own git settings
# and identity. Nothing else (API keys, tokens) ever reaches a git process or a program git runs.
_ENV_ALLOWLIST = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "XDG_CONFIG_HOME", "EMAIL",
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_CEILING_DIRECTORIES",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
})


def git_env(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a git call: an allowlisted part of the user's environment, pinned, plus
    ``overrides``."""
    env = {k: v for k, v in os.environ.items()
           if (k in _ENV_ALLOWLIST or k.startswith("LC_")) and k not in _REPO_LOCATION_VARS}
    env.update(GIT_ENV)
    if overrides:
        env.update(overrides)
    return env


def git(
    args: list[str],
    cwd: Path | str,
    *,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    check: bool = True,
    text: bool = True,
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> proc.QuickResult:
    """Run ``git <args>`` in ``cwd``; raise ``GitError`` on a non-zero exit when ``check``."""
    import subprocess

    from bosun import proc

    if isinstance(input, str) and not text:
        input = input.encode()
    try:
        result = proc.run_quick(
            [*GIT_PREFIX, *args], cwd=cwd, env=git_env(env), input=input, timeout=timeout, text=text
        )
    except subprocess.TimeoutExpired as exc:
        raise GitError.from_failure(args, None, "", cwd) from exc
    if check and result.returncode != 0:
        raise GitError.from_failure(args, result.returncode, _as_text(result.stderr), cwd)
    return result


def _as_text(data: str | bytes) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def repo_root(path: Path | str) -> Path:
    """The top level of the work tree containing ``path``; bare repositories are refused."""
    p = Path(path)
    hint = "run bosun inside a git repository, or pass --repo"
    if not p.is_dir():
        raise BadInput(f"not a git repository: {p}", hint)
    # --show-toplevel fails in a bare repository and inside .git, which is exactly what we want.
    args = ["rev-parse", "--show-toplevel"]
    if "subprocess" in sys.modules or not hasattr(os, "posix_spawnp"):
        res = git(args, p, check=False)
        returncode, stdout = res.returncode, res.stdout
    else:  # a read-only verb, which has not paid for subprocess (~20 ms of its start-up) and need not
        returncode, stdout = spawn_git(args, p)
    top = stdout.strip()
    if returncode != 0 or not top:
        raise BadInput(f"not a git repository: {p}", hint)
    return Path(top)


def spawn_git(args: list[str], cwd: Path) -> tuple[int, str]:
    """``git <args>`` in ``cwd`` as ``git(args, cwd, check=False)`` runs it (same options, same
    environment, stdin empty, the same timeout), spawned with ``os.posix_spawnp`` rather than
    subprocess: its exit code and its output, read as text. For a short question (`repo_root`)."""
    import select
    import time

    argv = [*GIT_PREFIX, "-C", str(cwd), *args]  # -C: posix_spawn has no working directory of its own
    read_end, write_end = os.pipe()
    try:
        pid = os.posix_spawnp(argv[0], argv, git_env(), file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, write_end, 1),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ])
    finally:
        os.close(write_end)
    chunks = []
    try:
        with os.fdopen(read_end, "rb", buffering=0) as out:
            deadline = time.monotonic() + DEFAULT_TIMEOUT_S
            while True:
                ready, _, _ = select.select([out], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise GitError.from_failure(args, None, "", cwd)
                chunk = out.read(65536)
                if not chunk:
                    break
                chunks.append(chunk)
    except BaseException:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode().replace("\r\n", "\n").replace("\r", "\n")  # as text mode reads it
    return os.waitstatus_to_exitcode(status), text


def current_branch(repo: Path | str) -> str:
    """The short name of the checked-out branch; refuses a detached HEAD."""
    res = git(["symbolic-ref", "--quiet", "--short", "HEAD"], repo, check=False)
    name = res.stdout.strip()
    if res.returncode != 0 or not name:
        raise BadInput(
            f"HEAD is detached in {repo}",
            "check out a branch first: bosun merges into the branch you are on",
        )
    return name


def has_commits(repo: Path | str) -> bool:
    res = git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], repo, check=False)
    if res.returncode == 0:
        return True
    # HEAD may be an unborn branch while other branches exist.
    refs = git(["for-each-ref", "--count=1", "--format=%(refname)", "refs/heads"], repo, check=False)
    return bool(refs.stdout.strip())


def resolve_commit(repo: Path | str, ref: str) -> str:
    """The full sha of ``ref^{commit}``; a missing ref or an empty repository is the user's to fix."""
    if not ref or ref.startswith("-"):
        if not has_commits(repo):
            raise _no_commits(repo)
        raise BadInput(f"base ref '{ref}' does not exist", "pass a branch, tag or commit sha")
    res = git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], repo, check=False
    )
    sha = res.stdout.strip()
    if res.returncode != 0 or not sha:
        # Whether the repository has commits at all is asked only to explain a failure: one git
        # process fewer on every resolve that succeeds.
        if not has_commits(repo):
            raise _no_commits(repo)
        raise BadInput(
            f"base ref '{ref}' does not exist",
            "pass a branch, tag or commit sha that `git rev-parse` knows (fetch it first if it is remote)",
        )
    return sha


def _no_commits(repo: Path | str) -> BadInput:
    return BadInput(f"the repository {repo} has no commits yet",
                    "make a first commit: bosun starts workers from an existing commit")


def head_commit(repo: Path | str) -> str:
    return resolve_commit(repo, "HEAD")


def git_path(repo: Path | str, name: str) -> Path:
    """Absolute path of ``name`` inside the repository's git dir (per-worktree aware)."""
    res = git(["rev-parse", "--path-format=absolute", "--git-path", name], repo)
    return Path(res.stdout.rstrip("\n"))


def tree_of(repo: Path | str, commit: str) -> str:
    return git(["rev-parse", "--verify", f"{commit}^{{tree}}"], repo).stdout.strip()
