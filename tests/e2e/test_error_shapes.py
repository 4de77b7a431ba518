"""Every verb's failure under --json is one object: ``{"error": {code, message, hint}}``, plus `problems`
when several things are wrong, plus only the partial result docs/cli.md names for that verb. No run
exists in any of these cases, so no run result may appear (not even one of nulls).

The table is checked against bosun.cli.dispatch.HANDLERS: a new verb fails this test until it has a row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bosun.cli.dispatch import HANDLERS
from tests.conftest import ROOT, task_yaml

RUN = "20990101-000000-aaaaaa"  # well formed, never created
PLAN = "p-20990101-000000-aaaaaa"
BAD_RUN = "../x"  # malformed: a path, not an id
BAD_INPUT = 2

# verb -> the command lines that must fail with exit 2 ("{repo}", "{missing}", "{task}", "{bad_task}",
# "{broken}" filled in below), or why the verb has none. A command line without --json checks only the
# exit code and that stdout stays empty.
CASES: dict[str, list[list[str]] | str] = {
    "delegate": [["delegate", "{missing}", "--repo", "{repo}", "--json"],
                 ["delegate", "{bad_task}", "--repo", "{repo}", "--json"],
                 ["delegate", "{task}", "--repo", "{repo}", "--profile", "nosuch", "--json"],
                 ["delegate", "{missing}", "--repo", "{repo}", "--dry-run", "--json"]],
    "check": [["check", "{missing}", "--repo", "{repo}", "--json"],
              ["check", "{task}", "--repo", "{repo}", "--profile", "nosuch", "--json"]],
    "prepare": [["prepare", "{missing}", "--repo", "{repo}", "--json"],
                ["prepare", "{task}", "--repo", "{repo}", "--profile", "nosuch", "--json"]],
    **{verb: [[verb, BAD_RUN, "--json"], [verb, RUN, "--json"]]
       for verb in ("work", "verify", "approve", "integrate", "report", "cleanup", "recover", "cancel", "discard",
                    "show", "diff")},
    "revert": [["revert", BAD_RUN, "--json"], ["revert", RUN, "--json"], ["revert", RUN, "--bogus", "--json"]],
    "apply": [["apply", BAD_RUN, "--to", "main", "--json"], ["apply", RUN, "--to", "main", "--json"],
              ["apply", RUN, "--json"]],  # --to is required
    "list": [["list", "--limit", "x", "--json"], ["list", "--state", "bogus", "--json"]],
    "doctor": [["doctor", "--profile", "nosuch", "--repo", "{repo}", "--json"]],
    "workers": [["workers", "--repo", "{broken}", "--json"]],
    "models": [["models", "nosuch", "--repo", "{repo}", "--json"]],
    # schema, template and demo take no argument to get wrong; an unknown flag is their bad input
    "schema": [["schema", "--bogus", "--json"]],
    "template": [["template", "--bogus", "--json"]],
    "demo": [["demo", "--bogus", "--json"]],
    "replay": [["replay", "serve", "--script", "{missing}", "--json"], ["replay", "--json"]],
    "plan check": [["plan", "check", "{missing}", "--repo", "{repo}", "--json"]],
    "plan run": [["plan", "run", "{missing}", "--repo", "{repo}", "--json"]],
    **{f"plan {pv}": [["plan", pv, "nope", "--json"], ["plan", pv, PLAN, "--json"]]
       for pv in ("status", "watch", "continue", "resume", "cancel", "abort")},
    "plan list": [["plan", "list", "--state", "bogus", "--json"]],
    # `mcp` serves MCP over stdio (no --json); `mcp install` has one
    "mcp": [["mcp", "install", "nosuch", "--json"]],
    "skill": [["skill", "install", "nosuch", "--json"]],
    "watch": [["watch", BAD_RUN, "--json"], ["watch", RUN, "--json"]],
    "savings": [["savings", "--since", "x", "--json"]],
    "history": [["history", "--since", "x", "--json"]],
    # `dash` serves a page and has no --json
    "dash": [["dash", "--port", "x"]],
    "gc": [["gc", "--older-than", "5x", "--json"], ["gc", "--keep", "x", "--json"]],
    "pool": [["pool", "status", "--repo", "{missing}", "--json"], ["pool", "bogus", "--json"]],
    # `agent serve` logs to stderr and prints nothing on stdout: it has no --json
    "agent": [["agent", "serve", "--profile", "nosuch"]],
    "agents": [["agents", "--repo", "{repo}", "--json"]],  # no hub named anywhere
    "warm": [["warm", "start", "--idle", "x", "--json"], ["warm", "bogus", "--json"]],
}

# The verbs whose failure keeps their own keys (docs/cli.md): `ok: false` and what was checked.
OWN_KEYS = {
    "check": {"ok", "task", "title", "dry_run", "repo", "base", "routing", "warnings", "review"},
    "delegate": {"ok", "task", "title", "dry_run", "repo", "base", "routing", "warnings", "review"},  # --dry-run
    "plan check": {"ok", "plan", "title", "tasks", "waves", "warnings"},
}


def _is_error(obj: object) -> bool:
    return isinstance(obj, dict) and all(isinstance(obj.get(k), str) for k in ("code", "message", "hint")) \
        and bool(obj["code"]) and bool(obj["message"])


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bosun", *argv], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def test_every_verb_fails_with_the_error_alone(repo: Path, tmp_path: Path) -> None:
    assert set(CASES) == set(HANDLERS), "give each verb of dispatch.HANDLERS its failing command lines here"
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "bosun.toml").write_text("profiles = [\n")
    fill = {"{repo}": str(repo), "{missing}": str(tmp_path / "missing.json"), "{broken}": str(broken),
            "{task}": str(task_yaml(tmp_path / "task.json")), "{bad_task}": str(tmp_path / "bad.json")}
    (tmp_path / "bad.json").write_text('{"title": "t", "colour": "red"}')
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BOSUN_WARM": "0"}
    for name in ("BOSUN_NATS_URL", "BOSUN_NATS_CREDS", "BOSUN_NATS_NKEY_SEED"):
        env.pop(name, None)
    lines = [(verb, [fill.get(a, a) for a in argv]) for verb, rows in CASES.items() if isinstance(rows, list)
             for argv in rows]
    with ThreadPoolExecutor(max_workers=4) as pool:  # each call is a fresh interpreter: ~0.2-0.5 s
        done = list(pool.map(lambda line: _run(line[1], env, repo), lines))

    wrong = []
    for (verb, argv), proc in zip(lines, done, strict=True):
        shown = " ".join(argv).replace(str(tmp_path), "TMP")
        out = proc.stdout.splitlines()
        if proc.returncode != BAD_INPUT:
            wrong.append(f"{shown}: exit {proc.returncode}, not {BAD_INPUT}: {proc.stderr[-300:]}")
            continue
        if "--json" not in argv:
            if out:
                wrong.append(f"{shown}: no --json, yet stdout has {out[:2]}")
            continue
        if len(out) != 1:
            wrong.append(f"{shown}: {len(out)} lines on stdout, not one JSON object")
            continue
        res = json.loads(out[0])
        if not isinstance(res, dict) or not _is_error(res.get("error")):
            wrong.append(f"{shown}: no {{error: {{code, message, hint}}}}: {out[0][:300]}")
            continue
        problems = res.get("problems", [])
        if not isinstance(problems, list) or not all(_is_error(p) for p in problems):
            wrong.append(f"{shown}: problems are not [{{code, message, hint}}]: {problems}")
        extra = set(res) - {"error", "problems"} - OWN_KEYS.get(verb, set())
        if extra:
            wrong.append(f"{shown}: keys beyond the error (no run exists): {sorted(extra)}")
    assert not wrong, "\n".join(wrong)
