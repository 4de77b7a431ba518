"""The git side that ``revert`` and ``apply`` share: a three-way merge of trees without a work tree,
and the later commits that touch what conflicts. The branch then moves the way integration moves it,
through ``isolation/user_branch.py`` (the one place a user's branch moves).

Invariant: nothing here touches the user's index, stash, work tree or refs; every object written is a
commit no ref points at. Nothing is pushed.

``git merge-tree --write-tree`` (git 2.38) picks the merge base from the commits' history, and
``--merge-base`` needs git 2.40; so a merge of three arbitrary trees is done on three throwaway
commits: the base, and "ours" and "theirs" each with the base as their only parent.
"""

from __future__ import annotations

from pathlib import Path

from bosun.core.errors import BadInput, Conflict


def three_way(repo: Path, base_tree: str, ours_tree: str, theirs_tree: str) -> tuple[str, list[str]]:
    """The tree of merging ``base -> theirs`` into ``ours``, and the paths that conflict (their
    conflict markers are in the tree)."""
    from bosun.isolation.git import git
    from bosun.isolation.snapshot import BOSUN_IDENTITY

    def commit(tree: str, *parents: str) -> str:
        args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p)), "-m", "bosun: three-way merge"]
        return git(args, repo, env=BOSUN_IDENTITY).stdout.strip()

    base = commit(base_tree)
    ours, theirs = commit(ours_tree, base), commit(theirs_tree, base)
    res = git(["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs], repo, check=False)
    if res.returncode not in (0, 1):
        raise Conflict(f"git merge-tree failed: {res.stderr.strip()}", "check the repository state (`git status`)")
    tree, *paths = [p for p in res.stdout.split("\0") if p]
    return tree.strip(), sorted(set(paths)) if res.returncode == 1 else []


def commits_touching(repo: Path, since: str, head: str, paths: list[str]) -> list[str]:
    """``short-sha subject`` of each commit after ``since`` up to ``head`` that changed ``paths``."""
    from bosun.isolation.git import git

    out = git(["log", "--format=%h %s", f"{since}..{head}", "--", *(f":(literal){p}" for p in paths)], repo).stdout
    return [line for line in out.splitlines() if line.strip()]


def commit_on(repo: Path, tree: str, parent: str, message: str) -> str:
    """A commit of ``tree`` on ``parent``, authored by the user's identity (bosun's when none is set)."""
    from bosun.isolation.git import git
    from bosun.isolation.landing import identity
    from bosun.isolation.worktree import identity_env

    env = identity_env(repo, identity(repo))
    return git(["commit-tree", tree, "-p", parent, "-m", message], repo, env=env).stdout.strip()


def branch_head(repo: Path, branch: str) -> str:
    """The commit ``branch`` points at; an unknown branch is refused with the branches there are."""
    from bosun.isolation.git import git, resolve_commit
    from bosun.isolation.worktree import branch_exists

    if not branch or branch.startswith("-") or not branch_exists(repo, branch):
        names = git(["for-each-ref", "--format=%(refname:short)", "refs/heads/"], repo).stdout.split()
        shown = ", ".join(n for n in names if not n.startswith("bosun/"))[:300] or "none"
        raise BadInput(f"no branch named {branch!r} in {repo}", f"name one of the branches there: {shown}",
                       code="UNKNOWN_BRANCH")
    return resolve_commit(repo, f"refs/heads/{branch}")
