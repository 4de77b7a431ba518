"""How a run is cross-reviewed: a task's ``review:`` or bosun.toml's ``[review]``.

A leaf of the core layer: the task contract and the settings both use it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["P0", "P1", "P2", "P3"]


class ReviewConfig(BaseModel):
    """Cross-review: a second profile reads the verified change; its P0/P1 findings go back to the worker."""

    model_config = ConfigDict(extra="forbid")

    profile: str | None = Field(default=None, description="the reviewer's profile; must not be the worker's")
    rounds: int = Field(default=2, ge=0, le=3, description="how many times the reviewer reads the change (0: "
                        "no review); the worker revises its P0/P1 findings between rounds")
    block_on: Severity | None = Field(
        default=None, description="an open finding this severe or worse refuses the change (unset: open P0/P1 "
        "findings need a person)")


def effective_review(task_review: ReviewConfig | None, settings_review: ReviewConfig | None) -> ReviewConfig | None:
    """The review a run gets: the task's ``review:`` when it has one (``rounds: 0`` turns bosun.toml's
    off), else bosun.toml's ``[review]``; None when there is none."""
    chosen = task_review if task_review is not None else settings_review
    return chosen if chosen is not None and chosen.rounds > 0 else None
