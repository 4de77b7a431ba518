"""Shipping a base to the pool as git bundles, and materializing it on an agent.

The coordinator never ships its repository's history: the base is a *ship commit*, a commit of the
exact tree the worker must start from (authored by "bosun", dated at the epoch), whose parent is the
previous ship commit of the same repository. Each ship commit travels as an incremental bundle that
needs only the one before it, so a pool that holds yesterday's base downloads only what changed.
The chain is restarted (one full bundle) when it grows past ``MAX_CHAIN`` or its start is gone.
Held-out files never reach an agent: the tree shipped is the worktree's, which lacks them.
"""

from __future__ import annotations

import hashlib
import os
import socket
import tempfile
from pathlib import Path

from bosun.isolation.git import git
from bosun.remote.protocol import Bundle

MAX_CHAIN = 16
SHIP_REF = "refs/bosun/remote/tip"  # keeps the last ship commit (and so its chain) from garbage collection
SHIP_ENV = {
    "GIT_AUTHOR_NAME": "bosun", "GIT_AUTHOR_EMAIL": "bosun@localhost", "GIT_AUTHOR_DATE": "@0 +0000",
    "GIT_COMMITTER_NAME": "bosun", "GIT_COMMITTER_EMAIL": "bosun@localhost", "GIT_COMMITTER_DATE": "@0 +0000",
}


def repo_key(worktree: Path) -> str:
    """Names one coordinator repository in the pool (host and git dir, hashed: neither is revealed).

    Every worktree of a repository (each run has its own) has the same key, so its runs share one
    ship chain (a base already shipped is reused, a new one goes as an incremental bundle) and one
    cache repository on each agent; keyed by the worktree, every run would ship and fetch in full."""
    common = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], worktree).stdout.strip()
    return hashlib.sha256(f"{socket.gethostname()}:{Path(common).resolve()}".encode()).hexdigest()[:24]


def disk_tree(worktree: Path, scratch: Path) -> str:
    """The tree of the worktree as it is on disk (a revise turn starts from the earlier change), built
    in a throwaway index so the worktree's own index is untouched."""
    scratch.mkdir(parents=True, exist_ok=True)
    index = scratch / f"remote-index-{os.getpid()}"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git(["read-tree", "HEAD"], worktree, env=env)
        git(["add", "-A", "--", "."], worktree, env=env)
        return git(["write-tree"], worktree, env=env).stdout.strip()
    finally:
        index.unlink(missing_ok=True)


def has_commit(repo: Path, sha: str) -> bool:
    return git(["cat-file", "-e", f"{sha}^{{commit}}"], repo, check=False).returncode == 0


def ship_commit(worktree: Path, tree: str, parent: str | None) -> str:
    args = ["commit-tree", tree, "-m", "bosun remote base"] + (["-p", parent] if parent else [])
    return git(args, worktree, env=SHIP_ENV).stdout.strip()


def make_bundle(worktree: Path, ship: str, parent: str | None) -> bytes:
    """The bundle bringing ``ship`` to a repository that holds ``parent`` (everything when None)."""
    # A ref of this call's own: two runs shipping the same tree at once make the same commit.
    ref = f"refs/bosun/remote/ship-{ship}-{os.urandom(4).hex()}"
    git(["update-ref", ref, ship], worktree)
    try:
        with tempfile.TemporaryDirectory(prefix="bosun-bundle-") as tmp:
            out = Path(tmp) / "base.bundle"
            git(["bundle", "create", "-q", str(out), ref] + ([f"^{parent}"] if parent else []), worktree)
            data = out.read_bytes()
    finally:
        git(["update-ref", "-d", ref], worktree, check=False)
    git(["update-ref", SHIP_REF, ship], worktree)
    return data


def plan_ship(worktree: Path, tree: str, tip: dict[str, object] | None) -> tuple[str, str | None, list[Bundle]]:
    """(ship commit, parent it is bundled against or None, the chain before it)."""
    chain: list[Bundle] = []
    parent = None
    if tip:
        prev = str(tip.get("commit", ""))
        prev_chain = [Bundle(**b) for b in tip.get("bundles", [])]  # type: ignore[attr-defined]
        if prev and len(prev_chain) < MAX_CHAIN and has_commit(worktree, prev):
            parent, chain = prev, prev_chain
    return ship_commit(worktree, tree, parent), parent, chain


# ---------------------------------------------------------------------------------------------
# agent side


def cache_repo(root: Path, key: str) -> Path:
    """The agent's repository for one coordinator repository: bundles are fetched into it, runs are
    prepared from it. Its own HEAD is an empty commit, so it has no files of its own (and no
    bosun.toml that could change the agent's settings)."""
    repo = root / key
    if (repo / ".git").is_dir():
        return repo
    repo.mkdir(parents=True, exist_ok=True)
    git(["init", "-q"], repo)
    empty = git(["hash-object", "-t", "tree", "-w", "--stdin"], repo, input="").stdout.strip()
    root_commit = git(["commit-tree", empty, "-m", "bosun agent cache"], repo, env=SHIP_ENV).stdout.strip()
    git(["symbolic-ref", "HEAD", "refs/heads/bosun-agent"], repo)
    git(["update-ref", "refs/heads/bosun-agent", root_commit], repo)
    return repo


def fetch_bundle(repo: Path, data: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="bosun-bundle-") as tmp:
        path = Path(tmp) / "base.bundle"
        path.write_bytes(data)
        git(["bundle", "verify", "-q", str(path)], repo)
        git(["fetch", "-q", "--no-tags", str(path), "+refs/bosun/remote/*:refs/bosun/ships/*"], repo)
