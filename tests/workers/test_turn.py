"""One worker turn, guarded (workers/turn.py): a real command worker, a real repository, and what the
turn finds the worker did to the user's git dir."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bosun.workers.command import CommandWorker
from bosun.workers.turn import merged_tampering, run_turn, tampering_message
from tests.workers.parse_support import make_ctx

TAMPER = textwrap.dedent("""\
    import pathlib, sys
    git = pathlib.Path(sys.argv[1]) / ".git"
    (git / "hooks" / "pre-commit").write_text("#!/bin/sh\\nexit 0\\n")
    with (git / "config").open("a") as fh:
        fh.write("[core]\\n\\thooksPath = /tmp/elsewhere\\n")
""")


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "user"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q",
                                                 "--allow-empty", "-m", "start"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    return repo


def turn_of(tmp_path: Path, script: str, repo: Path):
    (tmp_path / "w.py").write_text(script)
    ctx = make_ctx(tmp_path / "run", "command", command=[sys.executable, str(tmp_path / "w.py"), str(repo)])
    return CommandWorker(), ctx


def test_a_turn_that_changes_the_user_git_dir_is_caught_and_put_back(tmp_path: Path, user_repo: Path) -> None:
    config = (user_repo / ".git" / "config").read_bytes()
    worker, ctx = turn_of(tmp_path, TAMPER, user_repo)
    turn = run_turn(worker, ctx, user_repo)
    assert turn.result.status == "ok"
    found = turn.git_tampered
    assert found is not None
    assert {"config", "hooks/pre-commit"} <= set(found["changed"])
    assert set(found["restored"]) == set(found["changed"]) and not found["failed"]
    assert (user_repo / ".git" / "config").read_bytes() == config
    assert not (user_repo / ".git" / "hooks" / "pre-commit").exists()
    assert "hooks/pre-commit" in tampering_message(found) and "restored" in tampering_message(found)


def test_a_turn_that_leaves_the_git_dir_alone_reports_nothing(tmp_path: Path, user_repo: Path) -> None:
    worker, ctx = turn_of(tmp_path, "print('hello')\n", user_repo)
    turn = run_turn(worker, ctx, user_repo)
    assert turn.result.status == "ok" and turn.git_tampered is None


def test_what_a_failed_attempt_changed_stays_on_record_after_its_fallback() -> None:
    first = {"changed": ["config"], "restored": ["config"], "failed": []}
    then = {"changed": ["hooks/pre-commit", "config"], "restored": ["hooks/pre-commit"], "failed": ["config"]}
    assert merged_tampering(first, None) == first
    assert merged_tampering(None, then) == then
    both = merged_tampering(first, then)
    assert both == {"changed": ["config", "hooks/pre-commit"], "restored": ["config", "hooks/pre-commit"],
                    "failed": ["config"]}
