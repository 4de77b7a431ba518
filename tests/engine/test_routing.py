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
