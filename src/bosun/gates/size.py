"""Gates on *how much* changed: lines deleted per file, number of files, size of the diff.

EXCESSIVE_DELETION judges each file on its own. A file fails when

1. it loses more lines than ``limits.max_deleted_lines`` (never less than 1, so a one-line fix
   always passes, even with a limit of 0); or
2. it loses more than half of its lines in the start commit *and* more than
   :data:`SMALL_FILE_LINES` lines: gutting a 100-line file fails, a one-line fix in a 3-line
   file passes; or
3. it existed with more than :data:`SMALL_FILE_LINES` lines and is deleted whole.

"Loses" counts deleted lines as git counts them, so rewriting most of a file also trips rule 2:
wholesale rewrites are what a reviewer should look at, and a waiver exists for the rest. Rule 3 is
implied by rule 2 but is kept, and worded, on its own because a deletion says more than a ratio.
Binary files have no lines and are judged by BINARY_CHANGE instead.
"""

from __future__ import annotations

from bosun.core.changes import FileChange, GateResult
from bosun.core.quoting import quoted
from bosun.gates.context import GateInputs, listing, plural
from bosun.gates.diffparse import FileDiff

EXCESSIVE_DELETION = "EXCESSIVE_DELETION"
TOO_MANY_FILES = "TOO_MANY_FILES"
DIFF_TOO_LARGE = "DIFF_TOO_LARGE"

# Files up to this many lines may lose any share of them: small files are cheap to review.
SMALL_FILE_LINES = 20


def deletion_problem(change: FileChange, base_lines: int | None, ceiling: int, replaced: int = 0) -> str | None:
    """Why this file's deletions are excessive, or None when they are not.

    ``replaced`` is how many of the deleted lines were replaced rather than removed (rule 2).
    """
    if change.binary:
        return None
    deleted = change.deleted
    if change.status[:1] == "D" and base_lines is not None:
        deleted = max(deleted, base_lines)
    if change.status[:1] == "D" and base_lines is not None and base_lines > SMALL_FILE_LINES:
        return f"{quoted(change.path)} (deleted, {base_lines} lines)"
    if deleted > max(ceiling, 1):
        return f"{quoted(change.path)} ({deleted} lines deleted, limit {ceiling})"
    removed = deleted - min(replaced, deleted)
    if base_lines and removed > SMALL_FILE_LINES and removed * 2 > base_lines:
        detail = f"{removed} of {base_lines} lines removed"
        return f"{quoted(change.path)} ({detail}, {replaced} more replaced)" if replaced else f"{quoted(change.path)} ({detail})"
    return None


def replaced_lines(fdiff: FileDiff | None) -> int:
    """Deleted lines of a file that non-blank added lines replace, run by run."""
    if fdiff is None:
        return 0
    return sum(min(len(removed), sum(1 for a in added if a.strip())) for removed, added in fdiff.blocks)


def check_deletion(inputs: GateInputs) -> GateResult:
    ceiling = inputs.task.limits.max_deleted_lines
    diffs = {f.path: f for f in inputs.diff_files}
    problems = []
    for change in inputs.changes:
        base = inputs.base_line_count(change.old_path or change.path)
        replaced = 0 if change.status[:1] == "D" else replaced_lines(diffs.get(change.path))
        problem = deletion_problem(change, base, ceiling, replaced)
        if problem:
            problems.append(problem)
    if problems:
        return GateResult(EXCESSIVE_DELETION, False, f"too much deleted: {listing(problems)}")
    total = sum(c.deleted for c in inputs.changes)
    return GateResult(EXCESSIVE_DELETION, True, f"{plural(total, 'line')} deleted, none excessive")


def check_file_count(inputs: GateInputs) -> GateResult:
    n, limit = len(inputs.changes), inputs.task.limits.max_files
    if n > limit:
        return GateResult(TOO_MANY_FILES, False, f"{plural(n, 'file')} changed, limit {limit}")
    return GateResult(TOO_MANY_FILES, True, f"{plural(n, 'file')} changed, limit {limit}")


def check_diff_size(inputs: GateInputs) -> GateResult:
    n, limit = len(inputs.diff), inputs.task.limits.max_diff_bytes
    if n > limit:
        return GateResult(DIFF_TOO_LARGE, False, f"diff is {n:,} bytes, limit {limit:,}")
    return GateResult(DIFF_TOO_LARGE, True, f"diff is {n:,} bytes, limit {limit:,}")
