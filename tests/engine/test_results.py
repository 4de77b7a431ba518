"""The result object: its error describes the run's current state only."""

from __future__ import annotations

import pytest

from bosun.engine.results import current_error
from bosun.store.run import Run

ERR = {"code": "GATES_FAILED", "message": "rejected by LOCKED_PATH_CHANGED", "hint": ""}


@pytest.mark.parametrize("state", ["prepared", "worked", "verified", "approved", "integrated", "reported", "cleaned"])
def test_an_error_recorded_earlier_is_history_in_a_clean_state(state):
    assert current_error(Run.from_row({"state": state, "data": {"error": ERR}})) is None


@pytest.mark.parametrize("state", ["rejected", "failed", "blocked", "cancelled", "interrupted"])
def test_a_state_that_is_a_fault_keeps_its_error(state):
    assert current_error(Run.from_row({"state": state, "data": {"error": ERR}})) == ERR
    assert current_error(Run.from_row({"state": state, "data": {}})) is None


def test_no_event_reaches_a_terminal_as_a_raw_dict():
    from bosun.cli.render import describe_event

    events = [
        {"seq": 2, "ts": 1.0, "type": "sandbox", "mechanism": "in-process", "abi": 7, "network": "provider-only",
         "containment": "subreaper", "reads": "all"},
        {"type": "contained", "count": 2, "killed": [{"pid": 1}]},
        {"type": "something_new", "seq": 3, "detail": "x", "nested": {"a": 1}},
        {"type": "message", "text": "hi"},
        {"type": "command", "argv": ["claude", "-p", "--effort", "max", "a b"]},
    ]
    for ev in events:
        line = describe_event(ev)
        assert not line.lstrip().startswith("{") and "{'" not in line, line
    assert "sandbox: in-process (ABI 7)" in describe_event(events[0])
    assert describe_event(events[-1]) == "   started: claude -p --effort max 'a b'"
