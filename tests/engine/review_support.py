"""Runs with a cross-review record for the tests of the surfaces that show one (receipt, `show`,
history, savings, dashboard): real delegations through the scripted worker and reviewer."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from bosun.store.run import Run
from tests.conftest import WORKER, git
from tests.web.support import delegated, shared_home

REVIEWER = "xreviewer"
PRICES = "prices = {input = 1.0, output = 2.0}"
# The scripted reviewer's tokens per round (tests/workers/scripted.py mode_xreview), at PRICES.
ROUND_COST = round((500 * 1.0 + 30 * 2.0) / 1_000_000, 6)


def add_profiles(repo: Path) -> None:
    """The planting worker and the scripted reviewer, priced, committed so the repository is clean."""
    text = (repo / "bosun.toml").read_text()
    for mode, name, env in (("planted", "planted", ""), ("xreview", REVIEWER, 'env = ["XREVIEW"]\n')):
        text += (f'\n[profiles.{name}]\nadapter = "command"\n{env}'
                 f'command = ["{sys.executable}", "{WORKER}", "{mode}"]\n{PRICES}\n')
    (repo / "bosun.toml").write_text(text)
    git(repo, "commit", "-q", "-am", "review profiles")


def reviewed(repo: Path, variant: str = "invent", rounds: int = 2) -> Run:
    """A run the reviewer read ``rounds`` times. ``invent``: round 1 finds the planted P1, a P2 citing
    src/calc.py:999 (no such line) and a P3; the worker revises; round 2 finds the P2 and the P3."""
    old = os.environ.get("XREVIEW")
    os.environ["XREVIEW"] = variant
    try:
        return delegated(repo, "planted", title="Fix add() with review",
                         review={"profile": REVIEWER, "rounds": rounds})
    finally:
        if old is None:
            os.environ.pop("XREVIEW", None)
        else:
            os.environ["XREVIEW"] = old


def make_runs(repo: Path) -> dict[str, Run]:
    """One reviewed run and one without review, in the same home."""
    add_profiles(repo)
    return {"reviewed": reviewed(repo), "plain": delegated(repo, "fix", title="Fix add() plainly")}


def record(**over: Any) -> dict[str, Any]:
    """A hand-written record of one round, for what a scripted reviewer does not say."""
    finding = {"severity": "P1", "path": "src/calc.py", "line": 2, "claim": "add() ignores b",
               "suggested_fix": "return a + b", "citation": None}
    entry = {"round": 1, "profile": "reviewer", "adapter": "command", "tree": "t" * 40, "diff_sha256": "d" * 64,
             "status": "findings", "error": None, "summary": "one real bug", "findings": [finding],
             "invalid_citations": [], "usage": None, "cost_usd": 0.25, "duration_s": 1.5, "revised": None}
    doc = {"config": {"profile": "reviewer", "rounds": 1, "block_on": None}, "rounds": [entry],
           "usage": None, "cost_usd": 0.25, "revise_rounds": 0}
    doc.update(over)
    return doc


def reviewed_runs_fixtures(name: str) -> tuple[Any, Any]:
    """A test module's fixtures ``shared`` (the reviewed runs, made once per module under a home of
    their own) and ``runs`` (that home set for one test): ``shared, runs = reviewed_runs_fixtures(...)``."""

    @pytest.fixture(scope="module")
    def shared(tmp_path_factory: pytest.TempPathFactory) -> Any:
        return shared_home(tmp_path_factory.mktemp(name), make_runs)

    @pytest.fixture
    def runs(shared: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
        home, made = shared
        monkeypatch.setenv("BOSUN_HOME", str(home))
        return made

    return shared, runs
