"""What the engine adds to verification (:mod:`bosun.isolation.verification`, which verifies exactly
the tree bosun computed): the fail-to-pass proof (engine/proof.py), and the gates recomputed at approve.

``approve`` recomputes the gates from the recorded tree id (:func:`recheck_gates`); a stored result
that disagrees with the tree is a refusal of its own (``RECORD_MISMATCH``).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from bosun.core.config import Settings
from bosun.core.contract import TaskContract
from bosun.engine import record

if TYPE_CHECKING:
    from bosun.store.run import Run

# Gates whose result depends on the world outside the tree (the user's branch, the filesystem
# around the worktree): at approve they are recomputed too, but a difference is not tampering.
# MODULE_SHADOWED reads what is installed beside bosun, which may change between verify and approve.
ENVIRONMENT_GATES = frozenset({"SOURCE_CHANGED", "SYMLINK_CHANGE", "REVIEW_CHANGED_TREE", "MODULE_SHADOWED"})


def prove(verification: dict[str, Any], task: TaskContract) -> dict[str, Any]:
    """The proof's fields for the verification doc (engine/proof.py): ``proven``, ``proven_by``,
    ``proof``, ``fail_to_pass``, ``pass_to_fail`` and, when the worker's tests were read, ``own_tests``."""
    from bosun.engine.proof import proof

    found = proof(verification, rewrite=task.tests == "rewrite")
    return {k: v for k, v in found.items() if v is not None or k in ("proven", "proven_by")}


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
