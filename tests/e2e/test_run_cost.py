"""What a run cost is summed over every worker turn it took: `work --resume` adds its turn's cost to
the first attempt's, on every surface (the verb's result, `show`, the receipt, history, savings), each
turn priced at the prices of the profile that ran it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import task_yaml

pytestmark = pytest.mark.slow

ONE_TURN = round((1200 * 0.27 + 80 * 1.1) / 1_000_000, 6)  # the scripted `fix` worker's usage, priced


def test_cost_counts_every_turn_of_the_run_on_every_surface(cli, repo, tmp_path):
    (repo / "bosun.toml").write_text((repo / "bosun.toml").read_text().replace(
        "[profiles.fix]\n", "[profiles.fix]\nprices = {input = 0.27, output = 1.1}\n"))
    code, res = cli("delegate", str(task_yaml(tmp_path / "t.json")), "--repo", str(repo), "--json")
    assert code == 0 and res["cost_usd"] == pytest.approx(ONE_TURN), res
    code, res = cli("work", res["id"], "--resume", "also tidy the docstring", "--json")
    assert code == 0 and res["usage"]["input_tokens"] == 2400, res
    assert res["cost_usd"] == pytest.approx(2 * ONE_TURN), res
    code, shown = cli("show", res["id"], "--json")
    assert shown["cost_usd"] == pytest.approx(2 * ONE_TURN)
    receipt = json.loads(Path(shown["run_dir"], "metrics.json").read_text())
    assert receipt["worker"]["cost_usd"] == pytest.approx(2 * ONE_TURN), receipt["worker"]
    code, hist = cli("history", "--json")
    assert hist["runs"][0]["facts"]["worker_cost_usd"] == pytest.approx(2 * ONE_TURN), hist["runs"][0]["facts"]
    code, saved = cli("savings", "--repo", str(repo), "--json")
    assert saved["worker"]["cost_usd"] == pytest.approx(2 * ONE_TURN), saved
