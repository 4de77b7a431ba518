"""Tests a worker cannot game: hidden acceptance tests, and the original tests held out.

Both work on trees bosun builds from git objects, never on what the worker left on disk:

* **Holdout files** (the contract's ``holdout`` globs): the worker's worktree starts from a commit
  without them (a root commit, so its history does not lead back to them either), and bosun adds them
  back only into the tree it verifies. A fix that special-cases the visible tests does not pass the
  hidden ones. The change may not touch a holdout path (``HOLDOUT_TOUCHED``).
* **Held-out originals**: when the change edits or deletes existing test files, or adds files under a
  test directory, bosun also verifies the change's *code* with the start tree's tests: every test
  file and test-directory file the worker touched is put back as it was (added ones removed). If that
  run fails where the worker's own tests passed, the change passes only tests it rewrote:
  ``TESTS_REWRITTEN`` (under ``tests: rewrite`` this is reported, not refused). A held-out command
  that also failed on the start tree is a test that was already failing: reported, not refused.
"""

from __future__ import annotations

from typing import Any

from bosun.changes import FileChange, GateResult
from bosun.contract import TaskContract
from bosun.gates.testpaths import in_test_dir, is_test_file
from bosun.globs import match_any
from bosun.isolation.change import View, edit_tree, tree_entries

HOLDOUT_TOUCHED = "HOLDOUT_TOUCHED"
TESTS_REWRITTEN = "TESTS_REWRITTEN"


def is_test_path(path: str) -> bool:
    """A test file, or any file under a test directory (helpers, fixtures, data, conftest): the same
    notion of "test" the TEST_WEAKENED gate uses."""
    return is_test_file(path) or in_test_dir(path)


# -- holdout files ----------------------------------------------------------------------------------


def holdout_paths(repo: Any, commit: str, globs: list[str]) -> list[str]:
    """The files of ``commit`` that the holdout globs name."""
    from bosun.isolation.git import git

    listing = git(["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit], repo, text=False).stdout
    names = [p.decode("utf-8", "surrogateescape") for p in bytes(listing).split(b"\0") if p]  # type: ignore[arg-type]
    return [p for p in names if match_any(p, globs)]


def strip_holdout(repo: Any, start: str, globs: list[str], scratch: Any) -> tuple[str, list[str]]:
    """A root commit with ``start``'s tree minus the holdout files: ``(commit, stripped paths)``."""
    from bosun.isolation.git import git
    from bosun.isolation.snapshot import BOSUN_IDENTITY, NO_SPLIT_INDEX

    hidden = holdout_paths(repo, start, globs)
    if not hidden:
        return start, []
    scratch.mkdir(parents=True, exist_ok=True)
    index = scratch / "holdout.index"
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git([*NO_SPLIT_INDEX, "read-tree", start], repo, env=env)
        git([*NO_SPLIT_INDEX, "update-index", "--force-remove", "-z", "--stdin"], repo, env=env,
            input="".join(p + "\0" for p in hidden))
        tree = git(["write-tree"], repo, env=env).stdout.strip()
    finally:
        index.unlink(missing_ok=True)
    message = "bosun: start tree without the holdout files"
    commit = git(["commit-tree", tree, "-m", message], repo, env=BOSUN_IDENTITY).stdout.strip()
    return commit, hidden


def holdout_gate(task: TaskContract, changes: list[FileChange]) -> list[GateResult]:
    if not task.holdout:
        return []
    touched = sorted({p for c in changes for p in (c.path, c.old_path) if p and match_any(p, task.holdout)})
    if touched:
        return [GateResult(HOLDOUT_TOUCHED, False,
                           "the change writes where the hidden acceptance files live: " + ", ".join(touched[:5]))]
    return [GateResult(HOLDOUT_TOUCHED, True, f"{len(task.holdout)} holdout glob(s); none touched")]


def with_holdout(view: View, tree: str, full_start: str, hidden: list[str]) -> str:
    """``tree`` plus the holdout files as they are in ``full_start``."""
    if not hidden:
        return tree
    entries = tree_entries(view, full_start)
    return edit_tree(view, tree, {p: entries[p] for p in hidden if p in entries}, [])


# -- the original tests, held out --------------------------------------------------------------------


def heldout_tree(view: View, start: str, tree: str, changes: list[FileChange]) -> tuple[str, list[str]] | None:
    """``tree`` with every test path the change touched back as in ``start``: ``(tree, paths)``, or None
    when the change touched no test path."""
    touched = sorted({p for c in changes for p in (c.path, c.old_path) if p and is_test_path(p)})
    if not touched:
        return None
    original = tree_entries(view, start)
    put = {p: original[p] for p in touched if p in original}
    remove = [p for p in touched if p not in original]
    return edit_tree(view, tree, put, remove), touched


def _passed(cmd: dict[str, Any]) -> bool:
    return cmd.get("exit_code") == 0 and not cmd.get("timed_out")


def _new_failures(now: dict[str, Any], before: dict[str, Any] | None) -> list[str] | None:
    """Tests failing in ``now`` that did not fail in ``before`` (by test id); None without test lists."""
    if before is None or "tests" not in now or "tests" not in before:
        return None
    return sorted(set(now["tests"]["failed"]) - set(before["tests"]["failed"]))


def rewritten_gate(task: TaskContract, worker: dict[str, Any], heldout: dict[str, Any] | None,
                   paths: list[str], baseline: dict[str, Any] | None, kept: list[str]) -> GateResult:
    """Refuse a change whose tests pass only as the worker rewrote them (or, under ``tests: keep``,
    that changes an existing test at all)."""
    if kept:
        return GateResult(TESTS_REWRITTEN, False, "the task says tests: keep, but the change edits existing "
                          "test files: " + ", ".join(kept[:5]))
    if heldout is None:
        return GateResult(TESTS_REWRITTEN, True, "no existing test was changed")
    broken, prefailing = [], []
    base_cmds = (baseline or {}).get("commands") or []
    for i, (mine, orig) in enumerate(zip(worker.get("commands", []), heldout.get("commands", []), strict=False)):
        if not _passed(mine) or _passed(orig):
            continue
        label = " ".join(orig.get("argv", []))[:120]
        before = base_cmds[i] if i < len(base_cmds) else None
        new_failures = _new_failures(orig, before)
        if new_failures:
            broken.append(label + ": " + ", ".join(new_failures[:3]))
        elif before is not None and not _passed(before) and (new_failures is not None or task.tests == "extend"):
            # Every original test that fails now failed before the change too: not the worker's doing.
            prefailing.append(label)
        else:
            broken.append(label)
    where = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    if broken and task.tests != "rewrite":
        return GateResult(TESTS_REWRITTEN, False, f"with the original tests put back ({where}), "
                          f"{len(broken)} verify command(s) fail that pass with the worker's versions: "
                          + "; ".join(broken[:3]) + " — the change passes only tests it rewrote")
    notes = []
    if broken:
        notes.append(f"tests: rewrite — the original tests fail with this change ({'; '.join(broken[:3])}), as intended")
    if prefailing:
        notes.append("the original tests failed before this change too, and the worker changed them: check "
                     "the expected values (" + "; ".join(prefailing[:3]) + ")")
    return GateResult(TESTS_REWRITTEN, True, " ".join(notes) or f"the original tests ({where}) still pass with this change")
