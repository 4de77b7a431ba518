"""One delegation parses its task once and reads each repository's config once for the engine's
decisions; a long-lived context still sees the config change."""

from __future__ import annotations

from pathlib import Path

import pytest

from bosun.core import config
from bosun.core.contract import load_contract
from bosun.engine import context
from bosun.engine.context import RunContext
from bosun.engine.delegation import delegate
from bosun.store.db import open_store


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"config": 0, "engine": 0, "task": 0}
    real_settings, real_task = config.load_settings, context.load_task

    def counting_settings(*args, **kwargs):
        counts["config"] += 1
        return real_settings(*args, **kwargs)

    def engine_settings(*args, **kwargs):
        counts["engine"] += 1
        return real_settings(*args, **kwargs)

    def counting_task(run_id: str):
        counts["task"] += 1
        return real_task(run_id)

    monkeypatch.setattr(config, "load_settings", counting_settings)  # pre-flight imports it lazily
    monkeypatch.setattr(context, "load_settings", engine_settings)
    monkeypatch.setattr(context, "load_task", counting_task)
    monkeypatch.setattr("bosun.engine.lifecycle.load_task", counting_task)
    return counts


def test_a_delegation_reads_its_task_never_and_the_engine_reads_the_config_once(reads, repo, task_file):
    run = delegate(RunContext(open_store()), load_contract(task_file), repo, "fix", auto_approve=True)
    assert run.state == "cleaned" and run.merged_commit
    assert reads["task"] == 0
    # The pre-flight checks read it and the context keeps it: no verb reads it again. (Each
    # verification still asks for its sandbox setting on its own.)
    assert reads["engine"] == 0, reads
    assert reads["config"] >= 1


def test_an_unpinned_context_sees_a_config_edit(repo: Path):
    ctx = RunContext(open_store())
    toml = repo / "bosun.toml"
    original = toml.read_text()
    toml.write_text("max_concurrent_runs = 7\n" + original)
    assert ctx.settings(repo).max_concurrent_runs == 7
    pinned = ctx.pinned()
    assert pinned.settings(repo).max_concurrent_runs == 7
    toml.write_text("max_concurrent_runs = 9\n" + original)
    assert ctx.settings(repo).max_concurrent_runs == 9
    assert pinned.settings(repo).max_concurrent_runs == 7
