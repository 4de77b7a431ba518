"""bosun's landings on one branch, one at a time, and how bosun knows a move of that branch was its own.

A landing reads the branch's tip, builds the landing on it, verifies the result and moves the branch
from that tip. Two landings at once both build on the same tip, and all but one find the branch moved.
So a landing holds the branch's queue (``held``: an ``flock`` per repository and branch under bosun's
locks directory, released by the kernel when its holder dies) from reading the tip until the branch
has moved; the next one waits its turn, then builds on what the one before it landed and is verified
there.

Inside the held window the branch can still move: a commit of the user's, or a landing of bosun's that
did not queue (a plan's, or a bosun from before the queue). ``moved_by_bosun`` tells them apart from
the record, never from names: the move is bosun's own when every commit it added is a landing bosun
recorded before moving a branch to it (``landing_pending``, then ``merged_commit`` and
``landing_commit``). A landing then builds again on the new tip; anyone else's move is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from bosun.core.paths import locks_dir

if TYPE_CHECKING:
    from bosun.store.db import Store


def queue_path(repo: Path, branch: str) -> Path:
    """The lock file of ``branch`` in ``repo``: one per repository (its common git dir, shared by all its
    worktrees) and branch, so every worktree of one repository queues on the same file."""
    from bosun.isolation.git import git

    common = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], repo).stdout.strip()
    key = hashlib.sha256(f"{os.path.realpath(common)}\0{branch}".encode()).hexdigest()[:24]
    return locks_dir() / f".land-{key}.lock"


@contextmanager
def held(repo: Path, branch: str, run_id: str) -> Iterator[None]:
    """Hold ``branch``'s landing queue for ``run_id``; wait (saying for whom) while another landing holds it."""
    import fcntl

    from bosun.engine.locks import say_waiting

    path = queue_path(repo, branch)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say_waiting(f"waiting for {_holder(fd)} to land on {branch} first")
            fcntl.flock(fd, fcntl.LOCK_EX)
        _write_holder(fd, run_id)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # nobody holds it: a waiter reads no stale name
    finally:
        os.close(fd)  # closing drops the lock


def _write_holder(fd: int, run_id: str) -> None:
    data = json.dumps({"run": run_id, "pid": os.getpid()}).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _holder(fd: int) -> str:
    """Who holds the queue, as its file says (read while they hold it: it may be half written)."""
    try:
        doc = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        doc = {}
    return f"run {doc['run']}" if isinstance(doc, dict) and doc.get("run") else "another landing"


def moved_by_bosun(store: Store, repo: Path, old: str, new: str) -> bool:
    """Whether the branch went from ``old`` to ``new`` only by landings bosun recorded: ``new`` descends
    from ``old`` and every commit between them is a landing (or its merge) of a run of ``repo``."""
    from bosun.isolation.git import git

    if old == new:
        return False
    if git(["merge-base", "--is-ancestor", old, new], repo, check=False).returncode != 0:
        return False  # rewound or rewritten: never a landing of bosun's
    added = git(["rev-list", f"{old}..{new}"], repo).stdout.split()
    return bool(added) and set(added) <= store.landed_commits(str(repo))
