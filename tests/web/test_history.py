"""`bosun history` and `bosun savings` over real runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bosun.apps.savings_report import card_svg, report, wall_clock
from bosun.engine.history import refresh, search
from bosun.store.db import open_store
from bosun.store.history import RunFilter, fts_query
from tests.web.support import delegated


def bosun(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bosun", *args], capture_output=True, text=True, cwd=cwd)


def test_search_finds_paths_gates_final_message_and_errors(repo: Path) -> None:
    ok = delegated(repo, "fix", title="Repair the adder")
    rejected = delegated(repo, "edit_locked", title="Tweak tests")
    failed = delegated(repo, "fail_429", title="Provider trouble")
    store = open_store()
    assert refresh(store) >= 0
    ids = lambda text, **kw: [r["id"] for r in search(store, RunFilter(text=text, **kw))]  # noqa: E731
    assert ids("adder") == [ok.id]  # title
    assert ok.id in ids("calc.py")  # a changed path (a phrase, not FTS syntax)
    assert ids("Fixed add") == [ok.id]  # the worker's final message
    assert ids("LOCKED_PATH") == [rejected.id] or rejected.id in ids("tests/test_calc.py")
    assert ids("Too Many Requests") == [failed.id]  # the error
    assert ids("subtracts", state="verified") == [ok.id]  # the prompt, filtered by state
    assert ids("subtracts", profile="fail_429") == [failed.id]
    assert ids("nothing-like-this") == []
    assert ids('"unbalanced') == []  # user text never reaches FTS as syntax


def test_index_follows_state_changes(repo: Path) -> None:
    from bosun.engine.context import RunContext
    from bosun.engine.teardown import discard

    run = delegated(repo, "fix")
    store = open_store()
    assert [r["state"] for r in search(store, RunFilter(text="calc.py"))] == ["verified"]
    discard(RunContext(store), run.id)
    assert [r["state"] for r in search(store, RunFilter(text="calc.py"))] == ["cleaned"]


def test_history_cli_json_and_text(repo: Path) -> None:
    run = delegated(repo, "fix")
    out = bosun("history", "calc.py", "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 0 and doc["count"] == 1 and doc["runs"][0]["id"] == run.id
    assert "[calc.py]" in doc["runs"][0]["snippet"]
    assert doc["runs"][0]["facts"]["proven"] == 1
    text = bosun("history", "calc.py", "--since", "today").stdout
    assert run.id in text
    assert "no runs match" in bosun("history", "calc.py", "--until", "2001-01-01").stdout
    bad = bosun("history", "x", "--since", "yesterdayish")
    assert bad.returncode == 2 and "YYYY-MM-DD" in bad.stderr


def test_savings_totals_and_card(repo: Path, tmp_path: Path) -> None:
    delegated(repo, "fix")
    delegated(repo, "fix")
    rep = report(open_store())
    t = rep["totals"]
    assert t["runs"] == 2 and t["proven"] == 2
    assert t["worker_tokens"] == 2 * (1200 + 80)
    assert t["parent_estimated_direct_tokens"] > 0 and t["compression"] is not None
    assert rep["by_profile"][0]["profile"] == "fix" and rep["per_day"][0]["runs"] == 2
    svg = card_svg(rep)
    assert svg.startswith("<svg") and "bosun" in svg and "<script" not in svg and "href" not in svg
    assert "2 runs, 2 proven" in card_svg(rep)


def test_measured_parent_tokens_are_counted(repo: Path) -> None:
    run = delegated(repo, "fix")
    store = open_store()
    store.merge_data(run.id, parent_measured={"input_tokens": 900, "output_tokens": 100})
    t = report(store)["totals"]
    assert t["parent_measured_tokens"] == 1000 and t["parent_measured_runs"] == 1


def test_wall_clock_is_the_union_of_intervals() -> None:
    assert wall_clock([(0, 10), (5, 15), (20, 25)]) == 20
    assert wall_clock([]) == 0


def test_fts_query_quotes_every_word() -> None:
    assert fts_query('calc.py a"b pre*') == '"calc.py" "a""b" "pre"*'
