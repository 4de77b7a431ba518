"""What a new user hits first: set-up errors found before anything is created, `bosun check`,
`delegate --dry-run`, output piped into a reader that stops early, and usage errors under --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, run_bosun, task_yaml


def _add(repo: Path, text: str) -> None:
    (repo / "bosun.toml").write_text((repo / "bosun.toml").read_text() + "\n" + text + "\n")


def _nothing_created(repo: Path, home: Path) -> None:
    from bosun.store.db import open_store

    assert open_store().list_runs(limit=5) == []
    assert "bosun/" not in git(repo, "branch", "--list", "bosun/*")
    assert not (home / "worktrees").exists() or not any((home / "worktrees").iterdir())
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())


NO_KEY = '[profiles.nokey]\nadapter = "native"\nmodel = "deepseek-chat"\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "BOSUN_TEST_UNSET_KEY"'


def test_every_setup_problem_is_found_before_anything_is_created(cli, repo, tmp_path, isolated_home, monkeypatch):
    monkeypatch.delenv("BOSUN_TEST_UNSET_KEY", raising=False)
    _add(repo, NO_KEY)
    task = task_yaml(tmp_path / "t.json", verify=["pytset -q tests"], base="no-such-branch")
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "nokey", "--json")
    assert code == 2, res
    codes = {p["code"] for p in res["problems"]}
    assert codes == {"MISSING_KEY", "VERIFY_NOT_FOUND", "BAD_BASE"}, res["problems"]
    key = next(p for p in res["problems"] if p["code"] == "MISSING_KEY")
    assert "export BOSUN_TEST_UNSET_KEY=" in key["hint"]
    verify = next(p for p in res["problems"] if p["code"] == "VERIFY_NOT_FOUND")
    assert "pytset" in verify["message"] and "--resume" not in verify["hint"]
    assert res["error"]["code"] == "PREFLIGHT" and "id" not in res
    _nothing_created(repo, isolated_home)


def test_preflight_text_lists_every_problem_with_its_hint(repo, tmp_path, isolated_home):
    _add(repo, NO_KEY)
    task = task_yaml(tmp_path / "t.json", verify=["pytset -q tests"])
    env = {"BOSUN_HOME": str(isolated_home)}
    out = run_bosun("delegate", str(task), "--profile", "nokey", cwd=repo, env=env)
    assert out.returncode == 2, out.stderr
    assert "2 problems" in out.stderr and "MISSING_KEY" in out.stderr and "VERIFY_NOT_FOUND" in out.stderr
    assert out.stderr.count("hint:") == 2 and "more problem" not in out.stderr
    assert "Traceback" not in out.stderr
    _nothing_created(repo, isolated_home)


def test_missing_cli_and_outside_a_repository(cli, repo, tmp_path, isolated_home, monkeypatch):
    monkeypatch.setenv("BOSUN_TEST_KEY", "dummy")
    _add(repo, '[profiles.cx]\nadapter = "codex"\nmodel = "deepseek-chat"\napi_key_env = "BOSUN_TEST_KEY"\n'
               f'binary = "{tmp_path}/no/codex"')
    task = task_yaml(tmp_path / "t.json")
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "cx", "--json")
    assert code == 2 and [p["code"] for p in res["problems"]] == ["CLI_NOT_FOUND"], res
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    code, res = cli("delegate", str(task), "--repo", str(outside), "--json")
    assert code == 2 and [p["code"] for p in res["problems"]] == ["NOT_A_REPO"], res
    assert res["problems"][0]["hint"].count("--repo") == 1, res  # said once, not twice in other words
    _nothing_created(repo, isolated_home)


def test_check_validates_without_creating_anything(cli, repo, tmp_path, task_file, isolated_home):
    code, res = cli("check", str(task_file), "--repo", str(repo), "--json")
    assert code == 0 and res["ok"] is True and res["problems"] == []
    assert res["routing"]["profile"] == "fix" and res["title"] == "Fix add()"
    bad = tmp_path / "bad.yaml"
    bad.write_text("title: t\ncolour: red\nverify: [{run: 'x', timeout_s: -1}]\n")
    code, res = cli("check", str(bad), "--repo", str(repo), "--json")
    assert code == 2 and not res["ok"]
    messages = " | ".join(p["message"] for p in res["problems"])
    assert len(res["problems"]) == 3, messages  # colour, the missing prompt and the timeout, all at once
    assert "colour" in messages and "prompt" in messages and "timeout_s" in messages
    code, out = cli("check", str(bad), "--repo", str(repo))
    assert code == 2
    _nothing_created(repo, isolated_home)


def test_dry_run_prints_routing_and_argv_with_keys_redacted(cli, repo, tmp_path, isolated_home, monkeypatch):
    secret = "sk-very-secret-value-123"
    monkeypatch.setenv("BOSUN_TEST_KEY", secret)
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\necho 'codex-cli 0.171.0'\n")
    fake.chmod(0o755)
    _add(repo, '[profiles.cx]\nadapter = "codex"\nmodel = "deepseek-chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
               f'api_key_env = "BOSUN_TEST_KEY"\nbinary = "{fake}"\nextra_args = ["-c", "x={secret}"]')
    task = task_yaml(tmp_path / "t.json")
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "cx", "--dry-run", "--json")
    assert code == 0, res
    assert res["dry_run"] is True and res["routing"]["profile"] == "cx"
    argv = res["worker"]["argv"]
    assert argv[0] == str(fake) and argv[1] == "exec" and "--json" in argv and argv[-1] == "-"
    assert res["worker"]["env"]["BOSUN_TEST_KEY"] == "<redacted>"
    assert secret not in json.dumps(res)
    assert "x=<redacted>" in argv
    code, out = cli("delegate", str(task), "--repo", str(repo), "--profile", "cx", "--dry-run")
    assert code == 0 and "argv: " in out and "nothing was created" in out and secret not in out
    _nothing_created(repo, isolated_home)


def test_plan_check_runs_the_preflight_for_every_task(cli, repo, tmp_path, monkeypatch):
    monkeypatch.delenv("BOSUN_TEST_UNSET_KEY", raising=False)
    _add(repo, NO_KEY)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"title": "p", "tasks": [
        {"id": "a", "prompt": "x", "profile": "nokey", "verify": ["pytset"], "owns": ["src/a.py"]},
        {"id": "b", "prompt": "y", "profile": "nokey", "verify": [f"{sys.executable} -V"], "owns": ["src/b.py"]},
    ]}))
    code, res = cli("plan", "check", str(plan), "--repo", str(repo), "--json")
    assert code == 2, res
    by_code = {p["code"]: p for p in res["problems"]}
    assert set(by_code) == {"MISSING_KEY", "VERIFY_NOT_FOUND"}, res["problems"]
    assert by_code["MISSING_KEY"]["tasks"] == ["a", "b"] and by_code["VERIFY_NOT_FOUND"]["tasks"] == ["a"]


# -- piping ---------------------------------------------------------------------------------------


def _closed_pipe_run(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    """Run bosun with stdout a pipe whose reader has already gone (what `| head -1` leaves behind)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BOSUN_HOME": str(home)}
    try:
        return subprocess.run([sys.executable, "-m", "bosun", *args], cwd=cwd, env=env, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)


def test_a_reader_that_stops_early_gets_no_traceback(cli, repo, task_file, isolated_home):
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0
    run_id = res["id"]
    for args in (["list"], ["list", "--json"], ["show", run_id, "--events"], ["show", run_id, "--json"]):
        out = _closed_pipe_run(*args, cwd=repo, home=isolated_home)
        assert "Traceback" not in out.stderr and "BrokenPipeError" not in out.stderr, (args, out.stderr)
        assert out.returncode == 141, (args, out.returncode, out.stderr)


def test_piped_into_head_through_a_shell(cli, repo, task_file, isolated_home):
    for _ in range(3):
        cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BOSUN_HOME": str(isolated_home)}
    run_id = cli("list", "--json")[1]["runs"][0]["id"]
    for cmd in ("list | head -1", f"show {run_id} --events | head -5"):
        out = subprocess.run(["bash", "-c", f"'{sys.executable}' -m bosun {cmd}"], cwd=repo, env=env,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.strip(), (cmd, out)
        assert "Traceback" not in out.stderr, (cmd, out.stderr)


# -- one --json contract ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["list", "--bogus", "--json"], ["show", "--json"], ["list", "--state", "nope", "--json"], ["--json"],
     ["plan", "status", "--json"]],
)
def test_usage_errors_are_json_under_json(args, isolated_home):
    out = run_bosun(*args)
    assert out.returncode == 2, out
    doc = json.loads(out.stdout)
    assert set(doc) == {"error"} and set(doc["error"]) == {"code", "message", "hint"}
    assert doc["error"]["code"] == "USAGE" and doc["error"]["message"]
    assert len(out.stdout.strip().splitlines()) == 1


def test_list_state_names_the_valid_states(isolated_home):
    out = run_bosun("list", "--state", "nope")
    assert out.returncode == 2 and "verified" in out.stderr and "interrupted" in out.stderr
    assert "verified" in run_bosun("list", "--help").stdout


# -- bosun models ---------------------------------------------------------------------------------


def test_models_lists_the_provider_catalog_caches_it_and_survives_offline(cli, repo, tmp_path, monkeypatch):
    from bosun.replay import ReplayServer

    monkeypatch.setenv("BOSUN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BOSUN_TEST_KEY", "dummy")
    with ReplayServer({"turns": [], "models": ["deepseek-chat", "deepseek-reasoner"]}) as srv:
        _add(repo, f'[profiles.ds]\nadapter = "native"\nmodel = "deepseek-chat"\nbase_url = "{srv.base_url("openai")}"\n'
                   'api_key_env = "BOSUN_TEST_KEY"\nprices = {input = 0.27, cached_input = 0.07, output = 1.1}')
        code, res = cli("models", "ds", "--repo", str(repo), "--json")
        asked = [r for r in srv.requests if r.get("path", "").endswith("/models")] or srv.requests
    assert code == 0, res
    (entry,) = res["profiles"]
    assert entry["models"] == ["deepseek-chat", "deepseek-reasoner"] and entry["listed"] is True
    assert entry["cached"] is False and entry["prices"]["output"] == 1.1 and entry["error"] is None
    assert asked
    # The server is gone: the cached catalog answers for 30 minutes.
    code, res = cli("models", "ds", "--repo", str(repo), "--json")
    assert code == 0 and res["profiles"][0]["cached"] is True
    assert res["profiles"][0]["models"] == ["deepseek-chat", "deepseek-reasoner"]
    # Offline and nothing cached: "no catalog", not a failure.
    code, res = cli("models", "ds", "--repo", str(repo), "--refresh", "--json")
    assert code == 0 and res["profiles"][0]["models"] is None
    assert res["profiles"][0]["error"].startswith("no catalog:")
    code, out = cli("models", "--repo", str(repo))
    assert code == 0 and "profile ds (native)" in out and "no catalog" in out


def test_plan_watch_into_a_closed_pipe(cli, tmp_path, isolated_home):
    from tests.e2e.test_plans import check, make_plan_repo, task, write_plan

    prepo = make_plan_repo(tmp_path / "prepo")
    plan = write_plan(tmp_path / "p.json", [task("a", "@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt")])])
    code, res = cli("plan", "run", str(plan), "--repo", str(prepo), "--json")
    assert code == 0, res
    for args in (["plan", "watch", res["id"], "--json"], ["plan", "watch", res["id"]]):
        out = _closed_pipe_run(*args, cwd=prepo, home=isolated_home)
        assert "Traceback" not in out.stderr, out.stderr
        assert out.returncode == 141


# -- the smaller things ---------------------------------------------------------------------------


def test_interrupt_message_names_the_run_and_its_state(cli, repo, task_file):
    import argparse

    from bosun.cli.dispatch import interrupted_message

    code, res = cli("prepare", str(task_file), "--repo", str(repo), "--json")
    msg = interrupted_message(argparse.Namespace(run_id=res["id"]))
    assert res["id"] in msg and "prepared" in msg and "RUN" not in msg and "working" not in msg
    assert interrupted_message(argparse.Namespace()) == "bosun: interrupted"


def test_list_headers_and_a_discarded_run_reads_discarded(cli, repo, task_file):
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    cli("discard", res["id"], "--json")
    code, res2 = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--auto-approve", "--json")
    cli("cleanup", res2["id"], "--json")
    code, out = cli("list")
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["RUN", "STATE", "CREATED"]
    by_id = {ln.split()[0]: ln.split()[1] for ln in lines[1:]}
    assert by_id[res["id"]] == "discarded" and by_id[res2["id"]] == "landed"  # what it is, not "cleaned"
    code, out = cli("show", res["id"])
    assert "[discarded]" in out.splitlines()[0]
    code, out = cli("workers", "--repo", str(repo))
    assert out.splitlines()[0].split()[:3] == ["PROFILE", "ADAPTER", "TIER"]


def test_doctor_says_nothing_about_what_missing_clis_cannot_enforce(cli, repo, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("BOSUN_CLI_CACHE", str(tmp_path / "no-clis"))
    code, out = cli("doctor", "--repo", str(repo))
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if "CLI not found" in line:
            assert i + 1 == len(lines) or "cannot enforce" not in lines[i + 1], lines[i:i + 2]
    assert any("CLI not found" in ln for ln in lines)


def test_doctor_finds_the_clis_make_test_installs(cli, repo, monkeypatch, tmp_path):
    cache = tmp_path / "clis"
    shim = cache / "cli-abc" / "shims" / "codex"
    shim.parent.mkdir(parents=True)
    shim.write_text("#!/bin/sh\necho 'codex-cli 0.171.0'\n")
    shim.chmod(0o755)
    (cache / "cli-abc" / ".complete").write_text("")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("BOSUN_CLI_CACHE", str(cache))
    code, res = cli("doctor", "--repo", str(repo), "--json")
    codex = next(a for a in res["adapters"] if a["adapter"] == "codex")
    assert codex["cli_found"] is True and codex["binary"] == str(shim) and codex["version"] == "0.171.0"


def test_the_template_names_only_real_commands_and_passes_check(cli, repo, tmp_path):
    import re

    from bosun.cli.main import build_parser
    from bosun.core.contract_template import TEMPLATE

    verbs = set(next(a for a in build_parser()._actions if a.dest == "command").choices)
    for cmd in re.findall(r"`bosun (\w[\w-]*)", TEMPLATE):
        assert cmd in verbs, cmd
    assert "bosun check" in TEMPLATE and "--dry-run" in TEMPLATE
    task = tmp_path / "task.yaml"
    task.write_text(TEMPLATE.replace("python -m pytest -q tests/test_pages.py", f"{sys.executable} -V"))
    code, res = cli("check", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0 and res["ok"], res


def test_verify_cwd_and_env_path_are_checked_too(cli, repo, tmp_path):
    tool_dir = tmp_path / "tools"
    tool_dir.mkdir()
    tool = tool_dir / "mycheck"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    task = task_yaml(tmp_path / "t.json", verify=[
        {"run": "true", "cwd": "no/such/dir"},
        {"run": "mycheck", "env": {"PATH": f"{tool_dir}:/usr/bin:/bin"}},
        {"run": "./scripts/check.sh"},
    ])
    code, res = cli("check", str(task), "--repo", str(repo), "--json")
    assert code == 2
    assert [p["code"] for p in res["problems"]] == ["VERIFY_CWD_MISSING", "VERIFY_NOT_FOUND"], res["problems"]
    assert "./scripts/check.sh" in res["problems"][1]["message"]


def test_human_output_of_a_delegation_never_prints_a_raw_dict(repo, task_file, isolated_home):
    out = run_bosun("delegate", str(task_file), "--repo", str(repo), "--profile", "fix")
    lines = (out.stdout + out.stderr).splitlines()
    assert out.returncode == 0, out.stderr
    assert any("sandbox:" in line for line in lines), lines
    assert not [line for line in lines if line.lstrip().startswith("{'")], lines


@pytest.mark.parametrize("module", ["nosuchmodule", "pytset", "nosuch.sub"])
def test_a_verify_module_the_interpreter_cannot_import_is_found_before_the_run(cli, repo, tmp_path, isolated_home, module):
    task = task_yaml(tmp_path / "t.json", verify=[f"{sys.executable} -m {module} -q tests"])
    code, res = cli("check", str(task), "--repo", str(repo), "--json")
    assert code == 2 and [p["code"] for p in res["problems"]] == ["VERIFY_MODULE_MISSING"], res
    assert "pip install" in res["problems"][0]["hint"]
    ok = task_yaml(tmp_path / "ok.json", verify=[f"{sys.executable} -m pytest -q tests"])
    code, res = cli("check", str(ok), "--repo", str(repo), "--json")
    assert code == 0, res
    _nothing_created(repo, isolated_home)


def test_home_and_variables_in_a_profiles_program_path_are_expanded(cli, repo, tmp_path, isolated_home, monkeypatch):
    from tests.conftest import WORKER

    home = tmp_path / "person"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "py").symlink_to(sys.executable)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BOSUN_TEST_TOOLS", str(home / "bin"))
    _add(repo, f'[profiles.tilde]\nadapter = "command"\ncommand = ["~/bin/py", "{WORKER}", "fix"]\n'
               f'[profiles.var]\nadapter = "command"\ncommand = ["${{BOSUN_TEST_TOOLS}}/py", "{WORKER}", "fix"]\n'
               f'[profiles.unset]\nadapter = "command"\ncommand = ["$BOSUN_TEST_NOT_SET/py", "{WORKER}", "fix"]\n')
    task = task_yaml(tmp_path / "t.json")
    for profile in ("tilde", "var"):
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", profile, "--json")
        assert code == 0 and res["verdict"]["outcome"] == "landable", res
    code, res = cli("check", str(task), "--repo", str(repo), "--profile", "unset", "--json")
    assert code == 2 and "$BOSUN_TEST_NOT_SET is not set" in json.dumps(res["problems"]), res


def test_silent_defaults_say_what_happened(cli, repo, task_file, isolated_home):
    # No git identity in this repository: the landing commit's author is bosun's, and the run says so.
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--auto-approve", "--json")
    assert code == 0 and res["merged_commit"], res
    code, text = cli("show", res["id"])
    assert "no git identity is set" in text and "git config user.email" in text, text
    # [pool] size = 0 (the default): `pool warm` says there is nothing to warm and how to change it.
    out = run_bosun("pool", "warm", "--repo", str(repo))
    assert out.returncode == 0 and "pool size is 0" in out.stderr and "[pool] size" in out.stderr, out.stderr


def test_integrate_on_a_merged_run_says_so_and_a_removed_worktree_is_not_shown_as_there(cli, repo, task_file):
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--auto-approve", "--json")
    assert code == 0 and res["state"] == "cleaned", res
    code, out = cli("integrate", res["id"], "--json")
    assert code == 1 and "already merged, as commit " + res["merged_commit"][:12] in out["error"]["message"], out
    assert "approve" not in out["error"]["hint"]
    code, text = cli("show", res["id"])
    assert f"worktree  removed (was {res['worktree']}" in text, text


def test_doctor_says_what_the_remote_adapter_needs(repo):
    out = run_bosun("doctor", "--repo", str(repo))
    line = next(line for line in out.stdout.splitlines() if line.strip().startswith("remote"))
    assert "?" not in line and "not used" in line, line  # no profile uses it: nothing to set up
    (repo / "bosun.toml").write_text('remote = "nats://127.0.0.1:9"\n' + (repo / "bosun.toml").read_text())
    out = run_bosun("doctor", "--repo", str(repo))
    line = next(line for line in out.stdout.splitlines() if line.strip().startswith("remote"))
    assert "?" not in line and "not set up: " in line, line


def test_a_verify_program_found_only_through_a_relative_path_entry_is_named_before_anything_runs(
        cli, repo, tmp_path, isolated_home, monkeypatch):
    # `tools/bin` on the user's PATH finds the repository's script; in the worktree it would find the
    # worker's. bosun drops relative entries, and says so before anything is created.
    script = repo / "tools" / "bin" / "runtests"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\nexec python -m pytest -q tests\n")
    script.chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a test script")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PATH", "tools/bin" + os.pathsep + os.environ["PATH"])
    code, res = cli("delegate", str(task_yaml(tmp_path / "t.json", verify=["runtests"])), "--repo", str(repo), "--json")
    assert code == 2, res
    problem = next(p for p in res["problems"] if p["code"] == "VERIFY_NOT_FOUND")
    assert "bosun ignores relative PATH entries" in problem["hint"], problem
    _nothing_created(repo, isolated_home)
