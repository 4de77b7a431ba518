"""Credentials never reach bosun's records or output, never ride on an argv, never go out in a task."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import task_yaml

KEY = "zq9-provider-key-0123456789abcdef"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

LEAKY = (
    'cat >/dev/null; echo "using key $LEAKY_KEY"; echo "found ' + GITHUB_TOKEN + '" >&2; '
    'echo \'{"type": "error", "message": "provider refused key \'"$LEAKY_KEY"\'"}\'; exit 1'
)


def add_profile(config: Path, name: str, lines: list[str]) -> None:
    text = config.read_text() if config.exists() else ""
    config.write_text(text + f"\n[profiles.{name}]\n" + "\n".join(lines) + "\n")


def test_the_key_value_is_redacted_from_events_reports_and_json(cli, capsys, repo, task_file, tmp_path, monkeypatch):
    monkeypatch.setenv("LEAKY_KEY", KEY)
    add_profile(tmp_path / "no-user-config.toml", "leaky", [
        'adapter = "command"', f"command = {json.dumps(['/bin/sh', '-c', LEAKY])}", 'api_key_env = "LEAKY_KEY"',
    ])
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "leaky", "--json")
    assert code == 1 and res["state"] == "failed", res
    out = json.dumps(res)
    assert KEY not in out and "[REDACTED]" in res["error"]["message"]
    rdir = Path(res["run_dir"])
    for name in ("events.jsonl", "report.md"):
        text = (rdir / name).read_text()
        assert KEY not in text and GITHUB_TOKEN not in text, name
    events = (rdir / "events.jsonl").read_text()
    assert "using key [REDACTED]" in events
    assert KEY not in json.dumps(cli("show", res["id"], "--json")[1])


def test_a_key_on_the_worker_argv_is_refused(cli, repo, task_file, tmp_path, monkeypatch):
    monkeypatch.setenv("LEAKY_KEY", KEY)
    add_profile(tmp_path / "no-user-config.toml", "argv", [
        'adapter = "command"', 'command = ["/bin/echo"]', f'extra_args = ["--key={KEY}"]', 'api_key_env = "LEAKY_KEY"',
    ])
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "argv", "--json")
    assert code == 1 and res["state"] == "failed"
    assert "LEAKY_KEY would be on the worker's command line" in res["error"]["message"]
    assert KEY not in json.dumps(res)


def test_a_task_holding_a_secret_is_refused_before_dispatch(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", acceptance=[f"the client authenticates with {GITHUB_TOKEN}"])
    code, res = cli("prepare", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 2, res
    assert res["error"]["code"] == "SECRET_IN_TASK"
    assert "acceptance" in res["error"]["message"] and "GitHub token" in res["error"]["message"]
    assert "--allow-secret-in-task" in res["error"]["hint"]
    assert GITHUB_TOKEN not in json.dumps(res)
    assert "id" not in res  # nothing was created
    code, res = cli("prepare", str(task), "--repo", str(repo), "--profile", "fix", "--json", "--allow-secret-in-task")
    assert code == 0 and res["state"] == "prepared", res


def test_a_prompt_that_only_talks_about_secrets_is_dispatched(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", prompt="Validate the password field and rotate the API key on logout.")
    code, res = cli("prepare", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0, res
