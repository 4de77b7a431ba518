"""Gates about the run as a whole rather than its paths: was anything changed, did verification
pass, and did the user change the same files on the source branch meanwhile.

NO_CHANGES depends on the task's mode: a ``code`` task that changes nothing has failed, while
``explore``, ``review`` and ``test`` tasks report findings and must leave the tree alone.
"""

from __future__ import annotations

from bosun.core.changes import GateResult
from bosun.core.contract import Mode
from bosun.core.quoting import quoted
from bosun.gates.context import GateInputs, listing, plural

NO_CHANGES = "NO_CHANGES"
VERIFY_FAILED = "VERIFY_FAILED"
SOURCE_CHANGED = "SOURCE_CHANGED"


def check_no_changes(inputs: GateInputs) -> GateResult:
    mode = Mode(inputs.task.mode)
    paths = [c.path for c in inputs.changes]
    if mode is not Mode.code:
        if paths:
            return GateResult(NO_CHANGES, False,
                              f"mode {mode.value} must not change files: {listing(quoted(p) for p in paths)}")
        return GateResult(NO_CHANGES, True, f"no files changed, as mode {mode.value} requires")
    if not paths:
        return GateResult(NO_CHANGES, False, "the worker changed no files")
    return GateResult(NO_CHANGES, True, f"{plural(len(paths), 'file')} changed")


def check_verify(inputs: GateInputs) -> GateResult:
    summary = inputs.verification_summary.strip()
    if inputs.verification_passed is None:
        # Passing is right (there is nothing to fail), but nobody may read it as "verified".
        return GateResult(VERIFY_FAILED, True, "no verify commands: nothing was checked")
    if inputs.verification_passed:
        return GateResult(VERIFY_FAILED, True, summary or "verification passed")
    return GateResult(VERIFY_FAILED, False, summary or "verification failed")


def check_source(inputs: GateInputs) -> GateResult:
    conflicts = list(dict.fromkeys(inputs.source_conflicts))
    if conflicts:
        return GateResult(
            SOURCE_CHANGED,
            False,
            f"the user changed these paths during the run too: {listing(quoted(p) for p in conflicts)}; "
            "re-run the task on the current source",
        )
    return GateResult(SOURCE_CHANGED, True, inputs.source_detail.strip() or "source branch unchanged")
