"""Fixtures of the end-to-end tests: a repository with profiles for the hostile scripted workers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, git

ATTACKER = ROOT / "tests" / "workers" / "attacker.py"
MODES = ("ignore_hide", "stale_pyc", "ignored_path", "nested_repo", "own_gitdir", "forge_index", "daemon_swap",
         "tamper_git", "verify_home_pth", "mask_sub", "fix_and_add_test", "expect_buggy", "special_case")


@pytest.fixture
def attack_repo(repo: Path) -> Path:
    # These attacks test bosun's own checks, the net that holds without the kernel sandbox (which
    # refuses most of them outright: tests/e2e/test_sandbox_hostile.py).
    (repo / "bosun.toml").write_text('sandbox = "off"\n' + (repo / "bosun.toml").read_text())
    lines = []
    for mode in MODES:
        lines += [f"\n[profiles.{mode}]", 'adapter = "command"',
                  f"command = [{json.dumps(sys.executable)}, {json.dumps(str(ATTACKER))}, {json.dumps(mode)}]"]
    with (repo / "bosun.toml").open("a") as fh:
        fh.write("\n".join(lines) + "\n")
    with (repo / ".gitignore").open("a") as fh:
        fh.write("build/\n")
    git(repo, "commit", "-qam", "attack profiles")
    return repo


FILES_WORKER = ROOT / "tests" / "workers" / "files.py"


@pytest.fixture
def files_repo(repo: Path) -> Path:
    """The repository with a `files` profile: a worker that writes exactly the files a test hands it."""
    with (repo / "bosun.toml").open("a") as fh:
        fh.write(f'\n[profiles.files]\nadapter = "command"\nenv = ["BOSUN_TEST_FILES"]\n'
                 f"command = [{json.dumps(sys.executable)}, {json.dumps(str(FILES_WORKER))}]\n")
    git(repo, "commit", "-qam", "files profile")
    return repo
