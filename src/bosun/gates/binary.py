"""Gates on *what kind* of file changed: binaries and symlinks.

Neither can be reviewed as text. A file is binary when git says so *or* when its new bytes hold a NUL
in the first :data:`SNIFF_BYTES` (git's own test), read by bosun: git's verdict follows
``.gitattributes``, which a worker can write (``lib/.gitattributes`` saying ``*.so text``), so it
alone never decides. A binary blob can hide anything; a symlink can point a later
verification or merge at files outside the repository. SYMLINK_CHANGE also resolves every changed
path below ``inputs.worktree``: a path whose real location is outside the worktree (through a symlinked
parent directory, say) fails even when git recorded no symlink for that path itself.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from bosun.core.changes import GateResult
from bosun.core.quoting import quoted
from bosun.gates.context import GateInputs, listing, plural, touched_paths, unique

BINARY_CHANGE = "BINARY_CHANGE"
SYMLINK_CHANGE = "SYMLINK_CHANGE"
SYMLINK_MODE = "120000"
SNIFF_BYTES = 8192


def check_binary(inputs: GateInputs) -> GateResult:
    # Deleting a binary adds nothing unreviewable, so only added and modified files count. The diff
    # is consulted too, so a binary the change list missed is still caught.
    paths = [c.path for c in inputs.changes if c.binary and c.status[:1] != "D"]
    paths += [f.path for f in inputs.diff_files if f.binary and f.status != "D"]
    paths += [c.path for c in inputs.changes if c.status[:1] != "D" and not c.is_symlink and _has_nul(inputs, c.path)]
    paths = unique(paths)
    if paths:
        return GateResult(BINARY_CHANGE, False, f"binary files added or changed: {listing(quoted(p) for p in paths)}")
    return GateResult(BINARY_CHANGE, True, "no binary files changed")


def _has_nul(inputs: GateInputs, path: str) -> bool:
    data = inputs.content(path)
    return data is not None and b"\0" in data[:SNIFF_BYTES]


def check_symlinks(inputs: GateInputs) -> GateResult:
    links = [c.path for c in inputs.changes if c.is_symlink]
    links += [f.path for f in inputs.diff_files if SYMLINK_MODE in (f.old_mode, f.new_mode)]
    escaping = [p for c in inputs.changes for p in touched_paths(c) if _escapes(p, inputs.worktree)]
    problems = [f"{quoted(p)} (symlink)" for p in unique(links)]
    problems += [f"{quoted(p)} (resolves outside the worktree)" for p in unique(escaping) if p not in links]
    if problems:
        return GateResult(
            SYMLINK_CHANGE, False, f"symlinks or paths leaving the worktree: {listing(problems)}"
        )
    return GateResult(SYMLINK_CHANGE, True, f"no symlinks among {plural(len(inputs.changes), 'changed file')}")


def _escapes(path: str, worktree: Path | None) -> bool:
    """True when ``path`` cannot be, or does not stay, inside the worktree."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        return True  # git never reports such a path; if one appears, it is hostile
    if worktree is None:
        return False
    root = Path(os.path.realpath(worktree))
    # realpath follows every symlink on the way, including a final one, and tolerates missing parts
    # (a deleted file), so a parent directory swapped for a link is caught as well.
    real = Path(os.path.realpath(root / path))
    return real != root and root not in real.parents
