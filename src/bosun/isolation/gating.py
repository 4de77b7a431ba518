"""Builds the gate context for a run from git and the run record, then runs every gate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.changes import FileChange, GateResult
from bosun.core.config import Settings
from bosun.core.contract import TaskContract
from bosun.core.outcomes import command_passed

if TYPE_CHECKING:
    from bosun.store.run import Run


def _as_text(data: bytes | None) -> str | None:
    if data is None or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def source_conflicts(run: Run, changed: set[str]) -> tuple[list[str], str]:
    """Paths the user changed during the run (committed on the source branch, or uncommitted)
    that the worker changed too."""
    from bosun.isolation.git import git, resolve_commit
    from bosun.isolation.snapshot import uncommitted_state

    repo = Path(run.repo)
    base = run.base
    try:
        head = resolve_commit(repo, f"refs/heads/{run.source_branch}")
    except Exception:  # noqa: BLE001 - a deleted source branch is reported, not fatal here
        return [], f"source branch {run.source_branch} no longer exists"
    moved: set[str] = set()
    detail = "source branch unchanged"
    if head != base:
        out = git(["diff", "--name-only", "-z", base, head], repo).stdout
        moved = {p for p in out.split("\0") if p}
        detail = f"source branch moved {base[:10]} -> {head[:10]} ({len(moved)} files), no overlap"
    # Only the worker's paths can conflict, so only they are scanned (cheap on a big repository).
    before = {p: v for p, v in (run.data.uncommitted_at_start or {}).items() if p in changed}
    now = uncommitted_state(repo, sorted(changed))
    touched = {p for p in set(before) | set(now) if before.get(p) != now.get(p)}
    if touched - changed:
        detail += f"; {len(touched - changed)} uncommitted file(s) changed during the run, no overlap"
    conflicts = sorted((moved | touched) & changed)
    return conflicts, detail


def evaluate(
    run: Run,
    task: TaskContract,
    settings: Settings,
    diff: bytes,
    changes: list[FileChange],
    verification: dict[str, Any],
    *,
    new_bytes: Callable[[str], bytes | None],
    base_bytes: Callable[[str], bytes | None],
    on_disk: bool = True,
) -> list[GateResult]:
    """Run every gate on the change. ``new_bytes`` reads the changed tree and ``base_bytes`` the
    start commit (never the worktree); ``on_disk`` says the worktree holds exactly that tree now, so
    symlinks may be resolved in it."""
    from bosun.gates import GateInputs, run_gates
    from bosun.gates.testset import OriginalRuns, TestSet

    worktree = Path(run.worktree)
    start = run.start_commit

    def base_line_count(path: str) -> int | None:
        data = base_bytes(path)
        return None if data is None else data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)

    def base_text(path: str) -> str | None:
        return _as_text(base_bytes(path))

    def new_text(path: str) -> str | None:
        return _as_text(new_bytes(path))

    def base_paths() -> list[str]:
        # The start commit is in the user's object store, which outlives the worktree.
        from bosun.isolation.git import git

        out = git(["ls-tree", "-r", "-z", "--name-only", start], Path(run.repo)).stdout
        return [p for p in out.split("\0") if p]

    changed = {c.path for c in changes} | {c.old_path for c in changes if c.old_path}
    conflicts, detail = source_conflicts(run, changed)
    ctx = GateInputs(
        task=task,
        changes=changes,
        diff=diff,
        locked=list(task.locked) + settings.locked_globs(),
        base_line_count=base_line_count,
        base_text=base_text,
        new_text=new_text,
        verification_passed=verification.get("passed"),
        verification_summary=_summary(verification),
        worktree=worktree if on_disk else None,
        source_conflicts=conflicts,
        source_detail=detail,
        new_bytes=new_bytes,
        base_paths=base_paths,
        tests=TestSet.of_verification(verification),
        originals=OriginalRuns.of_verification(verification),
        verification=verification,
    )
    results = run_gates(ctx)
    escaped = escaped_writes(run) if on_disk else []
    if escaped:
        for i, g in enumerate(results):
            if g.code == "SYMLINK_CHANGE":
                detail = "the worker wrote outside its worktree: " + ", ".join(escaped[:5])
                results[i] = GateResult(g.code, False, detail if g.ok else g.detail + "; " + detail)
    return results


def escaped_writes(run: Run) -> list[str]:
    """Files a worker wrote next to its worktree (``../name``), found by a scan of the worktrees dir.

    Other runs' worktrees are named by run id and ignored; anything else that appeared there after
    this run started came from a worker writing outside its tree.
    """
    from bosun.core.paths import RUN_ID_RE

    parent = Path(run.worktree).parent
    out = []
    try:
        entries = list(parent.iterdir())
    except FileNotFoundError:
        return []
    for entry in entries:
        if RUN_ID_RE.match(entry.name):
            continue
        try:
            if entry.lstat().st_mtime >= run.created_at - 1:
                out.append(str(entry))
        except FileNotFoundError:
            continue
    return sorted(out)


def _summary(verification: dict[str, Any]) -> str:
    cmds = verification.get("commands", [])
    failed = [c for c in cmds if not command_passed(c)]
    if not cmds:
        return "no verify commands"
    if not failed:
        return f"{len(cmds)} command(s) passed"
    first = failed[0]
    why = "the code under test tampered with its test runner" if first.get("exit_code") == 0 else \
        f"exit {first.get('exit_code')}"
    return f"{len(failed)} of {len(cmds)} failed; first: {' '.join(first['argv'])} ({why})"
