"""The result object: its error describes the run's current state only."""

from __future__ import annotations

import pytest

from bosun.results import current_error

ERR = {"code": "GATES_FAILED", "message": "rejected by LOCKED_PATH_CHANGED", "hint": ""}


@pytest.mark.parametrize("state", ["prepared", "worked", "verified", "approved", "integrated", "reported", "cleaned"])
def test_an_error_recorded_earlier_is_history_in_a_clean_state(state):
    assert current_error({"state": state, "data": {"error": ERR}}) is None


@pytest.mark.parametrize("state", ["rejected", "failed", "blocked", "cancelled", "interrupted"])
def test_a_state_that_is_a_fault_keeps_its_error(state):
    assert current_error({"state": state, "data": {"error": ERR}}) == ERR
    assert current_error({"state": state, "data": {}}) is None
