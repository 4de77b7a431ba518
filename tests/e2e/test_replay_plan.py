"""A plan's parallel tasks scripted against one replay server: each worker gets its own conversation."""

from __future__ import annotations

import json
import sys

from bosun.replay import ReplayServer
from tests.conftest import git
from tests.e2e.test_plans import write_plan


def test_parallel_tasks_each_follow_their_own_conversation(cli, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# r\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    script = {"conversations": [
        {"match": "out/a\\.txt containing alpha", "turns": [
            {"write": "out/a.txt", "content": "alpha\n"}, {"say": "wrote a"}]},
        {"match": "out/b\\.txt containing beta", "turns": [
            {"list": "."}, {"write": "out/b.txt", "content": "beta\n"}, {"say": "wrote b"}]},
    ]}
    with ReplayServer(script) as srv:
        (repo / "bosun.toml").write_text(
            f'default_profile = "nat"\nmax_concurrent_runs = 2\n[profiles.nat]\nadapter = "native"\n'
            f'model = "mock-model"\nbase_url = "{srv.base_url("openai")}"\n')
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "config")
        check = f"{sys.executable} -c \"import pathlib,sys; sys.exit(not pathlib.Path(sys.argv[1]).exists())\""
        plan = write_plan(tmp_path / "plan.json", [
            {"id": "a", "prompt": "Create out/a.txt containing alpha.", "owns": ["out/a.txt"],
             "verify": [f"{check} out/a.txt"]},
            {"id": "b", "prompt": "Create out/b.txt containing beta.", "owns": ["out/b.txt"],
             "verify": [f"{check} out/b.txt"]},
        ])
        code, res = cli("plan", "run", str(plan), "--repo", str(repo), "--json")
        errors, used = list(srv.errors), srv.turns_used
    assert not errors, errors
    assert code == 0 and res["state"] == "succeeded", json.dumps(res)[:2000]
    assert res["waves"] == [["a", "b"]]
    assert (repo / "out" / "a.txt").read_text() == "alpha\n" and (repo / "out" / "b.txt").read_text() == "beta\n"
    assert used == 5
