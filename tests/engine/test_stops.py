"""A phase that ends a run raises RunStopped; the one handler records the error once, moves the run,
and raises to the caller exactly what was recorded (or the lower step's own error, when given)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bosun.core.errors import BosunError, TimedOut
from bosun.engine.stops import RunStopped, stopping
from bosun.store.db import Store
from tests.store.test_store import _run


def _ctx(tmp_path, state):
    store = Store(tmp_path / "b.db")
    store.insert_run(_run("run-1", state))
    return SimpleNamespace(store=store), store.require_run("run-1")


def test_a_raising_stop_records_the_error_it_raises(tmp_path):
    ctx, held = _ctx(tmp_path, "working")
    failure = TimedOut("worker timeout after 5 s", "raise timeout_s", code="TIMEOUT")
    with pytest.raises(TimedOut) as raised, stopping(ctx, held):
        raise RunStopped("failed", failure, "worker timeout after 5 s", data={"usage": {"input_tokens": 5}})
    run = ctx.store.get_run("run-1")
    assert raised.value is failure
    assert run.state == "failed" and run.data.error == failure.to_dict() and run.data.usage == {"input_tokens": 5}


def test_a_quiet_stop_moves_the_run_and_lets_the_verb_return_it(tmp_path):
    ctx, held = _ctx(tmp_path, "worked")
    with stopping(ctx, held):
        raise RunStopped("rejected", BosunError("rejected by SCOPE", "see show", code="GATES_FAILED"),
                         "gates failed: SCOPE", raises=False)
    run = ctx.store.get_run("run-1")
    assert run.state == "rejected" and run.data.error["code"] == "GATES_FAILED"
    assert held.state == "rejected" and held.data.error["code"] == "GATES_FAILED"  # the verb's run follows


def test_a_stop_of_a_run_another_process_moved_is_refused(tmp_path):
    from bosun.core.errors import InvalidTransition

    ctx, held = _ctx(tmp_path, "working")
    ctx.store.transition("run-1", "working", "cancelled", "cancelled elsewhere")
    with pytest.raises(InvalidTransition), stopping(ctx, held):
        raise RunStopped("failed", BosunError("worker failed", code="FAILED"), "worker failed")
    assert ctx.store.get_run("run-1").state == "cancelled"


def test_the_cause_reaches_the_caller_and_the_summary_the_record(tmp_path):
    ctx, held = _ctx(tmp_path, "prepared")
    cause = BosunError("git worktree add failed", "check the repository", code="GIT")
    with pytest.raises(BosunError) as raised, stopping(ctx, held):
        raise RunStopped("failed", BosunError("worktree creation failed: git worktree add failed", code="FAILED"),
                         "worktree creation failed", cause=cause)
    assert raised.value is cause
    assert ctx.store.get_run("run-1").data.error["code"] == "FAILED"


def test_nothing_is_recorded_when_the_phase_ends_normally(tmp_path):
    ctx, held = _ctx(tmp_path, "worked")
    with stopping(ctx, held):
        pass
    assert ctx.store.get_run("run-1").state == "worked" and ctx.store.get_run("run-1").data.error is None
