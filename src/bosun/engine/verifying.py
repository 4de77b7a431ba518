"""Verification of a worked run on exactly the bytes that will be merged.

Invariant: **the tree bosun computed is what gets verified, gated, approved and merged.** Nothing
else the worker wrote can reach a verify command, and nothing stored on disk decides approval on its
own. In order:

1. Nothing of the worker's may still be running: processes that live in, or hold files of, the
   worktree are killed first, and verification refuses while any survives.
2. bosun's own view computes the change as a tree (:mod:`bosun.isolation.change`); what cannot be
   represented faithfully (a replaced ``.git`` pointer, a nested repository) fails closed and is
   never verified.
3. The worktree is made to hold exactly that tree (every other file removed, ignored ones
   included), and the verify commands run there with a fresh HOME made after the worker stopped.
4. Gates judge the tree (file contents come from its blobs, not from disk), and the tree id is
   recorded. ``approve`` recomputes the gates from that tree (:func:`gates_for_tree`); a stored
   result that disagrees is a refusal of its own.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.core.changes import GateResult
from bosun.core.config import Settings
from bosun.core.contract import TaskContract
from bosun.core.fileio import read_json
from bosun.engine import record
from bosun.engine.context import view_of
from bosun.isolation.change import Change, tree_changes, tree_diff

if TYPE_CHECKING:
    from bosun.store.run import Run

# Gates whose result depends on the world outside the tree (the user's branch, the filesystem
# around the worktree): at approve they are recomputed too, but a difference is not tampering.
# MODULE_SHADOWED reads what is installed beside bosun, which may change between verify and approve.
ENVIRONMENT_GATES = frozenset({"SOURCE_CHANGED", "SYMLINK_CHANGE", "REVIEW_CHANGED_TREE", "MODULE_SHADOWED"})


def fresh_verify_home(run_id: str) -> Path:
    """A HOME nobody could have prepared: created now, under a random name, after the worker stopped."""
    rdir = paths.run_dir(run_id)
    rdir.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="verify-home-", dir=rdir))


def run_verify_commands(task: TaskContract, run: Run, workdir: Path) -> dict[str, Any]:
    from bosun.engine.verify_commands import run_verification, verify_confinement
    from bosun.engine.worktrees import before_verify, with_run_env

    before_verify(run, workdir)  # the set-up the worker had, whatever it did to it
    task = with_run_env(task, run)

    home = fresh_verify_home(run.id)
    try:
        return run_verification(task, workdir, home, confine=verify_confinement(Path(run.repo), workdir, home))
    finally:
        shutil.rmtree(home, ignore_errors=True)


def prove(run: Run, task: TaskContract, verification: dict[str, Any]) -> dict[str, Any]:
    """``baseline`` and ``proven`` for the verification doc (see :mod:`bosun.engine.baseline`). A
    baseline that was taken but failed to run (git, the disk) is taken again here, once: without it the
    change could not be proven, and would wait for a person for no fault of its own."""
    from bosun.engine.baseline import BASELINE, proof, read_baseline, retake_baseline

    baseline = read_baseline(run.id)
    if baseline is None and (read_json(paths.run_dir(run.id) / BASELINE, {}) or {}).get("error"):
        baseline = retake_baseline(run, task)
    found = proof(baseline, verification)
    out = {"baseline": baseline, "proven": found["proven"], "proof": found["sentence"]}
    for key in ("fail_to_pass", "pass_to_fail"):
        if key in found:
            out[key] = found[key]
    return out


def problem_gates(change: Change) -> list[GateResult]:
    return [GateResult(p.code, False, p.detail) for p in change.problems]


def verify_change(
    run: Run, task: TaskContract, change: Change, refusals: list[GateResult]
) -> tuple[dict[str, Any], list[GateResult]]:
    """Run the verify commands on exactly the change (plus the holdout files), then the original tests
    held out when the change touched tests. Returns the verification doc and the gates it decides.

    Fail closed: with ``refusals`` (or problems in the change itself) nothing is run at all.
    """
    from bosun.core.contract import Mode
    from bosun.engine.heldout import heldout_tree, holdout_gate, rewritten_gate, with_holdout
    from bosun.engine.worktrees import environment_gates
    from bosun.isolation.change import materialize

    refusals = problem_gates(change) + refusals + environment_gates(run)
    if refusals:
        skipped: dict[str, Any] = {"passed": False if task.verify else None, "commands": [], "tree": change.tree,
                   "skipped": "not run: " + "; ".join(g.detail for g in refusals)}
        return skipped, refusals
    view = view_of(run)
    hold = run.data.holdout or {}
    hidden, full_start = hold.get("paths") or [], hold.get("full_start") or run.start_commit
    gates = holdout_gate(task, change.changes)
    if not all(g.ok for g in gates):
        return {"passed": False, "commands": [], "tree": change.tree, "skipped": gates[0].detail}, gates
    try:
        materialize(view, with_holdout(view, change.tree, full_start, hidden))
        verification = run_verify_commands(task, run, view.worktree)
        heldout_doc = None
        held = heldout_tree(view, run.start_commit, change.tree, change.changes) \
            if task.mode == Mode.code and verification["passed"] else None
        if held is not None:
            materialize(view, with_holdout(view, held.tree, full_start, hidden))
            heldout_doc = run_verify_commands(task, run, view.worktree)
            verification["heldout"] = {**heldout_doc, "tree": held.tree, "paths": held.paths, "excused": held.excused}
    finally:
        materialize(view, change.tree)  # holdout files and original tests leave the worktree again
    verification["tree"] = change.tree
    if task.mode == Mode.code and task.verify:
        verification.update(prove(run, task, heldout_doc or verification))
        gates.append(rewritten_gate(task, verification, heldout_doc, held.paths if held else [],
                                    (verification.get("baseline") or None), _kept_tests_changed(run, task, change),
                                    held.excused if held else []))
    return verification, gates


def _kept_tests_changed(run: Run, task: TaskContract, change: Change) -> list[str]:
    """Existing test files the change edits, renames or deletes (refused under ``tests: keep``)."""
    from bosun.engine.heldout import is_test_path

    if task.tests != "keep":
        return []
    return sorted({p for c in change.changes if c.status[:1] != "A"
                   for p in (c.path, c.old_path) if p and is_test_path(p)})


def gates_for_tree(
    run: Run,
    task: TaskContract,
    settings: Settings,
    tree: str,
    verification: dict[str, Any],
    *,
    on_disk: bool,
    scanned: Change | None = None,
) -> tuple[bytes, list[GateResult]]:
    """The diff and gates of ``start..tree``, file contents read from the tree's blobs.

    ``on_disk``: the worktree holds exactly ``tree`` right now (after ``materialize``), so symlinks may
    be resolved there; at approve time it may not, and only the tree is judged.
    ``scanned``: the scan that built ``tree`` moments ago in this process; its diff and files are
    those of ``start..tree`` (the scan diffs the same two trees through the same view), so they are
    not computed again. ``approve`` passes none and recomputes them from the tree.
    """
    from bosun.engine.gating import evaluate
    from bosun.isolation.blobs import BlobReader

    view = view_of(run)
    if scanned is not None and scanned.tree == tree and view.start == run.start_commit:
        diff, changes = scanned.diff, scanned.changes
    else:
        diff = tree_diff(view, run.start_commit, tree)
        changes = tree_changes(view, run.start_commit, tree)
    links = {c.path for c in changes if c.new_mode == "120000"}
    new: dict[str, bytes | None] = {}  # several gates read the same file: it is read once
    old: dict[str, bytes | None] = {}

    # Old and new bytes come through one `cat-file --batch` of bosun's view (never the worktree's git).
    with BlobReader(view.worktree, view.env()) as blobs:
        def new_bytes(path: str) -> bytes | None:
            if path in links:
                return None
            if path not in new:
                new[path] = blobs.read(tree, path)
            return new[path]

        def base_bytes(path: str) -> bytes | None:
            if path not in old:
                old[path] = blobs.read(run.start_commit, path)
            return old[path]

        gates = evaluate(run, task, settings, diff, changes, verification, new_bytes=new_bytes,
                         base_bytes=base_bytes, on_disk=on_disk)
    return diff, gates


def digest(diff: bytes) -> str:
    return hashlib.sha256(diff).hexdigest()


def recheck_gates(
    run: Run, task: TaskContract, settings: Settings
) -> tuple[list[dict[str, Any]], list[str]]:
    """Gates recomputed from the verified tree for ``approve``: ``(effective gates, tamper findings)``.

    A gate that the record calls green but the tree makes red, a diff whose hash is not the recorded
    one, or a missing tree id are findings: the record was changed after verification.
    """
    data = run.data
    tree = data.verified_tree
    stored_doc = record.read_doc(run.id, record.GATES, {}) or {}
    stored = {g["code"]: g for g in stored_doc.get("gates", [])}
    if not tree:
        return list(stored.values()), ["the run has no verified tree id: verify it again"]
    verification = record.read_doc(run.id, record.VERIFICATION, {}) or {}
    diff, gates = gates_for_tree(run, task, settings, tree, verification, on_disk=False)
    findings = []
    if digest(diff) != run.diff_sha256 or digest(diff) != stored_doc.get("diff_sha256"):
        findings.append("the recorded diff hash is not the hash of the verified tree's diff")
    effective: list[dict[str, Any]] = []
    for gate in gates:
        before = stored.pop(gate.code, None)
        entry = gate.to_dict()
        if before is not None:
            if before.get("ok") and not gate.ok and gate.code not in ENVIRONMENT_GATES:
                findings.append(f"{gate.code} is recorded green but the verified tree fails it: {gate.detail}")
            # A red recorded gate stays red: a clean recomputation does not undo what verify saw
            # (the filesystem around the worktree, a self-review).
            if not before.get("ok"):
                entry = dict(before)
        effective.append(entry)
    effective.extend(stored.values())  # gates only verify can compute (self-review, problems)
    return effective, findings
