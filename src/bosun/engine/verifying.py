"""What the engine adds to verification (:mod:`bosun.isolation.verification`, which verifies exactly
the tree bosun computed): the fail-to-pass proof, and the gates recomputed at approve.

``approve`` recomputes the gates from the recorded tree id (:func:`recheck_gates`); a stored result
that disagrees with the tree is a refusal of its own (``RECORD_MISMATCH``).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.core.config import Settings
from bosun.core.contract import TaskContract
from bosun.core.fileio import read_json
from bosun.engine import record

if TYPE_CHECKING:
    from bosun.store.run import Run

# Gates whose result depends on the world outside the tree (the user's branch, the filesystem
# around the worktree): at approve they are recomputed too, but a difference is not tampering.
# MODULE_SHADOWED reads what is installed beside bosun, which may change between verify and approve.
ENVIRONMENT_GATES = frozenset({"SOURCE_CHANGED", "SYMLINK_CHANGE", "REVIEW_CHANGED_TREE", "MODULE_SHADOWED"})


def prove(run: Run, task: TaskContract, verification: dict[str, Any], originals: bool = False) -> dict[str, Any]:
    """``baseline`` and ``proven`` for the verification doc (see :mod:`bosun.engine.baseline`). A
    baseline that was taken but failed to run (git, the disk) is taken again here, once: without it the
    change could not be proven, and would wait for a person for no fault of its own. ``originals``:
    ``verification`` ran the original tests, put back (the change edited tests)."""
    from bosun.engine.baseline import BASELINE, ORIGINALS, proof, read_baseline, retake_baseline

    baseline = read_baseline(run.id)
    if baseline is None and (read_json(paths.run_dir(run.id) / BASELINE, {}) or {}).get("error"):
        baseline = retake_baseline(run, task)
    found = proof(baseline, verification, ORIGINALS if originals else "the tests")
    out = {"baseline": baseline, "proven": found["proven"], "proof": found["sentence"]}
    for key in ("fail_to_pass", "pass_to_fail"):
        if key in found:
            out[key] = found[key]
    return out


def digest(diff: bytes) -> str:
    return hashlib.sha256(diff).hexdigest()


def recheck_gates(
    run: Run, task: TaskContract, settings: Settings
) -> tuple[list[dict[str, Any]], list[str]]:
    """Gates recomputed from the verified tree for ``approve``: ``(effective gates, tamper findings)``.

    A gate that the record calls green but the tree makes red, a diff whose hash is not the recorded
    one, or a missing tree id are findings: the record was changed after verification.
    """
    from bosun.isolation.verification import gates_for_tree

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
