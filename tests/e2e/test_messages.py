"""The words bosun says when something is wrong: each names what happened and what to do, in the same
vocabulary everywhere (the CLI's text and --json, MCP, `--help`)."""

from __future__ import annotations

import socket
import time

from tests.conftest import task_yaml


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_names_the_endpoint_and_check_probe_tries_it(cli, repo, tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there
    (repo / "bosun.toml").write_text((repo / "bosun.toml").read_text()
                                     + f'\n[profiles.local]\nadapter = "native"\nmodel = "m"\nbase_url = "{url}"\n')
    task = task_yaml(tmp_path / "t.json")
    code, res = cli("check", str(task), "--repo", str(repo), "--profile", "local", "--json")
    assert code == 0, res  # without --probe nothing is tried
    started = time.monotonic()
    code, res = cli("check", str(task), "--repo", str(repo), "--profile", "local", "--probe", "--json")
    assert time.monotonic() - started < 5
    assert code == 2 and [p["code"] for p in res["problems"]] == ["ENDPOINT_UNREACHABLE"], res
    assert url in res["problems"][0]["message"] and "connection refused" in res["problems"][0]["message"]
    assert "base_url" in res["problems"][0]["hint"]
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "local", "--json")
    assert code == 1 and res["state"] == "failed", res
    assert url in res["error"]["message"] and "connection refused" in res["error"]["message"], res["error"]
    assert f"check that the server at {url} is up" in res["error"]["hint"], res["error"]
    assert "--probe" in res["error"]["hint"]


def test_a_misspelt_module_gets_a_did_you_mean(cli, repo, tmp_path):
    import sys

    task = task_yaml(tmp_path / "t.json", verify=[f"{sys.executable} -m pytset -q tests"])
    code, res = cli("check", str(task), "--repo", str(repo), "--json")
    assert code == 2, res
    [problem] = res["problems"]
    assert problem["code"] == "VERIFY_MODULE_MISSING" and "'pytset'" in problem["message"], problem
    assert problem["hint"].startswith(f"did you mean `{sys.executable} -m pytest`?"), problem["hint"]
    task = task_yaml(tmp_path / "t2.json", verify=[f"{sys.executable} -m zzqqxx_nothing_like_it"])
    code, res = cli("check", str(task), "--repo", str(repo), "--json")
    assert "did you mean" not in res["problems"][0]["hint"] and "pip install" in res["problems"][0]["hint"], res



def test_mcp_lists_every_problem_of_a_task_with_its_hint_as_the_cli_does(repo, tmp_path):
    import json

    from tests.conftest import run_bosun
    from tests.e2e.mcp_support import call, with_session

    task = {"title": "t", "prompt": "fix add()", "verfy": ["pytest"], "timeout_s": -1}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(task))
    done = run_bosun("delegate", str(path), "--repo", str(repo), "--json")
    shown = json.loads(done.stdout)
    assert done.returncode == 2 and len(shown["problems"]) == 2, shown

    async def body(s):
        return await call(s, "delegate", {"task": task})

    err, out = with_session(repo, body)
    assert err and out["error"]["message"].startswith("2 problems"), out
    assert [p["code"] for p in out["problems"]] == [p["code"] for p in shown["problems"]], out
    assert all(p["hint"] for p in out["problems"]), out


def test_help_lists_every_exit_code_in_the_readmes_words():
    import re

    from bosun.cli.main import EPILOG
    from bosun.core import errors
    from tests.conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    table = dict(re.findall(r"^\| (\d) \| ([a-z ]+?)[:( ]", readme, re.M))
    codes = {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    assert set(map(int, table)) == codes, table
    said = " ".join(EPILOG.split())
    for code, word in table.items():
        if code in ("0", "1"):
            continue  # "success" / "any other error": the help says ok and error
        assert f"{code} {word.strip()}" in said, (code, word, said)
    assert "rejected" not in said


def test_did_you_mean_for_a_profile_and_a_verb_and_a_run_id_by_a_unique_prefix(cli, repo, tmp_path):
    from tests.conftest import run_bosun

    task = task_yaml(tmp_path / "t.json")
    code, res = cli("check", str(task), "--repo", str(repo), "--profile", "fixx", "--json")
    assert code == 2 and res["problems"][0]["code"] == "UNKNOWN_PROFILE", res
    assert res["problems"][0]["hint"].startswith("did you mean 'fix'?"), res["problems"][0]
    out = run_bosun("delegat", str(task), cwd=repo)
    assert out.returncode == 2 and "did you mean 'delegate'?" in out.stderr, out.stderr
    code, one = cli("prepare", str(task), "--repo", str(repo), "--json")
    code, two = cli("prepare", str(task), "--repo", str(repo), "--json")
    assert one["id"] != two["id"]
    code, shown = cli("show", one["id"][:-2], "--json")
    assert code == 0 and shown["id"] == one["id"], shown
    common = next(i for i in range(len(one["id"])) if one["id"][i] != two["id"][i])
    code, out = cli("discard", one["id"][:max(3, common)], "--json")
    assert code == 2 and out["error"]["code"] == "AMBIGUOUS_RUN", out
    assert one["id"] in out["error"]["message"] and two["id"] in out["error"]["message"]
    code, gone = cli("discard", two["id"][:-1], "--json")
    assert code == 0 and gone["id"] == two["id"], gone
