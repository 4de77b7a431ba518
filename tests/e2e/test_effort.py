"""Reasoning effort reaches each CLI that has the setting, snapped to a level it accepts.

A level the CLI would refuse (Claude Code has no ``minimal``; Codex and Pi no ``max``) must not fail
the run: bosun snaps it, records a warning, and the provider's request carries the snapped level where
the CLI puts it on the wire.
"""

from __future__ import annotations

import pytest

from bosun.replay import ReplayServer
from tests.e2e.worker_support import API, KEY_ENV, add_profile, binary, events

pytestmark = [pytest.mark.slow, pytest.mark.cli]

FIX = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
    {"say": "Fixed add() in src/calc.py."},
]
FLAVOUR = {**API, "opencode": "opencode", "pi": "pi"}
# adapter -> (requested, snapped)
CASES = {"claude": ("minimal", "low"), "codex": ("max", "xhigh"), "pi": ("max", "high"),
         "opencode": ("minimal", "minimal"), "kilo": ("high", "high")}
ON_THE_WIRE = {"claude": lambda body: (body.get("output_config") or {}).get("effort"),
               "codex": lambda body: (body.get("reasoning") or {}).get("effort"),
               "pi": lambda body: body.get("reasoning_effort"),
               "opencode": lambda body: body.get("reasoning_effort"),
               "kilo": lambda body: body.get("reasoning_effort")}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


@pytest.mark.parametrize("adapter", sorted(CASES))
def test_effort_is_snapped_and_passed(cli, repo, tmp_path, adapter):
    from tests.conftest import task_yaml

    requested, snapped = CASES[adapter]
    task_file = task_yaml(tmp_path / "task.json", timeout_s=300)
    with ReplayServer({"turns": FIX}) as srv:
        binary(adapter)
        profile = add_profile(repo, adapter, srv.base_url(FLAVOUR[adapter]), effort=requested)
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", profile, "--auto-approve", "--json")
        bodies = [r.get("body") or {} for r in srv.requests if r.get("source") == "turn"]
        errors = list(srv.errors)
    assert not errors, errors
    assert code == 0 and res["state"] == "cleaned", (res["state"], res["error"], events(res)[-5:])
    warnings = [e["message"] for e in events(res) if e["type"] == "warning" and "effort" in e["message"]]
    if requested != snapped:
        assert len(warnings) == 1 and f"using {snapped!r}" in warnings[0], warnings
    else:
        assert not warnings, warnings
    assert bodies and {ON_THE_WIRE[adapter](b) for b in bodies} == {snapped}, bodies[0]


def test_an_adapter_without_the_setting_says_it_ignored_it(cli, repo, tmp_path):
    from tests.conftest import task_yaml

    with ReplayServer({"turns": FIX}) as srv:
        profile = add_profile(repo, "qwen", srv.base_url(FLAVOUR["qwen"]), effort="high")
        code, res = cli("delegate", str(task_yaml(tmp_path / "t.json", timeout_s=300)), "--repo", str(repo),
                        "--profile", profile, "--json")
    assert code == 0 and res["state"] == "verified", (res["state"], res["error"])
    warnings = [e["message"] for e in events(res) if e["type"] == "warning" and "effort" in e["message"]]
    assert warnings == ["effort 'high' ignored: the qwen adapter has no effort setting"]
