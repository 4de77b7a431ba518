from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bosun.core import states
from bosun.core.errors import InvalidTransition

state = st.sampled_from(states.STATES)


@given(state, state)
def test_check_transition_agrees_with_the_table(src, dst):
    allowed = dst in states.TRANSITIONS[src]
    if allowed:
        states.check_transition(src, dst)
    else:
        with pytest.raises(InvalidTransition):
            states.check_transition(src, dst)


def test_every_state_has_a_row_and_targets_are_states():
    assert set(states.TRANSITIONS) == set(states.STATES)
    for targets in states.TRANSITIONS.values():
        assert targets <= set(states.STATES)


def test_cleaned_is_final_and_reachable_from_every_state():
    assert states.TRANSITIONS[states.CLEANED] == frozenset()
    # Every state can eventually be cleaned up (no run is stuck forever).
    for start in states.STATES:
        seen, frontier = {start}, [start]
        while frontier:
            cur = frontier.pop()
            for nxt in states.TRANSITIONS[cur]:
                if nxt not in seen:
                    seen.add(nxt)
                    frontier.append(nxt)
        assert states.CLEANED in seen, start


@given(st.lists(state, min_size=1, max_size=30))
def test_random_walks_only_follow_the_table(path):
    cur = states.PREPARED
    for nxt in path:
        if states.can_transition(cur, nxt):
            cur = nxt
        else:
            with pytest.raises(InvalidTransition):
                states.check_transition(cur, nxt)
    assert cur in states.STATES


def test_integration_requires_approval():
    assert not states.can_transition(states.VERIFIED, states.INTEGRATED)
    assert not states.can_transition(states.REJECTED, states.INTEGRATED)
    assert not states.can_transition(states.WORKED, states.APPROVED)
