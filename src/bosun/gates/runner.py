"""Running every gate over one context, in a stable order, each exactly once.

The order of :data:`GATE_CODES` is part of bosun's output (reports, JSON, replays list gates in it):
cheap whole-run facts first, then where the change is (locked paths, the harness around the
tests), how big, what kind, and what it contains.
A gate that raises is reported as failed with the error, never skipped: a bug in a gate must not
let a change through.
"""

from __future__ import annotations

from collections.abc import Callable

from bosun.core.changes import GateResult
from bosun.gates import (
    binary,
    entrypoints,
    harness,
    outcome,
    paths,
    runner_refs,
    runner_tamper,
    secrets,
    shadowing,
    size,
    testharness,
    tests_weakened,
)
from bosun.gates.context import GateInputs

Gate = Callable[[GateInputs], GateResult]

GATES: tuple[tuple[str, Gate], ...] = (
    (outcome.NO_CHANGES, outcome.check_no_changes),
    (outcome.VERIFY_FAILED, outcome.check_verify),
    (paths.LOCKED_PATH_CHANGED, paths.check_locked),
    (harness.GIT_RULES_CHANGED, harness.check_git_rules),
    (harness.PYTHON_STARTUP_CHANGED, harness.check_python_startup),
    (harness.PACKAGE_METADATA_ADDED, harness.check_package_metadata),
    (shadowing.MODULE_SHADOWED, shadowing.check_shadowing),
    (entrypoints.VERIFY_ENTRY_CHANGED, entrypoints.check_entry_points),
    (runner_refs.RUNNER_REFERENCED, runner_refs.check_runner_refs),
    (runner_tamper.RUNNER_TAMPERED, runner_tamper.check_runner_tamper),
    (paths.OUT_OF_SCOPE, paths.check_scope),
    (size.EXCESSIVE_DELETION, size.check_deletion),
    (size.TOO_MANY_FILES, size.check_file_count),
    (size.DIFF_TOO_LARGE, size.check_diff_size),
    (binary.BINARY_CHANGE, binary.check_binary),
    (binary.SYMLINK_CHANGE, binary.check_symlinks),
    (secrets.SECRET_DETECTED, secrets.check_secrets),
    (tests_weakened.TEST_WEAKENED, tests_weakened.check_tests_weakened),
    (testharness.TEST_HARNESS_CHANGED, testharness.check_test_harness),
    (outcome.SOURCE_CHANGED, outcome.check_source),
)
GATE_CODES: tuple[str, ...] = tuple(code for code, _ in GATES)

# Refusals the engine files as gates itself, outside this runner: bosun could not compute a faithful
# change (isolation.change), the user's git dir or the modes of the user's files changed during the
# run (isolation.gitwatch, isolation.modewatch), or a read-only review turn edited files. Listed here
# so they are documented like every other gate.
ENGINE_GATE_CODES: tuple[str, ...] = ("GIT_POINTER_CHANGED", "NESTED_REPOSITORY", "USER_GIT_TAMPERED",
                                      "USER_FILES_TAMPERED",
                                      "HOLDOUT_TOUCHED", "TESTS_REWRITTEN", "REVIEW_CHANGED_TREE",
                                      # engine/approval.py: a read-only run that wrote, an answer's
                                      # unbacked citations, an escalated self-review
                                      "READ_ONLY_VIOLATION", "INVALID_CITATIONS", "SELF_REVIEW_ESCALATED",
                                      # isolation/workspace.py: set-up's files changed behind a link
                                      "ENVIRONMENT_CHANGED")


def run_gates(inputs: GateInputs) -> list[GateResult]:
    """One result per gate, in :data:`GATE_CODES` order."""
    return [_run_one(code, gate, inputs) for code, gate in GATES]


def _run_one(code: str, gate: Gate, inputs: GateInputs) -> GateResult:
    try:
        result = gate(inputs)
    except Exception as exc:  # noqa: BLE001 - fail closed: a crashed gate has judged nothing
        return GateResult(code, False, f"gate could not run: {type(exc).__name__}: {exc}")
    result.code = code  # the runner, not the gate, owns the code a result is filed under
    return result
