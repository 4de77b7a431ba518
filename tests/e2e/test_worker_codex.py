"""Codex through bosun end to end: the real CLI, bosun's ReplayServer as the model, `bosun delegate`."""

from __future__ import annotations

import pytest

from tests.e2e.worker_support import (
    FAULTS,
    KEY_ENV,
    READ_ONLY_EDIT_SCRIPT,
    check_fault,
    check_fix,
    check_read_only,
    check_resume,
)

pytestmark = [pytest.mark.slow, pytest.mark.cli]
ADAPTER = "codex"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


@pytest.mark.smoke  # `make test`: one real CLI per wire API
def test_codex_fixes_the_bug(cli, repo, task_file):
    check_fix(cli, repo, task_file, ADAPTER)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_codex_provider_failures_are_classified(cli, repo, task_file, fault):
    check_fault(cli, repo, task_file, ADAPTER, fault)


def test_codex_read_only_mode_cannot_edit(cli, repo, tmp_path):
    res, tools = check_read_only(cli, repo, tmp_path, ADAPTER, READ_ONLY_EDIT_SCRIPT)
    assert "apply_patch" in tools  # advertised, but the read-only sandbox refuses the patch


def test_codex_resume_continues_the_session(cli, repo, task_file):
    check_resume(cli, repo, task_file, ADAPTER)


def test_codex_unpacks_no_bundled_skills_and_lists_none_to_the_model(cli, repo, task_file, tmp_path):
    # Codex would unpack its bundled skills (image generation, a skill installer that fetches from
    # GitHub, ...) into every run's HOME and list them in every request: tokens and tools a worker
    # has no use for.
    from pathlib import Path

    from bosun.replay import ReplayServer
    from tests.e2e.worker_support import API, FIX_SCRIPT, add_profile

    log = tmp_path / "requests.jsonl"
    with ReplayServer(FIX_SCRIPT, log_path=log) as srv:
        profile = add_profile(repo, ADAPTER, srv.base_url(API[ADAPTER]))
        code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", profile, "--json")
    assert code == 0 and res["state"] == "verified", res
    requests = log.read_text()
    assert requests.count('"model"') >= 3  # the log holds the requests' bodies
    assert "imagegen" not in requests and "skill-installer" not in requests
    codex_home = Path(res["run_dir"]) / "home" / ADAPTER / ".codex"
    assert (codex_home / "config.toml").is_file()
    assert not (codex_home / "skills" / ".system").exists()
