"""Kilo through bosun end to end: the real CLI, bosun's ReplayServer as the model, `bosun delegate`.

Kilo takes 10-15 s to start, so only the fix (with a denied `git commit`) and one provider failure run
here; the parsing of its other failures is covered by the recorded streams (tests/workers/test_parse_kilo.py).
"""

from __future__ import annotations

import pytest

from tests.e2e.worker_support import KEY_ENV, check_fault, check_fix

pytestmark = [pytest.mark.slow, pytest.mark.cli]
ADAPTER = "kilo"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


def test_kilo_fixes_the_bug(cli, repo, task_file):
    check_fix(cli, repo, task_file, ADAPTER)


def test_kilo_bad_key_is_auth(cli, repo, task_file):
    check_fault(cli, repo, task_file, ADAPTER, "auth")
