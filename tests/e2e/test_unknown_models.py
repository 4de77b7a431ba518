"""Every worker CLI with model names it has never heard of, as real users' providers have.

A CLI that does not know a model may warn (Codex: "Model metadata for ... not found. Defaulting to
fallback metadata"), change the tools it offers or price nothing; none of that may fail the run. Each
adapter fixes the sample bug through the replay server with such a name, and the run must land.
"""

from __future__ import annotations

import pytest

from bosun.replay import ReplayServer
from tests.e2e.worker_support import API, KEY_ENV, add_profile, binary, events

pytestmark = [pytest.mark.slow, pytest.mark.cli]

UNKNOWN_MODELS = ("deepseek-chat", "qwen3-coder-30b-a3b", "my-org/llama-70b-instruct")
ADAPTERS = ("codex", "claude", "qwen", "gemini", "kilo", "opencode", "pi")
FIX = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
    {"say": "Fixed add() in src/calc.py."},
]
BASE_URL_FLAVOUR = {**API, "opencode": "opencode", "pi": "pi", "native": "openai"}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


def _native_profile(repo, base_url: str, model: str) -> str:
    with (repo / "bosun.toml").open("a") as fh:
        fh.write(f'\n[profiles.nat]\nadapter = "native"\nmodel = "{model}"\nbase_url = "{base_url}"\n'
                 f'api_key_env = "{KEY_ENV}"\n')
    return "nat"


def _cases() -> list[object]:
    """Codex (which warns about unknown names) with every name; each other adapter with one plain name
    in turn and the provider-prefixed one (a "/" in a model name is what CLIs most often misread)."""
    cases: list[object] = [pytest.param("codex", "deepseek-chat", marks=pytest.mark.smoke)]
    cases += [("codex", m) for m in UNKNOWN_MODELS[1:]]
    for i, adapter in enumerate(a for a in (*ADAPTERS, "native") if a != "codex"):
        cases += [(adapter, UNKNOWN_MODELS[i % 2]), (adapter, UNKNOWN_MODELS[2])]
    return cases


@pytest.mark.parametrize(("adapter", "model"), _cases())
def test_an_unknown_model_name_does_not_fail_the_run(cli, repo, tmp_path, adapter, model):
    from tests.conftest import task_yaml

    task_file = task_yaml(tmp_path / "task.json", timeout_s=300)  # Kilo starts slowly on a busy machine
    with ReplayServer({"turns": FIX, "models": [model]}) as srv:  # the provider knows it
        base_url = srv.base_url(BASE_URL_FLAVOUR[adapter])
        if adapter == "native":
            profile = _native_profile(repo, base_url, model)
        else:
            binary(adapter)
            profile = add_profile(repo, adapter, base_url, model=model)
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", profile, "--auto-approve", "--json")
        errors = list(srv.errors)
        seen_models = {str(r.get("model")) for r in srv.requests if r.get("source") == "turn"}
    assert not errors, errors
    assert code == 0 and res["state"] == "cleaned", (res["state"], res["error"], events(res)[-5:])
    assert "return a + b" in (repo / "src" / "calc.py").read_text()
    assert res["final_message"] == FIX[-1]["say"], res
    assert seen_models == {model}, seen_models
