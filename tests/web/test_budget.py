"""Budgets: refusal before dispatch, a stop mid-run from the streamed usage, the diff kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bosun.core.errors import BosunError
from bosun.core.paths import run_dir
from bosun.engine.budget import BudgetExceeded, month_start
from bosun.engine.context import RunContext
from bosun.engine.delegation import delegate
from bosun.store.db import open_store
from tests.conftest import git, task_yaml
from tests.web.support import contract

# The paced worker reports 8 steps of 20,000 input and 2,000 output tokens: $0.03 a step at these prices.
PRICES = "prices = { input = 1.0, cached_input = 0.1, output = 5.0 }\n"


def configure(repo: Path, budget: str) -> None:
    toml = (repo / "bosun.toml").read_text().replace("[profiles.paced]\n", "[profiles.paced]\n" + PRICES)
    (repo / "bosun.toml").write_text(toml + "\n[budget]\n" + budget)
    git(repo, "commit", "-qam", "budget")


def events(run_id: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir(run_id) / "events.jsonl").read_text().splitlines()]


def test_worker_is_stopped_at_the_cap_and_its_diff_is_kept(repo: Path) -> None:
    configure(repo, "per_task_usd = 0.10\n")
    ctx = RunContext(open_store())
    created: list[str] = []
    with pytest.raises(BosunError) as err:
        delegate(ctx, contract(), repo, "paced", on_prepared=created.append)
    assert err.value.code == "BUDGET_EXCEEDED" and "$0.10" in err.value.message
    run = ctx.store.require_run(created[0])
    assert run.state == "failed" and run.data.error["code"] == "BUDGET_EXCEEDED"
    evs = events(run.id)
    steps = [e for e in evs if e["type"] == "usage"]
    assert 4 <= len(steps) < 8  # stopped after the step that crossed $0.10, well before the end
    notes = [e["budget"] for e in evs if e.get("budget")]
    assert [n["level"] for n in notes] == ["warning", "exceeded"]  # 80% first, then the cap
    assert notes[0]["spent_usd"] >= 0.08 and notes[1]["spent_usd"] >= 0.10
    # What the worker wrote stays: in the worktree and as final.patch.
    assert "return a + b" in (Path(run.worktree) / "src" / "calc.py").read_text()
    assert "+    return a + b" in (run_dir(run.id) / "final.patch").read_text()
    assert 0.10 <= run.data.live_usage["cost_usd"] < 0.24


def test_a_reached_cap_refuses_before_dispatch(repo: Path, tmp_path: Path) -> None:
    configure(repo, "daily_usd = 0.05\n")
    ctx = RunContext(open_store())
    with pytest.raises(BosunError) as first:
        delegate(ctx, contract(), repo, "paced")
    assert first.value.code == "BUDGET_EXCEEDED"  # stopped at the daily cap
    before = len(ctx.store.list_runs())
    with pytest.raises(BudgetExceeded) as refused:
        delegate(ctx, contract(), repo, "paced")
    assert refused.value.exit_code == 2 and "daily_usd" in refused.value.message
    assert len(ctx.store.list_runs()) == before  # nothing was created, no token spent
    out = subprocess.run([sys.executable, "-m", "bosun", "delegate", str(task_yaml(tmp_path / "t.json")),
                          "--profile", "paced", "--repo", str(repo)], capture_output=True, text=True)
    assert out.returncode == 2 and "of $0.0500 (daily_usd)" in out.stderr and "hint:" in out.stderr


def test_max_usd_that_would_overrun_a_cap_is_refused(repo: Path) -> None:
    configure(repo, "monthly_usd = 1.0\n")
    with pytest.raises(BudgetExceeded) as refused:
        delegate(RunContext(open_store()), contract(max_usd=2.5), repo, "paced")
    assert "would exceed" in refused.value.message and "monthly_usd" in refused.value.message
    assert "lower the task's max_usd to $1.0000" in refused.value.hint


def test_month_start() -> None:
    assert month_start(1_764_590_000.0) == 1_764_547_200.0  # 2025-12-01 00:00 UTC


def test_the_80_percent_warning_reaches_the_notify_command(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "notified.jsonl"
    hook = f"import sys; open({str(out)!r}, 'a').write(sys.stdin.read() + '\\n')"
    configure(repo, "per_task_usd = 0.10\n")
    with (repo / "bosun.toml").open("a") as fh:
        fh.write(f"\n[notify]\ncommand = [{json.dumps(sys.executable)}, \"-c\", {json.dumps(hook)}]\n")
    git(repo, "commit", "-qam", "notify")
    ctx = RunContext(open_store())
    with pytest.raises(BosunError) as err:
        delegate(ctx, contract(), repo, "paced")
    assert err.value.code == "BUDGET_EXCEEDED"
    import time

    warnings: list[dict] = []
    deadline = time.monotonic() + 10  # the warning is sent off the worker's event path
    while not warnings and time.monotonic() < deadline:
        text = out.read_text() if out.exists() else ""
        warnings = [p for p in map(json.loads, filter(str.strip, text.splitlines()))
                    if p.get("event") == "budget_warning"]
        time.sleep(0.1)
    assert warnings and warnings[0]["budget"]["level"] == "warning"
    assert warnings[0]["budget"]["spent_usd"] >= 0.08
