"""docs/cli.md and the real --json output agree: every verb is documented, and each verb's output has
exactly the documented keys (the required ones always, the optional ones only where documented)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.e2e.test_plans import check, make_plan_repo, task, write_plan

DOC = (ROOT / "docs" / "cli.md").read_text()
RUN_VERBS = ("delegate", "prepare", "work", "verify", "approve", "integrate", "report", "cleanup", "recover",
             "cancel", "discard", "show")


def _keys(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_0-9]+)`", text))


def sections() -> dict[str, tuple[set[str], set[str]]]:
    """Heading text -> (keys, optional keys): the paragraphs starting ``keys`` and ``optional keys:``."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for part in re.split(r"^#{2,3} ", DOC, flags=re.M)[1:]:
        head, _, body = part.partition("\n")
        req: set[str] = set()
        opt: set[str] = set()
        for para in body.split("\n\n"):
            para = para.strip().replace("\n", " ")
            if para.startswith("optional keys:"):
                # only the key names, not the backticked words of the explanations in parentheses
                opt = _keys(re.sub(r"\([^)]*\)", "", para))
            elif para.startswith("keys"):
                req = _keys(para.split(":", 1)[1].split(". ")[0])
        out[head.strip()] = (req, opt)
    return out


SECTIONS = sections()
RUN_RESULT = SECTIONS["The run result"]


def documented(verb: str) -> tuple[set[str], set[str]]:
    for head, keys in SECTIONS.items():
        if head.startswith(f"`bosun {verb} ") or head.startswith(f"`bosun {verb}`") or f"`{verb}`" in head.split("`bosun")[-1]:
            if keys[0]:
                return keys
            return RUN_RESULT
    raise AssertionError(f"{verb} has no section in docs/cli.md")


def agrees(verb: str, doc: dict, base: tuple[set[str], set[str]] | None = None) -> None:
    req, opt = base or documented(verb)
    got = set(doc)
    assert req <= got, (verb, "documented but missing:", req - got)
    assert got <= req | opt, (verb, "printed but not documented:", got - req - opt)


def test_every_verb_has_a_section():
    from bosun.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for verb in sub.choices:
        if verb in RUN_VERBS:
            continue
        if verb == "plan":
            for pv in ("check", "run", "status", "continue", "resume", "cancel", "abort", "list", "watch"):
                assert f"`{pv}`" in DOC or f"plan {pv}" in DOC, pv
            continue
        documented("replay serve" if verb == "replay" else verb)
    for verb in RUN_VERBS:
        assert f"`{verb}`" in DOC


def test_run_verbs_and_the_rest_print_what_the_docs_say(cli, repo, task_file, tmp_path, monkeypatch):
    monkeypatch.setenv("BOSUN_CACHE_DIR", str(tmp_path / "cache"))
    code, res = cli("prepare", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    agrees("prepare", res, RUN_RESULT)
    run_id = res["id"]
    for verb in ("work", "verify", "approve", "integrate", "report", "show", "cleanup"):
        code, res = cli(verb, run_id, "--json")
        assert code == 0, (verb, res)
        agrees(verb, res, RUN_RESULT)
    code, res = cli("show", run_id, "--events", "--json")
    agrees("show", res, RUN_RESULT)
    assert "events" in res
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    agrees("delegate", res, RUN_RESULT)
    code, res = cli("discard", res["id"], "--json")
    agrees("discard", res, RUN_RESULT)
    code, res = cli("prepare", str(task_file), "--repo", str(repo), "--json")
    code, res = cli("cancel", res["id"], "--json")
    agrees("cancel", res, RUN_RESULT)

    code, res = cli("check", str(task_file), "--repo", str(repo), "--json")
    agrees("check", res)
    req, opt = documented("check")
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--dry-run", "--json")
    assert code == 0
    agrees("delegate --dry-run", res, (req | {"worker"}, opt))

    code, res = cli("list", "--json")
    agrees("list", res)
    code, res = cli("diff", run_id, "--json")
    assert code == 0, res
    agrees("diff", res)
    for verb in ("workers", "models", "doctor"):
        code, res = cli(verb, "--repo", str(repo), "--json")
        agrees(verb, res)
    for verb in ("schema", "template"):
        code, res = cli(verb, "--json")
        assert code == 0
        agrees(verb, res)


def test_an_error_carries_the_run_result_only_when_there_is_a_run(cli, repo, task_file, tmp_path):
    code, res = cli("show", "20990101-000000-aaaaaa", "--json")
    assert code == 2 and res == {"error": res["error"]} and res["error"]["code"] == "UNKNOWN_RUN"
    bad = tmp_path / "bad.json"
    bad.write_text('{"title": "t", "colour": "red"}')
    code, res = cli("delegate", str(bad), "--repo", str(repo), "--json")
    assert code == 2 and res["error"]["code"] == "INVALID_TASK" and len(res["problems"]) == 2
    assert set(res) == {"error", "problems"}
    code, res = cli("prepare", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0, res
    run_id = res["id"]
    code, res = cli("integrate", run_id, "--json")  # a prepared run cannot land: the run's result says where it is
    assert code != 0 and res["error"]["code"] and res["id"] == run_id and res["state"] == "prepared"
    agrees("integrate", res, RUN_RESULT)


def test_plan_verbs_print_what_the_docs_say(cli, tmp_path):
    repo = make_plan_repo(tmp_path / "prepo")
    plan = write_plan(tmp_path / "p.json", [task("a", "@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt")])])
    code, res = cli("plan", "check", str(plan), "--repo", str(repo), "--json")
    assert code == 0, res
    agrees("plan check", res)
    code, res = cli("plan", "run", str(plan), "--repo", str(repo), "--json")
    assert code == 0, res
    agrees("plan run", res)
    plan_id = res["id"]
    code, res = cli("plan", "status", plan_id, "--json")
    agrees("plan status", res, documented("plan run"))
    code, res = cli("plan", "list", "--json")
    agrees("plan list", res)
    code, res = cli("plan", "continue", plan_id, "--json")  # nothing to continue: the error in the plan's result
    assert code == 1 and res["error"]["code"] == "INVALID_STATE" and res["id"] == plan_id, res
    agrees("plan continue", res, documented("plan run"))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-m", "bosun", "plan", "watch", plan_id, "--json"], env=env,
                         capture_output=True, text=True, timeout=60)
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) > 3
    req, _ = documented("plan watch")
    for line in lines:
        assert req <= set(json.loads(line)), line


def test_demo_and_replay_serve(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-m", "bosun", "demo", "--json"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 1
    agrees("demo", json.loads(out.stdout))
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"say": "hi"}]))
    proc = subprocess.Popen([sys.executable, "-m", "bosun", "replay", "serve", "--script", str(script), "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    agrees("replay serve", first)
    assert Path(first["url"].split("//", 1)[1]) and first["base_urls"]["openai"].endswith("/v1")
