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

from typing import Any, NamedTuple

from bosun.core.changes import FileChange, GateResult
from bosun.core.contract import TaskContract
from bosun.core.globs import match_any
from bosun.core.outcomes import command_passed
from bosun.gates.testset import TestSet, touched_tests
from bosun.isolation.change import View, edit_tree, tree_entries

HOLDOUT_TOUCHED = "HOLDOUT_TOUCHED"
TESTS_REWRITTEN = "TESTS_REWRITTEN"


def touched_test_paths(changes: list[FileChange], tests: TestSet) -> list[str]:
    """The test paths (test files the runners reported or the names say, and anything under a test
    directory) the change adds, edits, deletes or renames: the same notion TEST_WEAKENED uses."""
    return touched_tests(tests, [p for c in changes for p in (c.path, c.old_path) if p])


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


def heldout_tree(view: View, start: str, tree: str, changes: list[FileChange], tests: TestSet) -> HeldOut | None:
    """``tree`` with every test path the change touched back as in ``start``, or None when the change
    touched no test path. Original tests whose subject the change deletes or renames cannot run on it
    and are taken out of their file (:mod:`bosun.gates.subjects`); ``excused`` names them."""
    touched = touched_test_paths(changes, tests)
    if not touched:
        return None
    original = tree_entries(view, start)
    put = {p: original[p] for p in touched if p in original}
    remove = [p for p in touched if p not in original]
    excused = _excuse_removed_subjects(view, start, tree, changes, put, tests)
    return HeldOut(edit_tree(view, tree, put, remove), touched, excused)


class HeldOut(NamedTuple):
    tree: str
    paths: list[str]  # the test paths put back as they were
    excused: list[str]  # "path::test" of original tests taken out: the change removes what they test


def _excuse_removed_subjects(view: View, start: str, tree: str, changes: list[FileChange],
                             put: dict[str, tuple[str, str]], tests: TestSet) -> list[str]:
    from bosun.gates.subjects import strip_tests_of
    from bosun.gates.tests_weakened import removed_names
    from bosun.isolation.blobs import BlobReader

    python_tests = [p for p in put if p.endswith(".py") and tests.is_test_file(p)]
    if not python_tests:
        return []
    excused: list[str] = []
    # Old and new bytes through one `cat-file --batch` of bosun's view, as the gates read them.
    with BlobReader(view.worktree, view.env()) as blobs:
        def blob(rev: str, path: str) -> str | None:
            data = blobs.read(rev, path)
            return None if data is None else data.decode("utf-8", "replace")

        removed = set(removed_names(changes, lambda p: blob(start, p), lambda p: blob(tree, p), tests))
        for path in python_tests:
            text = blob(start, path)
            if text is None:
                continue
            stripped, taken = strip_tests_of(text, removed)
            if taken:
                sha = view.git(["hash-object", "-w", "--stdin"], input=stripped.encode()).strip().decode()
                put[path] = (put[path][0], sha)
                excused += [f"{path}::{name}" for name in taken]
    return excused


def _passed(cmd: dict[str, Any]) -> bool:
    return command_passed(cmd)


def rewritten_gate(task: TaskContract, worker: dict[str, Any], heldout: dict[str, Any] | None,
                   paths: list[str], baseline: dict[str, Any] | None, kept: list[str],
                   excused: list[str] | None = None) -> GateResult:
    """The start tree's tests, held out, decide (``tests: extend`` and ``keep``): each must pass on the
    change, except those whose subject the change deletes or renames (``excused``). A failure refuses
    whether or not it also failed before: failing before and still failing after means the change
    fixes nothing those tests check. Under ``tests: rewrite`` the same findings are reasons for review.
    Under ``keep``, a change to an existing test refuses on its own."""
    excused = excused or []
    if kept:
        return GateResult(TESTS_REWRITTEN, False, "the task says tests: keep, but the change edits existing "
                          "test files: " + ", ".join(kept[:5]))
    if heldout is None:
        if not worker.get("passed"):
            # The originals are put back only on a change whose verification passed (VERIFY_FAILED refuses).
            return GateResult(TESTS_REWRITTEN, True, "not checked: the verify commands fail on the change itself, "
                              "so the original tests were not put back")
        return GateResult(TESTS_REWRITTEN, True, "no existing test was changed")
    broken: list[str] = []
    base_cmds = (baseline or {}).get("commands") or []
    for i, (mine, orig) in enumerate(zip(worker.get("commands", []), heldout.get("commands", []), strict=False)):
        if not _passed(mine) or _passed(orig):
            continue
        label = " ".join(orig.get("argv", []))[:120]
        failing = (orig.get("tests") or {}).get("failed") or []
        before = base_cmds[i] if i < len(base_cmds) else None
        still = " (they failed before the change too: it fixes nothing they check)" \
            if before is not None and not _passed(before) else ""
        broken.append(label + (": " + ", ".join(failing[:3]) if failing else "") + still)
    where = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    review = _excused_review(excused, base_cmds)
    taken = f"; {len(excused)} original test(s) whose subject the change removes were left out: " \
        + ", ".join(excused[:5]) if excused else ""
    if broken and task.tests != "rewrite":
        return GateResult(TESTS_REWRITTEN, False, f"with the original tests put back ({where}), "
                          f"{len(broken)} verify command(s) fail that pass with the worker's versions: "
                          + "; ".join(broken[:3]) + taken + " — the change passes only tests it rewrote (if the "
                          "expected values were wrong, that is a tests: rewrite task)")
    if broken:
        review.append({"code": TESTS_REWRITTEN, "sentence": "with the original tests put back, the change fails "
                       + "; ".join(broken[:3]) + " (tests: rewrite: check the new expected values are right)"})
        return GateResult(TESTS_REWRITTEN, True, "tests: rewrite - the original tests fail with this change: "
                          + "; ".join(broken[:3]) + taken, review=review)
    return GateResult(TESTS_REWRITTEN, True, f"the original tests ({where}) still pass with this change" + taken,
                      review=review)


SUBJECT_REMOVED = "SUBJECT_REMOVED"


def _excused_review(excused: list[str], base_cmds: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Original tests left out of the held-out run (the change removes what they test) are a reason
    for review: whether their subject is really gone, or only hidden from the names bosun reads, is
    for a person to judge. Stronger when one of them failed before the change: removing what a failing
    test tests makes it stop failing without fixing anything."""
    if not excused:
        return []
    failed = [t for c in base_cmds for t in ((c.get("tests") or {}).get("failed") or [])]
    unlisted = any(not _passed(c) and "tests" not in c for c in base_cmds)
    hit = [e for e in excused if unlisted or _failed_id(e, failed)]
    if hit:
        sentence = ("the change deletes or renames what these tests test, and they failed before it: "
                    + ", ".join(hit[:3]) + "; nothing shows that failure fixed")
    else:
        sentence = ("the change deletes or renames what these original tests test, so they were left out: "
                    + ", ".join(excused[:3]) + (f" and {len(excused) - 3} more" if len(excused) > 3 else "")
                    + "; check that nothing they checked was lost")
    return [{"code": SUBJECT_REMOVED, "sentence": sentence}]


def _failed_id(excused: str, failed: list[str]) -> bool:
    """Whether ``path::[Class::]test`` is among junit ids (``module.path[.Class]::test``), or its module
    failed to collect."""
    path, _, qual = excused.partition("::")
    module = path.removesuffix(".py").replace("/", ".")
    name = qual.rpartition("::")[2]
    return any(f.endswith("::" + name) or ("::" not in f and (f in module or module in f)) for f in failed)
