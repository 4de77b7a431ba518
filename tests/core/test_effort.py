from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bosun.core import effort
from bosun.core.adapters import NAMES, effort_levels
from bosun.core.config import Profile
from bosun.workers.registry import effort_args


def choose(adapter, model, level):
    return effort.choose(adapter, effort_levels(adapter), model, level)


def test_a_level_the_cli_accepts_passes_unchanged():
    assert choose("claude", "some-model", "high") == effort.EffortChoice("high", "high", None)


def test_a_level_the_cli_lacks_snaps_to_the_nearest_with_a_warning():
    choice = choose("claude", "some-model", "minimal")
    assert choice.level == "low" and "not accepted by claude" in (choice.warning or "")
    assert choose("codex", "deepseek-chat", "max").level == "xhigh"


def test_a_known_model_family_narrows_the_cli_list():
    choice = choose("codex", "gpt-5-mini", "xhigh")
    assert choice.level == "high" and "gpt-5-mini with codex" in (choice.warning or "")
    assert choose("codex", "openai/gpt-5.1", "minimal").level in ("none", "low")


def test_a_tie_goes_to_the_cheaper_level():
    assert effort.snap("medium", ("low", "high")) == "low"


def test_an_adapter_without_the_setting_passes_nothing():
    choice = choose("gemini", "m", "high")
    assert choice.level is None and "ignored" in (choice.warning or "")
    assert choose("gemini", "m", None) == effort.EffortChoice(None, None, None)


@pytest.mark.parametrize(("adapter", "base_url", "argv"), [
    ("claude", None, ["--effort", "low"]),
    ("codex", None, ["-c", 'model_reasoning_effort="low"']),
    ("pi", None, ["--thinking", "low"]),
    ("opencode", None, ["--variant", "low"]),
    ("kilo", "http://127.0.0.1:9/v1", []),  # with its own endpoint the level travels in the config
    ("gemini", None, []),
    ("command", None, []),
])
def test_each_adapter_says_how_its_cli_is_told_the_level(adapter, base_url, argv):
    assert effort_args(adapter, "low", Profile(adapter=adapter, base_url=base_url)) == argv


def test_the_levels_are_the_adapters_own_and_on_the_scale():
    assert effort_levels("claude") == ("low", "medium", "high", "xhigh", "max")
    assert effort_levels("command") == () and effort_levels("remote") == ()
    for name in NAMES:
        assert set(effort_levels(name)) <= set(effort.SCALE), name


@given(st.sampled_from(effort.SCALE), st.sampled_from([n for n in NAMES if effort_levels(n)]),
       st.sampled_from(["gpt-5", "gpt-5.1", "o3", "mystery", "gpt-5.2-codex-max"]))
def test_the_chosen_level_is_always_one_the_cli_accepts(level, adapter, model):
    choice = choose(adapter, model, level)
    assert choice.level in effort.accepted(effort_levels(adapter), model)
    assert (choice.warning is None) == (choice.level == level)
