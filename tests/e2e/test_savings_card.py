"""`bosun savings --card`: the shareable SVG card of what delegation saved."""

from __future__ import annotations

import xml.etree.ElementTree as ET


def test_savings_writes_a_card_and_per_day_figures(cli, repo, task_file, tmp_path):
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0, res
    card = tmp_path / "card.svg"
    code, out = cli("savings", "--repo", str(repo), "--card", str(card), "--since", "2020-01-01", "--json")
    assert code == 0, out
    assert out["report"]["totals"]["runs"] == 1
    assert out["report"]["per_day"] and out["report"]["by_profile"][0]["profile"] == "fix"
    root = ET.fromstring(card.read_text())
    assert root.tag.endswith("svg")
    code, out = cli("savings", "--repo", str(repo), "--since", "yesterday", "--json")
    assert code == 2 and "YYYY-MM-DD" in out["error"]["hint"]
