from __future__ import annotations

import pytest

from bosun.core.config import Settings
from bosun.core.contract import contract_from_mapping
from bosun.core.errors import BadInput
from bosun.engine.routing import choose_profile, derive_difficulty


def settings(**profiles) -> Settings:
    return Settings.model_validate({"profiles": profiles, "callers": {"claude-code": "std"}, "default_profile": "cheap"})


S = settings(
    cheap={"adapter": "command", "tier": "cheap"},
    cheap_py={"adapter": "command", "tier": "cheap", "strengths": ["python"]},
    std={"adapter": "command", "tier": "standard"},
    prem={"adapter": "command", "tier": "premium"},
)


def task(**kw):
    return contract_from_mapping({"title": "t", "prompt": "p", **kw})


def test_flag_beats_everything(monkeypatch):
    monkeypatch.setenv("PARENT_AGENT", "claude-code")
    c = choose_profile(S, task(profile="std", difficulty="high"), "cheap")
    assert (c.profile.name, c.rule) == ("cheap", "flag")


def test_task_profile_then_caller(monkeypatch):
    assert choose_profile(S, task(profile="prem"), None).rule == "task"
    monkeypatch.setenv("PARENT_AGENT", "claude-code")
    c = choose_profile(S, task(), None)
    assert (c.profile.name, c.rule) == ("std", "caller") and "PARENT_AGENT" in c.reason


@pytest.mark.parametrize(("difficulty", "expected"), [("low", "cheap"), ("medium", "std"), ("high", "prem")])
def test_difficulty_picks_a_tier(difficulty, expected):
    c = choose_profile(S, task(difficulty=difficulty), None)
    assert c.profile.name == expected and c.rule == "difficulty"


def test_domain_soft_matches_strengths():
    c = choose_profile(S, task(difficulty="low", domain="python"), None)
    assert c.profile.name == "cheap_py" and "strengths match" in c.reason


def test_difficulty_is_derived_from_risk_domain_and_size():
    assert derive_difficulty(task())[0] == "low"
    assert derive_difficulty(task(risk="medium"))[0] == "medium"
    assert derive_difficulty(task(risk="medium", domain="auth"))[0] == "high"
    assert derive_difficulty(task(prompt="x" * 5000))[0] == "medium"


class _Store:
    def __init__(self, cooling):
        self._c = cooling

    def cooldowns(self, now=None):
        return dict.fromkeys(self._c, {"until": 0, "reason": "429"})


def test_cooldown_is_skipped_and_said():
    c = choose_profile(S, task(difficulty="medium"), None, _Store({"std"}))
    assert c.profile.name == "prem" and "cooldown" in c.reason and "no standard profile" in c.reason


def test_no_profiles_is_a_clear_error():
    with pytest.raises(BadInput) as exc:
        choose_profile(Settings(), task(), None)
    assert "no worker profile" in exc.value.message


def _rec(runs: int, landed: int, cost: float) -> dict:
    return {"runs": runs, "landed": landed, "cost_usd": cost}


def test_the_record_picks_the_lowest_expected_cost_per_landed_change():
    from bosun.engine.routing import by_record, expected_cost_per_landed

    # cheap_a is cheaper per run but rarely lands; cheap_b costs twice as much and lands every time.
    records = {"cheap_a": _rec(4, 1, 0.004), "cheap_b": _rec(4, 4, 0.008)}
    mean = 0.012 / 8
    assert expected_cost_per_landed(records["cheap_a"], mean) == pytest.approx((0.007 / 6) / (2 / 6))
    assert expected_cost_per_landed(records["cheap_b"], mean) == pytest.approx((0.011 / 6) / (5 / 6))
    name, why = by_record(["cheap_a", "cheap_b"], records, seed=1)
    assert name == "cheap_b" and why == "track record: cheap_b expects $0.0022 per landed change (cheap_a $0.0035)"
    # A profile with no runs sits at the prior (the tier's cost per run, one landing in two): between them.
    name, why = by_record(["cheap_a", "new", "cheap_b"], records, seed=1)
    assert name == "cheap_b" and "new $0.0030" in why
    assert by_record(["new", "cheap_a"], {"new": _rec(0, 0, 0), "cheap_a": _rec(1, 0, 0.001)}, 1)[0] == "new"


def test_no_record_keeps_the_order_and_exploration_is_seeded():
    from bosun.engine.routing import EXPLORE_ONE_IN, by_record

    assert by_record(["a", "b"], {}, seed=0) == ("a", "")  # nothing recorded: nothing to say
    records = {"a": _rec(4, 4, 0.004), "b": _rec(4, 0, 0.004)}
    assert by_record(["a", "b"], records, seed=1)[0] == "a"
    name, why = by_record(["a", "b"], records, seed=EXPLORE_ONE_IN)  # one seed in ten explores
    assert name == "b" and why.startswith("exploring b") and "one task in 10" in why
    picks = [by_record(["a", "b"], records, seed=s)[0] for s in range(100)]
    assert picks.count("b") == 100 // EXPLORE_ONE_IN


def test_the_same_task_routes_the_same_way():
    from bosun.engine.routing import _seed

    assert _seed(task(title="x")) == _seed(task(title="x")) != _seed(task(title="y"))
