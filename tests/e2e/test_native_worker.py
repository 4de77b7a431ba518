"""The native worker through the real loop, against bosun's scripted model server."""

from __future__ import annotations

import time

import pytest

from bosun.replay import ReplayServer
from tests.conftest import task_yaml

FIX = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b", "usage": {"input": 900, "output": 40, "cached": 512}},
    {"say": "Fixed add().", "usage": {"input": 1000, "output": 10}},
]


def add_profile(repo, name, base_url, **extra):
    lines = [f"\n[profiles.{name}]", 'adapter = "native"', 'model = "mock-model"', f'base_url = "{base_url}"']
    for k, v in extra.items():
        lines.append(f"{k} = {v}")
    with (repo / "bosun.toml").open("a") as fh:
        fh.write("\n".join(lines) + "\n")


def test_native_fixes_the_bug_and_usage_is_summed(cli, repo, task_file):
    with ReplayServer(FIX) as srv:
        add_profile(repo, "nat", srv.base_url("openai"), prices="{ input = 1.0, cached_input = 0.1, output = 2.0 }")
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "nat", "--auto-approve", "--json")
    assert code == 0, res
    assert res["state"] == "cleaned"
    assert "return a + b" in (repo / "src" / "calc.py").read_text()
    assert res["usage"]["output_tokens"] >= 50
    assert res["usage"]["cached_input_tokens"] >= 512
    assert res["cost_usd"] > 0
    assert res["final_message"] == "Fixed add()."


@pytest.mark.parametrize(
    ("fault", "state", "error_code"),
    [
        ({"fault": 401}, "blocked", "AUTH"),
        ({"fault": 429, "retry_after": 7}, "failed", "RATE_LIMITED"),
        ({"fault": "model_not_found"}, "failed", "MODEL_UNAVAILABLE"),
        ({"fault": 500}, "failed", "TRANSIENT"),
        ({"fault": "malformed_sse"}, "failed", "TRANSIENT"),
    ],
)
def test_native_failures_are_classified(cli, repo, task_file, fault, state, error_code):
    from bosun.store.db import open_store

    with ReplayServer([fault]) as srv:
        add_profile(repo, "nat", srv.base_url("openai"))
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "nat", "--json")
    assert res["state"] == state, res
    assert res["error"]["code"] == error_code
    if error_code == "RATE_LIMITED":
        cooldowns = open_store().cooldowns()
        assert "nat" in cooldowns
        assert 0 < cooldowns["nat"]["until"] - time.time() <= 8


def test_stalled_stream_hits_the_timeout(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", timeout_s=3)
    with ReplayServer([{"fault": "stall", "stall_s": 60}]) as srv:
        add_profile(repo, "nat", srv.base_url("openai"))
        started = time.monotonic()
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "nat", "--json")
    assert code == 4, res
    assert res["error"]["code"] == "TIMEOUT"
    assert time.monotonic() - started < 30


def test_fallback_moves_to_the_next_profile_and_cools_down_the_first(cli, repo, task_file):
    with ReplayServer([{"fault": 429, "retry_after": 120}]) as bad, ReplayServer(FIX) as good:
        add_profile(repo, "first", bad.base_url("openai"), fallbacks='["second"]')
        add_profile(repo, "second", good.base_url("openai"))
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "first", "--json")
    assert code == 0, res
    assert res["state"] == "verified"
    assert res["profile"] == "second"
    from bosun.store.db import open_store

    store = open_store()
    attempts = store.attempts(res["id"])
    assert [(a["profile"], a["error_class"]) for a in attempts] == [("first", "rate_limited"), ("second", None)]
    assert "first" in store.cooldowns()


def test_missing_key_is_found_before_the_run_and_blocks_a_later_attempt(cli, repo, task_file, monkeypatch):
    monkeypatch.delenv("NOPE_KEY", raising=False)
    add_profile(repo, "keyed", "http://127.0.0.1:9/v1", api_key_env='"NOPE_KEY"')
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "keyed", "--json")
    assert code == 2 and "id" not in res  # pre-flight: nothing was created
    assert [p["code"] for p in res["problems"]] == ["MISSING_KEY"] and "NOPE_KEY" in res["problems"][0]["hint"]
    # The key goes away between prepare and work: the attempt is blocked, with the same hint.
    monkeypatch.setenv("NOPE_KEY", "k")
    code, res = cli("prepare", str(task_file), "--repo", str(repo), "--profile", "keyed", "--json")
    monkeypatch.delenv("NOPE_KEY")
    code, res = cli("work", res["id"], "--json")
    assert res["state"] == "blocked"
    assert "NOPE_KEY" in res["error"]["hint"]


def test_resume_continues_the_session(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json")
    script = [
        {"read": "src/calc.py"},
        {"say": "I looked at it; should I change it?"},
        {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
        {"say": "Done."},
    ]
    with ReplayServer(script) as srv:
        add_profile(repo, "nat", srv.base_url("openai"))
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "nat", "--json")
        assert res["state"] == "rejected"  # no change yet: NO_CHANGES and the tests fail
        code, res = cli("work", res["id"], "--resume", "Yes, fix it.", "--json")
        assert res["state"] == "worked", res
        code, res = cli("verify", res["id"], "--json")
        assert code == 0 and res["state"] == "verified"
        last = srv.requests[-1]["body"]["messages"]
    assert any(m.get("content") == "Yes, fix it." for m in last)
    assert any("should I change it" in (m.get("content") or "") for m in last)  # same conversation


def test_demo_runs(tmp_path):
    from tests.conftest import run_bosun

    out = run_bosun("demo", timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "scripted replay" in out.stdout
    assert "verdict: landable" in out.stdout and "state: landed " in out.stdout
    assert "Bosun-Run:" in out.stdout
    # The sample repo's path is printed, and so is what becomes of it (rich wraps lines: words compared).
    said = " ".join(out.stdout.split())
    assert "removed when the demo ends; `bosun demo --keep` keeps it" in said
    assert said.endswith("`bosun demo --keep` keeps the sample repo to look around"), said[-200:]


def test_profile_in_cooldown_is_skipped_on_the_next_run(cli, repo, task_file):
    with ReplayServer([{"fault": 429, "retry_after": 600}]) as bad, ReplayServer(FIX + FIX) as good:
        add_profile(repo, "first", bad.base_url("openai"), fallbacks='["second"]')
        add_profile(repo, "second", good.base_url("openai"))
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "first", "--json")
        assert res["profile"] == "second"
        cli("discard", res["id"], "--json")
        requests_before = len(bad.requests)
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "first", "--json")
        assert code == 0 and res["profile"] == "second"
        assert len(bad.requests) == requests_before  # the cooling profile was not even tried
    from bosun.store.db import open_store

    assert [a["profile"] for a in open_store().attempts(res["id"])] == ["second"]
