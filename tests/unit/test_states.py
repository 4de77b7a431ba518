from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bosun import states as S
from bosun.errors import InvalidTransition

state = st.sampled_from(S.STATES)


@given(state, state)
def test_check_transition_agrees_with_the_table(src, dst):
    allowed = dst in S.TRANSITIONS[src]
    if allowed:
        S.check_transition(src, dst)
    else:
        with pytest.raises(InvalidTransition):
            S.check_transition(src, dst)


def test_every_state_has_a_row_and_targets_are_states():
    assert set(S.TRANSITIONS) == set(S.STATES)
    for targets in S.TRANSITIONS.values():
        assert targets <= set(S.STATES)


def test_cleaned_is_final_and_reachable_from_every_state():
    assert S.TRANSITIONS[S.CLEANED] == frozenset()
    # Every state can eventually be cleaned up (no run is stuck forever).
    for start in S.STATES:
        seen, frontier = {start}, [start]
        while frontier:
            cur = frontier.pop()
            for nxt in S.TRANSITIONS[cur]:
                if nxt not in seen:
                    seen.add(nxt)
                    frontier.append(nxt)
        assert S.CLEANED in seen, start


@given(st.lists(state, min_size=1, max_size=30))
def test_random_walks_only_follow_the_table(path):
    cur = S.PREPARED
    for nxt in path:
        if S.can_transition(cur, nxt):
            cur = nxt
        else:
            with pytest.raises(InvalidTransition):
                S.check_transition(cur, nxt)
    assert cur in S.STATES


def test_integration_requires_approval():
    assert not S.can_transition(S.VERIFIED, S.INTEGRATED)
    assert not S.can_transition(S.REJECTED, S.INTEGRATED)
    assert not S.can_transition(S.WORKED, S.APPROVED)
