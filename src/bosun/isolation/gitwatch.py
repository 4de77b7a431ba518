"""Watching the user's git dir while a worker runs: what a worker could plant there, saved and put back.

A worker must never change the user's repository configuration: a hook or a ``core.fsmonitor``
command planted in ``.git`` runs the worker's program at the user's next plain ``git status``. The
files that decide what git runs or where it looks (config, hooks, info, alternates, every worktree's
administrative files) are saved before the worker starts and compared after it stops. Any difference
is reported and the saved bytes are restored, so the user's repository is as it was.

Refs are not watched here: the user may commit while a worker runs (bosun handles that as
SOURCE_CHANGED), and the worker's git guard refuses ref changes.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

# Files under the common git dir that steer what git executes or reads.
_FILES = ("config", "config.worktree", "commondir", "objects/info/alternates", "info/grafts", "shallow")
_TREES = ("hooks", "info")
# Per-worktree administrative files that steer git (of the user's own worktrees and of other runs').
# Admin dirs that come and go during the run are other runs being created or removed: not watched.
_WORKTREE_FILES = ("gitdir", "commondir", "config.worktree")


@dataclass(frozen=True)
class Entry:
    data: bytes
    mode: int


Snapshot = dict[str, Entry]


def common_dir(repo: Path) -> Path:
    """The absolute git common dir of ``repo`` (its ``.git``, or the main repository's for a linked worktree)."""
    from bosun.isolation.git import git

    out = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], repo).stdout.rstrip("\n")
    return Path(out)


def _read(path: Path) -> Entry | None:
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            return Entry(b"symlink:" + os.fsencode(os.readlink(path)), st.st_mode)
        if not stat.S_ISREG(st.st_mode):
            return None
        return Entry(path.read_bytes(), st.st_mode)
    except OSError:
        return None


def _watched_paths(common: Path, admins: set[str] | None = None) -> list[Path]:
    paths = [common / name for name in _FILES]
    for tree in _TREES:
        root = common / tree
        if root.is_dir():
            for dirpath, _dirs, files in os.walk(root):
                paths += [Path(dirpath) / f for f in files]
    wt_root = common / "worktrees"
    if wt_root.is_dir():
        for admin in wt_root.iterdir():
            if admins is None or admin.name in admins:
                paths += [admin / n for n in _WORKTREE_FILES]
    return paths


def _admins(snap: Snapshot) -> set[str]:
    return {rel.split("/")[1] for rel in snap if rel.startswith("worktrees/")}


def take(repo: Path) -> tuple[Path, Snapshot]:
    """Save the watched files of ``repo``'s common git dir (absent files are remembered as absent)."""
    common = common_dir(repo)
    snap: Snapshot = {}
    for path in _watched_paths(common):
        entry = _read(path)
        if entry is not None:
            snap[str(path.relative_to(common))] = entry
    for admin in _admins(snap):
        # An admin dir without both files, or with one still empty (git creates each file, then
        # writes it), is a worktree being created (or removed) by another run right now: not
        # watched (it has no identity, so `changes` leaves it alone). Watching it would report the
        # rest of its creation as tampering, and `restore` would empty that run's files again.
        files = (snap.get(f"worktrees/{admin}/gitdir"), snap.get(f"worktrees/{admin}/commondir"))
        if not all(entry is not None and entry.data for entry in files):
            continue
        ident = _admin_identity(common / "worktrees" / admin)
        if ident is not None:
            snap[f"worktrees/{admin}"] = ident
    return common, snap


def _admin_identity(path: Path) -> Entry | None:
    """A worktree admin dir's inode: a name git reuses for a new worktree is another admin dir."""
    try:
        st = path.stat()
    except OSError:
        return None
    return Entry(b"inode:%d:%d" % (st.st_dev, st.st_ino), st.st_mode)


def _is_identity(rel: str) -> bool:
    return rel.startswith("worktrees/") and rel.count("/") == 1


def changes(common: Path, before: Snapshot) -> list[str]:
    """Relative paths that were added, changed or removed since ``before``."""
    # Admin dirs removed since (other runs' worktrees) or removed and created again under the same
    # name (temporary verification worktrees) are not the ones watched.
    live = {a for a in _admins(before) if (common / "worktrees" / a).is_dir()
            and _admin_identity(common / "worktrees" / a) == before.get(f"worktrees/{a}")}
    before = {k: v for k, v in before.items()
              if not _is_identity(k) and (not k.startswith("worktrees/") or k.split("/")[1] in live)}
    now: Snapshot = {}
    for path in _watched_paths(common, live):
        entry = _read(path)
        if entry is not None:
            now[str(path.relative_to(common))] = entry
    # A worktree admin file that is gone is another run's worktree being removed (its cleanup may be
    # under way right now): removing one plants nothing. Added or changed files still count.
    return sorted(p for p in set(before) | set(now) if before.get(p) != now.get(p)
                  and not (p.startswith("worktrees/") and p not in now))


def restore(common: Path, before: Snapshot, changed: list[str]) -> list[str]:
    """Put every changed path back as it was; returns what could not be restored."""
    failed = []
    for rel in changed:
        path = common / rel
        try:
            if path.is_symlink() or path.exists():
                if path.is_dir() and not path.is_symlink():
                    failed.append(rel)
                    continue
                path.unlink()
            entry = before.get(rel)
            if entry is None:
                continue
            if entry.data.startswith(b"symlink:") and stat.S_ISLNK(entry.mode):
                os.symlink(os.fsdecode(entry.data[len(b"symlink:"):]), path)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(entry.data)
            os.chmod(path, stat.S_IMODE(entry.mode))
        except OSError:
            failed.append(rel)
    return failed
