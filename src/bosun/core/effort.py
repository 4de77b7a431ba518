"""Reasoning effort: the levels a profile may ask for, the levels each CLI and model accepts, snapping.

A profile's ``effort`` is one word of one ordered scale. CLIs spell the setting differently and accept
different subsets (Claude Code: low..max; Codex: none..xhigh; Pi: none..high: each adapter's
``CliSpec`` says which and how), and some model families accept fewer still. A level the CLI or the model does not accept is snapped to the nearest
level it does (a tie goes to the cheaper one) and the run records a warning saying so: a request the
CLI would reject or silently ignore never reaches it. For a model bosun knows nothing about, only the
CLI's own list applies, because a user's provider may serve any model under any name.
"""

from __future__ import annotations

import fnmatch
from collections import namedtuple

TYPE_CHECKING = False  # typing's would import typing: `bosun models` shows the accepted levels

SCALE = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

# Model families whose accepted levels are published; first matching glob wins (lower-cased names).
MODEL_LEVELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("gpt-5*-codex-max*", ("low", "medium", "high", "xhigh")),
    ("gpt-5.1", ("none", "low", "medium", "high")),
    ("gpt-5.1-20*", ("none", "low", "medium", "high")),
    ("gpt-5", ("minimal", "low", "medium", "high")),
    ("gpt-5-20*", ("minimal", "low", "medium", "high")),
    ("gpt-5-mini*", ("minimal", "low", "medium", "high")),
    ("gpt-5-nano*", ("minimal", "low", "medium", "high")),
    ("o[134]", ("low", "medium", "high")),
    ("o[134]-*", ("low", "medium", "high")),
)


if TYPE_CHECKING:
    from typing import NamedTuple

    class EffortChoice(NamedTuple):
        requested: str | None
        level: str | None  # what the CLI is given; None: nothing is passed
        warning: str | None  # why it differs from the request
else:  # the same, without importing typing (or dataclasses)
    EffortChoice = namedtuple("EffortChoice", ("requested", "level", "warning"))


def accepted(cli: tuple[str, ...], model: str | None) -> tuple[str, ...]:
    """The levels the CLI (its ``CliSpec.effort_levels``) and, when bosun knows its family, the model
    both accept."""
    family = model_levels(model)
    if family is None:
        return cli
    both = tuple(level for level in cli if level in family)
    return both or cli


def model_levels(model: str | None) -> tuple[str, ...] | None:
    name = (model or "").lower().rsplit("/", 1)[-1]
    for pattern, levels in MODEL_LEVELS:
        if name and fnmatch.fnmatchcase(name, pattern):
            return levels
    return None


def snap(level: str, legal: tuple[str, ...]) -> str:
    """The legal level nearest to ``level`` on the scale; a tie goes to the lower (cheaper) one."""
    want = SCALE.index(level)
    return min(legal, key=lambda lv: (abs(SCALE.index(lv) - want), SCALE.index(lv)))


def choose(adapter: str, cli: tuple[str, ...], model: str | None, requested: str | None) -> EffortChoice:
    """The level to pass for ``requested``, given the adapter's CLI levels ``cli``."""
    if requested is None:
        return EffortChoice(None, None, None)
    legal = accepted(cli, model)
    if not legal:
        return EffortChoice(requested, None, f"effort {requested!r} ignored: the {adapter} adapter has no effort setting")
    level = snap(requested, legal)
    if level == requested:
        return EffortChoice(requested, level, None)
    whose = f"{model} with {adapter}" if model_levels(model) is not None else adapter
    return EffortChoice(requested, level, f"effort {requested!r} is not accepted by {whose} "
                                          f"(accepted: {', '.join(legal)}); using {level!r}")
