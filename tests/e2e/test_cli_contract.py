"""The CLI contract outside tools depend on: one JSON object per --json call, stable keys, exit codes."""

from __future__ import annotations

import json

from tests.conftest import run_bosun

REQUIRED = {"id", "state", "profile", "base", "branch", "worktree", "diff_sha256", "files_changed", "gates",
            "verification", "usage", "error"}


def test_every_verb_prints_one_object_with_the_contract_keys(cli, repo, task_file):
    code, res = cli("prepare", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0 and REQUIRED <= set(res) and res["state"] == "prepared"
    run_id = res["id"]
    for verb in (["work", run_id], ["verify", run_id], ["approve", run_id], ["integrate", run_id], ["report", run_id],
                 ["show", run_id], ["cleanup", run_id]):
        code, res = cli(*verb, "--json")
        assert code == 0, (verb, res)
        assert REQUIRED <= set(res), verb
        assert res["error"] is None
    assert res["state"] == "cleaned"
    for g in res["gates"]:
        assert set(g) >= {"code", "ok", "detail"}
    v = res["verification"]
    assert v["passed"] is True and set(v["commands"][0]) >= {"argv", "exit_code", "duration_s", "output_tail"}


def test_errors_are_json_too(cli, repo):
    code, res = cli("show", "20990101-000000-aaaaaa", "--json")
    assert code == 2
    assert set(res) == {"error"}  # no run: no run keys, not a run result of nulls
    assert res["error"]["code"] == "UNKNOWN_RUN" and res["error"]["hint"]


def test_list_and_diff(cli, repo, task_file):
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    run_id = res["id"]
    code, listing = cli("list", "--json")
    assert code == 0 and listing["runs"][0]["id"] == run_id
    code, listing = cli("list", "--state", "verified", "--json")
    assert [r["id"] for r in listing["runs"]] == [run_id]
    code, listing = cli("list", "--search", "add", "--json")
    assert listing["count"] == 1
    code, out = cli("list", "--state", "bogus")
    assert code == 2
    code, out = cli("diff", run_id)
    assert "+    return a + b" in out
    code, out = cli("diff", run_id, "--stat")
    assert "src/calc.py | +1 -1" in out


def test_human_show_explains_gate_by_gate(cli, repo, task_file):
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "edit_locked", "--json")
    code, out = cli("show", res["id"])
    assert "FAIL LOCKED_PATH_CHANGED" in out
    assert "tests/test_calc.py" in out
    assert "next: bosun work" in out


def test_schema_template_help_and_version():
    out = run_bosun("schema")
    schema = json.loads(out.stdout)
    assert "prompt" in schema["properties"] and "prompt" in schema["required"]
    out = run_bosun("template")
    assert out.returncode == 0 and "verify:" in out.stdout
    out = run_bosun("--help")
    assert "exit codes" in out.stdout and "delegate" in out.stdout
    out = run_bosun("delegate", "--help")
    assert "--auto-approve" in out.stdout


def test_doctor_and_workers(cli, repo, monkeypatch):
    monkeypatch.chdir(repo)
    code, res = cli("doctor", "--json")
    assert code == 0, res
    names = {a["adapter"] for a in res["adapters"]}
    assert {"command", "native"} <= names
    fix = next(p for p in res["profiles"] if p["profile"] == "fix")
    assert fix["usable"] is True
    (repo / "bosun.toml").write_text((repo / "bosun.toml").read_text() + '\n[profiles.bad]\nadapter = "native"\napi_key_env = "NOPE_X"\n')
    code, res = cli("doctor", "--profile", "bad", "--json")
    assert code == 1
    problems = res["profiles"][0]["problems"]
    assert any("NOPE_X" in p for p in problems) and any("base_url" in p for p in problems)
    (repo / "bosun.toml").write_text("max_concurrent_runs = 0\n")
    code, res = cli("doctor", "--json")
    assert code == 1 and "bosun.toml:1" in res["config_error"]["message"]
    (repo / "bosun.toml").write_text('[profiles.a]\nadapter = "command"\ncommand = ["true"]\ntier = "standard"\n')
    code, res = cli("workers", "--json")
    assert res["workers"][0]["profile"] == "a" and res["workers"][0]["tier"] == "standard"
