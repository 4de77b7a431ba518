"""Claude Code through bosun end to end: the real CLI, bosun's ReplayServer as the model, `bosun delegate`."""

from __future__ import annotations

import pytest

from tests.e2e.worker_support import FAULTS, KEY_ENV, check_fault, check_fix, check_read_only, check_resume

pytestmark = [pytest.mark.slow, pytest.mark.cli]
ADAPTER = "claude"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


@pytest.mark.smoke  # `make test`: one real CLI per wire API
def test_claude_fixes_the_bug(cli, repo, task_file):
    check_fix(cli, repo, task_file, ADAPTER)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_claude_provider_failures_are_classified(cli, repo, task_file, fault):
    check_fault(cli, repo, task_file, ADAPTER, fault)


def test_claude_read_only_mode_cannot_edit(cli, repo, tmp_path):
    res, tools = check_read_only(cli, repo, tmp_path, ADAPTER, None)
    assert "Read" in tools and not {"Edit", "Write", "NotebookEdit", "WebFetch"} & set(tools), tools


def test_claude_resume_continues_the_session(cli, repo, task_file):
    check_resume(cli, repo, task_file, ADAPTER)
