"""Shared fixtures: an isolated BOSUN_HOME per test and a sample git repository with a bug."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "workers" / "scripted.py"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test User",
    "GIT_AUTHOR_EMAIL": "user@example.com",
    "GIT_COMMITTER_NAME": "Test User",
    "GIT_COMMITTER_EMAIL": "user@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}

CALC = '''def add(a, b):
    return a - b  # bug


def sub(a, b):
    return a - b
'''

TEST_CALC = '''from calc import add, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2
'''

PYPROJECT = """[project]
name = "calc"
version = "0.1.0"

[tool.pytest.ini_options]
pythonpath = ["src"]
"""

MODES = (
    "fix", "noop", "edit_locked", "delete_test", "add_skip", "fake_key", "escape_dotdot", "escape_symlink",
    "spam", "hang", "bg_child", "git_attack", "slow_fix", "fail_429", "fail_auth", "revise", "paced",
    "tautology", "early_return", "shadow_test", "harness_patch", "fix_and_test",
)


def bosun_toml() -> str:
    # One turn per run: the tests that use this config are about one turn's verdict; repair rounds have
    # their own (tests/e2e/test_repair.py), where bosun.toml leaves the default.
    lines = ['default_profile = "fix"', "repair = 0", ""]
    for mode in MODES:
        lines.append(f"[profiles.{mode}]")
        lines.append('adapter = "command"')
        lines.append(f"command = [{sys.executable!r}, {str(WORKER)!r}, {mode!r}]".replace("'", '"'))
        lines.append("")
    return "\n".join(lines)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "bosun-home"
    monkeypatch.setenv("BOSUN_HOME", str(home))
    monkeypatch.setenv("BOSUN_CONFIG", str(tmp_path / "no-user-config.toml"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    for key in ("PARENT_AGENT", "BOSUN_PROFILE", "BOSUN_MAX_CONCURRENT_RUNS"):
        monkeypatch.delenv(key, raising=False)
    return home


def make_repo(path: Path, with_config: bool = True) -> Path:
    (path / "src").mkdir(parents=True)
    (path / "tests").mkdir()
    (path / "src" / "calc.py").write_text(CALC)
    (path / "tests" / "test_calc.py").write_text(TEST_CALC)
    (path / ".gitignore").write_text("__pycache__/\n*.pyc\n.pytest_cache/\n")
    (path / "pyproject.toml").write_text(PYPROJECT)
    if with_config:
        (path / "bosun.toml").write_text(bosun_toml())
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def task_yaml(path: Path, **over: object) -> Path:
    import json

    task = {
        "title": "Fix add()",
        "prompt": "add() subtracts; make it add. Do not touch the tests.",
        "verify": [f"{sys.executable} -m pytest -q tests"],
        "locked": ["tests/**"],
        "timeout_s": 60,
    }
    task.update(over)
    path.write_text(json.dumps(task))
    return path


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    return task_yaml(tmp_path / "task.json")


def run_bosun(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(ROOT / "src")
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "bosun", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run the bosun CLI in-process; returns (exit code, parsed JSON or raw stdout)."""
    import json

    from bosun.cli.main import main

    def call(*args: str) -> tuple[int, object]:
        capsys.readouterr()
        code = main(list(args))
        out = capsys.readouterr().out
        try:
            return code, json.loads(out)
        except json.JSONDecodeError:
            return code, out

    return call


def user_state(repo: Path) -> dict:
    """Everything of the user's that must never change behind their back (bosun's own bosun/* branches aside)."""
    from bosun.isolation.snapshot import user_state as state

    st = state(repo)
    st["branches"] = {k: v for k, v in st["branches"].items() if not k.startswith("refs/heads/bosun/")}
    return st
