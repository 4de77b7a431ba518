from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bosun import effort


def test_a_level_the_cli_accepts_passes_unchanged():
    assert effort.choose("claude", "some-model", "high") == effort.EffortChoice("high", "high", None)


def test_a_level_the_cli_lacks_snaps_to_the_nearest_with_a_warning():
    choice = effort.choose("claude", "some-model", "minimal")
    assert choice.level == "low" and "not accepted by claude" in (choice.warning or "")
    assert effort.choose("codex", "deepseek-chat", "max").level == "xhigh"


def test_a_known_model_family_narrows_the_cli_list():
    choice = effort.choose("codex", "gpt-5-mini", "xhigh")
    assert choice.level == "high" and "gpt-5-mini with codex" in (choice.warning or "")
    assert effort.choose("codex", "openai/gpt-5.1", "minimal").level in ("none", "low")


def test_a_tie_goes_to_the_cheaper_level():
    assert effort.snap("medium", ("low", "high")) == "low"


def test_an_adapter_without_the_setting_passes_nothing():
    choice = effort.choose("gemini", "m", "high")
    assert choice.level is None and "ignored" in (choice.warning or "")
    assert effort.choose("gemini", "m", None) == effort.EffortChoice(None, None, None)


@pytest.mark.parametrize(("adapter", "argv"), [("claude", ["--effort", "low"]),
                                                ("codex", ["-c", 'model_reasoning_effort="low"'])])
def test_cli_args(adapter, argv):
    assert effort.cli_args(adapter, "low") == argv


@given(st.sampled_from(effort.SCALE), st.sampled_from(sorted(effort.CLI_LEVELS)),
       st.sampled_from(["gpt-5", "gpt-5.1", "o3", "mystery", "gpt-5.2-codex-max"]))
def test_the_chosen_level_is_always_one_the_cli_accepts(level, adapter, model):
    choice = effort.choose(adapter, model, level)
    assert choice.level in effort.accepted(adapter, model)
    assert (choice.warning is None) == (choice.level == level)
