"""Verdicts mean what they say, end to end through the CLI, for the command and native workers and
real worker CLIs against the scripted model server:

- an escalated self-review is refused by `approve` and never merged by `--auto-approve`;
- a read-only run's writes can never land, whatever is waived;
- the citations of explore and review answers are checked against the start tree;
- `cancel` stops a worker on a stalled stream within 2 s, and the `delegate` that owned the run
  reports the cancellation;
- the result's `error` describes the current state only (after approve, integrate and discard).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bosun.replay import ReplayServer
from tests.conftest import ROOT, WORKER, git, task_yaml
from tests.e2e.worker_support import API, KEY_ENV, MODEL, binary, processes_of

CLI = [pytest.mark.slow, pytest.mark.cli]
ADAPTERS = ["command", "native", *(pytest.param(a, marks=CLI) for a in ("pi", "codex", "claude"))]

READ = {"read": "src/calc.py"}
EDIT = {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"}
BAD_ANSWER = ("add() is defined at src/calc.py:1 and subtracts: `src/calc.py:2`: `return a - b  # bug`. "
              "The same bug is in calc.py:999 and in nofile.py:3.")
GOOD_ANSWER = "add() is defined at src/calc.py:1; `src/calc.py:2`: `return a - b  # bug`; its test is test_calc.py:4."
REVIEW_P1 = json.dumps({
    "diff_sha256": "0" * 64,
    "criteria": [{"criterion": "add() adds", "status": "met", "evidence": ["src/calc.py:2"]}],
    "findings": [{"severity": "P1", "title": "overflow not handled", "path": "src/calc.py", "line": 2}],
    "summary": "add() adds now.",
})


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "dummy")


def _toml(repo: Path, *lines: str, top: str = "") -> None:
    text = (repo / "bosun.toml").read_text()
    if top:
        text = text.replace('default_profile = "fix"', 'default_profile = "fix"\n' + top)
    (repo / "bosun.toml").write_text(text + "\n" + "\n".join(lines) + "\n")


@contextmanager
def worker(repo: Path, adapter: str, script: list[dict[str, Any]], command_mode: str = "answer", **extra: Any):
    """A profile named ``w`` for ``adapter``; real model-backed adapters play ``script`` from a replay
    server, the command adapter runs tests/workers/scripted.py in ``command_mode``."""
    settings = [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    if adapter == "command":
        _toml(repo, "[profiles.w]", 'adapter = "command"', 'env = ["ANSWER_TEXT", "ANSWER_WRITE", "REVIEW_VARIANT"]',
              f"command = {json.dumps([sys.executable, str(WORKER), command_mode])}", *settings)
        yield None
        return
    with ReplayServer(script) as srv:
        api = "pi" if adapter == "pi" else API.get(adapter, "openai")
        lines = ["[profiles.w]", f'adapter = "{adapter}"', f'model = "{MODEL.get(adapter, "mock-model")}"',
                 f'base_url = "{srv.base_url(api)}"', f'api_key_env = "{KEY_ENV}"', "timeout_s = 120", *settings]
        if adapter != "native":
            lines.append(f'binary = "{binary(adapter)}"')
        _toml(repo, *lines)
        yield srv


def _gate(res: dict, code: str) -> dict:
    return {g["code"]: g for g in res["gates"]}[code]


# --- self-review -------------------------------------------------------------------------------


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_escalated_self_review_waits_for_a_person(cli, repo, tmp_path, monkeypatch, adapter):
    monkeypatch.setenv("REVIEW_VARIANT", "p1")
    head = git(repo, "rev-parse", "HEAD")
    _toml(repo, top="self_review_min_diff_lines = 0")
    task = task_yaml(tmp_path / "t.json", acceptance=["add() adds"])
    script = [READ, EDIT, {"say": "Fixed add()."}, {"say": REVIEW_P1}]
    with worker(repo, adapter, script, command_mode="reviewed", self_review=True):
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "w", "--auto-approve", "--json")
    assert code == 7 and res["state"] == "verified", res
    assert res["verdict"]["outcome"] == "needs_review"
    assert res["review"]["verdict"] == "escalated", res["review"]
    assert any("P1 finding: \"overflow not handled\"" in r for r in res["review"]["reasons"])
    assert "SELF_REVIEW_ESCALATED" in [r["code"] for r in res["verdict"]["reasons"]]
    assert git(repo, "rev-parse", "HEAD") == head  # --auto-approve merged nothing
    code, out = cli("approve", res["id"], "--json")
    assert code == 7 and out["error"]["code"] == "NEEDS_REVIEW", out
    assert "overflow not handled" in out["error"]["message"]
    code, text = cli("show", res["id"])
    assert text.splitlines()[1].startswith("verdict: needs review (SELF_REVIEW_ESCALATED"), text
    assert any(line.startswith("self-review: ESCALATED") for line in text.splitlines()), text


# --- read-only modes ---------------------------------------------------------------------------


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_read_only_writes_never_land_even_with_waivers(cli, repo, tmp_path, monkeypatch, adapter):
    """A read-only run that writes (the command worker ignores BOSUN_MODE; Codex's test mode runs in
    its workspace-write sandbox) is rejected, its writes are discarded, and no waiver approves it.
    Where the CLI refuses the write itself, nothing changes and nothing lands either."""
    monkeypatch.setenv("ANSWER_WRITE", "1")
    monkeypatch.setenv("ANSWER_TEXT", GOOD_ANSWER)
    if adapter == "command":
        # The kernel sandbox already refuses an explore run's writes (tests/e2e/test_sandbox_hostile.py);
        # without it, bosun itself must discard them: that is what this case checks.
        toml = repo / "bosun.toml"
        toml.write_text('sandbox = "off"\n' + toml.read_text())
        git(repo, "commit", "-qam", "sandbox off for this test")
    head = git(repo, "rev-parse", "HEAD")
    mode = "test" if adapter == "codex" else "explore"
    task = task_yaml(tmp_path / "t.json", mode=mode, verify=[], locked=[], prompt="Why does add() fail?")
    # Pi and Claude Code offer no edit tool in read-only modes, so their model cannot even ask for one.
    script = [READ, EDIT, {"say": GOOD_ANSWER}] if adapter in ("command", "native", "codex") else [READ, {"say": GOOD_ANSWER}]
    with worker(repo, adapter, script):
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "w", "--json")
    wrote = adapter in ("command", "codex")
    if wrote:
        assert code == 3 and res["state"] == "rejected", res
        gate = _gate(res, "READ_ONLY_VIOLATION")
        assert not gate["ok"] and "src/calc.py" in gate["detail"], gate
        assert res["read_only_violation"]["count"] >= 1
        assert (Path(res["run_dir"]) / "violation.patch").read_text().count("return a + b") == 1
        assert "return a - b  # bug" in (Path(res["worktree"]) / "src" / "calc.py").read_text()  # discarded
        assert res["files_changed"] == 0
        code, out = cli("approve", res["id"], "--waive", "READ_ONLY_VIOLATION", "--reason", "want it", "--json")
        assert code == 2 and "cannot be waived" in out["error"]["message"], out
        waive = ["--waive", "NO_CHANGES", "--waive", "VERIFY_FAILED", "--waive", "INVALID_CITATIONS"]
        code, out = cli("approve", res["id"], *waive, "--reason", "want it", "--json")
        assert code == 3 and out["error"]["code"] == "READ_ONLY_VIOLATION", out
        code, out = cli("integrate", res["id"], "--json")
        assert code != 0 and out["state"] == "rejected", out
        code, out = cli("verify", res["id"], "--json")  # the restored tree does not wash the run clean
        assert code == 3 and not _gate(out, "READ_ONLY_VIOLATION")["ok"], out
        code, text = cli("show", res["id"])
        assert "read-only violation" in text and "can never be approved" in text
    else:
        assert res["state"] == "verified" and res["files_changed"] == 0, res
        code, out = cli("approve", res["id"], "--waive", "VERIFY_FAILED", "--reason", "an answer, not a change", "--json")
        assert code == 0 and out["state"] == "approved", out
        cli("integrate", res["id"], "--json")
    assert git(repo, "rev-parse", "HEAD") == head
    assert "return a - b  # bug" in (repo / "src" / "calc.py").read_text()
    assert not (repo / "src" / "extra.py").exists()


# --- checked answers ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["explore", "review"])
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_invalid_citations_are_flagged(cli, repo, tmp_path, monkeypatch, adapter, mode):
    monkeypatch.setenv("ANSWER_TEXT", BAD_ANSWER)
    task = task_yaml(tmp_path / "t.json", mode=mode, verify=[], locked=[], prompt="Where is add() wrong?")
    with worker(repo, adapter, [READ, {"say": BAD_ANSWER}]):
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "w", "--json")
    assert code == 3 and res["state"] == "rejected", res
    assert res["answer_verified"] is False
    cites = res["citations"]
    assert (cites["checked"], cites["valid"]) == (4, 2), cites
    problems = {c["cite"]: c["problem"] for c in cites["invalid"]}
    assert problems == {"calc.py:999": "src/calc.py:999 is out of range (6 lines)", "nofile.py:3": "nofile.py does not exist"}
    assert {c["cite"] for c in cites["backed"]} == {"src/calc.py:1", "src/calc.py:2"}
    assert not _gate(res, "INVALID_CITATIONS")["ok"]
    code, text = cli("show", res["id"])
    assert "answer: NOT verified - 2 of 4 citation(s) are not backed" in text, text
    assert "nofile.py:3: nofile.py does not exist" in text


@pytest.mark.parametrize("adapter", ["command", "native"])
def test_backed_citations_verify_the_answer(cli, repo, tmp_path, monkeypatch, adapter):
    monkeypatch.setenv("ANSWER_TEXT", GOOD_ANSWER)
    task = task_yaml(tmp_path / "t.json", mode="explore", verify=[], locked=[], prompt="Where is add() wrong?")
    with worker(repo, adapter, [READ, {"say": GOOD_ANSWER}]):
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "w", "--json")
    assert code == 0 and res["state"] == "verified", res
    assert res["answer_verified"] is True
    assert list(res)[:4] == ["id", "state", "verdict", "answer_verified"]
    assert res["citations"]["checked"] == res["citations"]["valid"] == 3
    assert {c.get("resolved") for c in res["citations"]["backed"]} == {None, "tests/test_calc.py"}


# --- cancel ------------------------------------------------------------------------------------


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_cancel_stops_a_stalled_worker_and_the_delegate_reports_it(cli, repo, task_file, adapter):
    from bosun.store.db import open_store

    # The worker alone: no fail-to-pass baseline running the tests beside it.
    _toml(repo, top='baseline = "off"')

    with worker(repo, adapter, [{"fault": "stall", "stall_s": 600}], command_mode="hang") as srv:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        owner = subprocess.Popen(
            [sys.executable, "-m", "bosun", "delegate", str(task_file), "--repo", str(repo), "--profile", "w", "--json"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        try:
            run = _wait_until_stalled(open_store(), srv, owner)
            started = time.monotonic()
            code, res = cli("cancel", run.id, "--json")
            took = time.monotonic() - started
            assert code == 0 and res["state"] == "cancelled", res
            sys.__stderr__.write(f"cancel of a stalled {adapter} worker took {took:.2f}s\n")
            # The native worker's stream is cut in-process; a CLI's process group must also be reaped,
            # which a loaded machine can slow down.
            limit = 2.0 if adapter == "native" else 5.0
            assert took < limit, f"cancel took {took:.2f}s"
            out, err = owner.communicate(timeout=30)
        finally:
            if owner.poll() is None:
                os.killpg(owner.pid, 9)
                owner.wait()
    assert owner.returncode == 1, (out, err)
    reported = json.loads(out)
    assert reported["state"] == "cancelled" and reported["error"]["code"] == "CANCELLED", reported
    assert not processes_of(res["run_dir"])
    code, gone = cli("discard", run.id, "--json")
    assert code == 0 and gone["state"] == "cleaned" and gone["error"] is None, gone


def _wait_until_stalled(store: Any, srv: ReplayServer | None, owner: subprocess.Popen) -> Any:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert owner.poll() is None, owner.communicate()
        runs = store.list_runs(limit=1)
        if runs and runs[0].state == "working":
            run = store.require_run(runs[0].id)
            if (srv is None and run.data.worker_pid) or (srv is not None and srv.requests):
                time.sleep(0.3)  # the stream is open and silent
                return run
        time.sleep(0.05)
    raise AssertionError("the worker never started")


def test_native_wall_timeout_cuts_a_stalled_stream(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", timeout_s=2, verify=[])  # no baseline run to wait for
    with worker(repo, "native", [{"fault": "stall", "stall_s": 600}], idle_timeout_s=300):
        started = time.monotonic()
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "w", "--json")
        took = time.monotonic() - started
    assert code == 4 and res["error"]["code"] == "TIMEOUT", res
    assert "wall timeout (2s)" in res["error"]["message"]
    assert took < 2 + 5, f"took {took:.1f}s"  # prepare and the report, plus at most a poll interval


# --- no stale error ----------------------------------------------------------------------------


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_no_stale_error_after_approve_and_integrate(cli, repo, tmp_path, adapter):
    task = task_yaml(tmp_path / "t.json", locked=["tests/**", "src/calc.py"])
    with worker(repo, adapter, [READ, EDIT, {"say": "Fixed add()."}], command_mode="fix"):
        code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "w", "--json")
    assert code == 3 and res["error"]["code"] == "GATES_FAILED", res
    code, res = cli("approve", res["id"], "--waive", "LOCKED_PATH_CHANGED", "--reason", "the fix is there", "--json")
    assert code == 0 and res["state"] == "approved" and res["error"] is None, res
    code, res = cli("integrate", res["id"], "--json")
    assert code == 0 and res["state"] == "cleaned" and res["error"] is None, res
    assert "return a + b" in (repo / "src" / "calc.py").read_text()
    code, text = cli("show", res["id"])
    assert "error:" not in text
