"""The checkouts bosun registers in the user's repository, found the way git knows them.

Besides a run's own worktree (``worktrees/<id>``) and the warm pool's, bosun adds short-lived
checkouts under its state directory: a baseline's (``runs/<id>/baseline/verify-...``), an apply's
re-verification (``runs/<id>/apply/...``), a plan verify's (``plans/<id>/verify-...``). Each lives
only while the process that made it runs and removes it; a process that dies leaves it registered
in the user's repository (``git worktree list`` shows it) until someone removes it. Git's own list
(``git worktree list --porcelain``) is the authority on what is registered, so nothing is missed that
a directory walk would not see (a checkout whose directory is already gone). Only paths under a root
bosun owns are ever removed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def registered_under(repo: Path | str, root: Path) -> list[Path]:
    """The checkouts ``repo`` has registered under ``root`` (their directories may be gone)."""
    out = _worktree_list(repo)
    top = os.path.realpath(root) + os.sep
    found = []
    for token in out.split(b"\0"):
        if token.startswith(b"worktree "):
            path = os.fsdecode(token[len(b"worktree "):])
            if os.path.realpath(path).startswith(top) or os.path.abspath(path).startswith(top):
                found.append(Path(path))
    return found


def _worktree_list(repo: Path | str, tries: int = 3) -> bytes:
    """``git worktree list --porcelain -z``. Git fails to read an entry another process is adding at
    that moment (``failed to read .../commondir``): asked again shortly; nothing when it keeps failing."""
    import time

    from bosun.isolation.git import git

    for attempt in range(tries):
        res = git(["worktree", "list", "--porcelain", "-z"], repo, text=False, check=False)
        if res.returncode == 0:
            return res.stdout if isinstance(res.stdout, bytes) else res.stdout.encode()
        time.sleep(0.05 * (attempt + 1))
    return b""


def remove_checkout(repo: Path | str, path: Path) -> None:
    """Unregister ``path`` from ``repo`` and remove its directory. A checkout whose ``git worktree add``
    was killed half-way is still locked ("initializing": bosun's own lock, lifted first) and may lack
    its ``.git`` file, which ``git worktree remove`` refuses: its directory goes first, and git then
    forgets a checkout whose directory is gone."""
    from bosun.core.errors import BosunError
    from bosun.isolation.git import git
    from bosun.isolation.worktree import remove_worktree

    git(["worktree", "unlock", os.path.abspath(path)], repo, check=False)
    try:
        remove_worktree(repo, path, None, delete_branch=False)
    except BosunError:
        shutil.rmtree(path, ignore_errors=True)
        remove_worktree(repo, path, None, delete_branch=False)
    shutil.rmtree(path, ignore_errors=True)
