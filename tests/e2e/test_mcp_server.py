"""`bosun mcp` through the MCP SDK's client over stdio: the tools a parent agent calls."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.conftest import git
from tests.e2e.mcp_support import add_sleepy_profile, call, wait_done, with_session

pytestmark = pytest.mark.slow

TOOLS = {"delegate", "wait", "status", "result", "diff", "approve", "integrate", "revert", "apply", "discard", "cancel",
         "plan_run", "plan_status", "workers", "history", "savings"}

TASK = {
    "title": "Fix add()",
    "prompt": "add() subtracts; make it add. Do not touch the tests.",
    "verify": ["python -m pytest -q tests"],
    "locked": ["tests/**"],
    "timeout_s": 60,
}


def _task(**over: object) -> dict:
    import sys

    t = dict(TASK, **over)
    t["verify"] = [f"{sys.executable} -m pytest -q tests"]
    return t


def test_delegate_wait_again_result_approve_integrate(repo: Path, tmp_path: Path):
    add_sleepy_profile(tmp_path, seconds=3)
    progress: list[float] = []

    async def body(s):
        tools = await s.list_tools()
        assert {t.name for t in tools.tools} == TOOLS
        assert all(len(t.description or "") > 40 for t in tools.tools)

        err, started = await call(s, "delegate", {"task": _task(), "profile": "sleepy"})
        assert not err, started
        assert started["state"] == "prepared" and started["done"] is False
        run_id = started["id"]

        # The worker sleeps 3 s: a short wait comes back "not done, call again".
        err, first = await call(s, "wait", {"run_id": run_id, "timeout_s": 0.5})
        assert not err and first["done"] is False and first["state"] in ("prepared", "working"), first

        async def on_progress(p: float, total: float | None, msg: str | None) -> None:
            progress.append(p)

        err, done = await call(s, "wait", {"run_id": run_id, "timeout_s": 50}, progress_callback=on_progress)
        assert not err, done
        assert done["done"] is True and done["state"] == "verified", done
        assert done["verdict"]["outcome"] == "landable" and done["proven"] is True, done
        assert list(done)[:2] == ["verdict", "summary"] and done["summary"].startswith("landable: verified and proven")
        assert done["verification"]["passed"] is True
        assert done["gates"]["red"] == []
        assert [f["path"] for f in done["files_changed"]] == ["src/calc.py"]
        assert done["final_message"].strip().endswith("Fixed add().")
        assert done["receipt"]["worker_usage"]["input_tokens"] == 900
        assert "diff" not in done

        err, res = await call(s, "result", {"run_id": run_id, "include_diff": True})
        assert not err and "+    return a + b" in res["diff"]
        assert "return a - b" in (repo / "src/calc.py").read_text()  # nothing landed yet

        err, approved = await call(s, "approve", {"run_id": run_id})
        assert not err and approved["state"] == "approved", approved
        err, landed = await call(s, "integrate", {"run_id": run_id})
        assert not err and landed["state"] == "cleaned", landed
        err, hist = await call(s, "history", {"search": "add"})
        assert not err and [r["id"] for r in hist["runs"]] == [run_id]
        return landed

    landed = with_session(repo, body)
    assert progress, "wait sent no progress notification"
    assert "return a + b" in (repo / "src/calc.py").read_text()
    assert git(repo, "rev-parse", "HEAD").strip() == landed["merged_commit"]


def test_bad_arguments_come_back_as_errors_and_the_server_lives_on(repo: Path, tmp_path: Path):
    async def body(s):
        cases = [
            ("wait", {"run_id": 5}),
            ("wait", {}),
            ("result", {"run_id": "../../etc/passwd"}),
            ("status", {"run_id": "20990101-000000-abcdef"}),
            ("delegate", {}),
            ("delegate", {"task": {"title": "no prompt"}}),
            ("delegate", {"task": _task(), "profile": "no-such-profile"}),
            ("delegate", {"task_path": "missing.yaml"}),
            ("history", {"limit": "lots"}),
            ("plan_status", {"plan_id": "nope"}),
            ("approve", {"run_id": "20990101-000000-abcdef", "waive": ["SCOPE"]}),
            ("no_such_tool", {}),
        ]
        outs = []
        for tool, args in cases:
            err, out = await call(s, tool, args)
            assert err, (tool, args, out)
            outs.append(out["error"])
        tools = await s.list_tools()  # still serving
        return outs, len(tools.tools)

    outs, n = with_session(repo, body)
    assert n == len(TOOLS)
    for e in outs:
        assert set(e) == {"code", "message", "hint"} and e["message"], e
    codes = [e["code"] for e in outs]
    assert codes[0] == "BAD_INPUT" and codes[1] == "BAD_INPUT"
    assert codes[3] == "UNKNOWN_RUN"
    # An unknown profile is found by the pre-flight checks, before anything is created.
    assert codes[6] == "PREFLIGHT" and "unknown profile" in outs[6]["message"], outs[6]
    assert "INTERNAL" not in codes


def test_cancel_a_running_delegation(repo: Path, task_file: Path):
    async def body(s):
        err, started = await call(s, "delegate", {"task_path": str(task_file), "profile": "hang"})
        assert not err, started
        run_id = started["id"]
        for _ in range(100):  # until the worker is running
            err, st = await call(s, "status", {"run_id": run_id})
            if st["state"] == "working":
                break
            await anyio.sleep(0.1)
        err, cancelled = await call(s, "cancel", {"run_id": run_id})
        assert not err and cancelled["state"] == "cancelled", cancelled
        done = await wait_done(s, run_id)
        assert done["state"] == "cancelled"
        err, gone = await call(s, "discard", {"run_id": run_id})
        assert not err and gone["state"] == "cleaned", gone
        return gone

    gone = with_session(repo, body)
    assert not Path(gone["worktree"]).exists()
    assert "return a - b" in (repo / "src/calc.py").read_text()


def test_two_concurrent_delegations(repo: Path, tmp_path: Path):
    import json
    import os
    import sys

    add_sleepy_profile(tmp_path, seconds=2)
    notified = tmp_path / "notified"
    notified.mkdir()
    notifier = "import json, sys, pathlib; r = json.load(sys.stdin); pathlib.Path(sys.argv[1], r['id']).write_text(r['state'])"
    with Path(os.environ["BOSUN_CONFIG"]).open("a") as fh:
        fh.write(f"\n[notify]\ncommand = [{json.dumps(sys.executable)}, \"-c\", {json.dumps(notifier)}, "
                 f"{json.dumps(str(notified))}]\n")

    async def body(s):
        results: dict[str, dict] = {}

        async def one(key: str, title: str) -> None:
            err, started = await call(s, "delegate", {"task": _task(title=title), "profile": "sleepy"})
            assert not err, started
            results[key] = await wait_done(s, started["id"])

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a", "Fix add() A")
            tg.start_soon(one, "b", "Fix add() B")
        return results

    results = with_session(repo, body)
    assert results["a"]["id"] != results["b"]["id"]
    assert {r["state"] for r in results.values()} == {"verified"}
    # The detached processes ran [notify] when their runs stopped.
    assert {p.name: p.read_text() for p in notified.iterdir()} == {r["id"]: "verified" for r in results.values()}


def test_plan_run_and_status_workers_and_diff(repo: Path, tmp_path: Path):
    import sys

    verify = [f"{sys.executable} -m pytest -q tests"]
    plan = {"title": "Fix add()", "verify": verify,
            "tasks": [{"id": "fix", "prompt": "add() subtracts; make it add.", "owns": ["src/calc.py"],
                       "profile": "fix", "verify": verify, "locked": ["tests/**"]}]}

    async def body(s):
        err, bad = await call(s, "plan_run", {"plan": {"title": "no tasks"}})
        assert err and bad["error"]["code"] in ("INVALID_PLAN", "BAD_INPUT"), bad
        err, started = await call(s, "plan_run", {"plan": plan})
        assert not err, started
        assert started["id"].startswith("p-") and started["tasks"][0]["id"] == "fix"
        for _ in range(600):
            err, st = await call(s, "plan_status", {"plan_id": started["id"]})
            assert not err, st
            if st["state"] != "running":
                break
            await anyio.sleep(0.2)
        err, workers = await call(s, "workers", {})
        run_id = st["tasks"][0]["run_id"]
        err2, d = await call(s, "diff", {"run_id": run_id, "stat_only": True})
        return st, workers, d, err2

    st, workers, d, err = with_session(repo, body)
    assert st["state"] == "succeeded", st
    assert "return a + b" in (repo / "src/calc.py").read_text()
    assert {w["profile"] for w in workers["workers"]} >= {"fix", "hang", "slow_fix"}
    assert not err and d["stats"]["files"] == 1 and d["diff"] is None


def _measured(run_id: str) -> dict:
    from bosun.store.db import open_store

    return open_store().require_run(run_id).data.parent_measured or {}


def _stamp(when: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _assistant_line(msg_id: str, when: float, usage: dict) -> str:
    import json

    return json.dumps({"type": "assistant", "timestamp": _stamp(when), "uuid": msg_id,
                       "message": {"id": msg_id, "role": "assistant", "content": [], "usage": usage}}) + "\n"


def test_the_parent_is_measured_between_delegate_and_the_end_of_its_review(repo: Path, task_file: Path, tmp_path: Path):
    """As Claude Code does: the turn that calls approve is timestamped before the call and written to the
    log after the call returned, with the call's result. It is counted all the same."""
    import json
    import os
    import time

    from bosun.parents.sessionlogs import claude_slug

    home = tmp_path / "parent-home"
    log = home / ".claude" / "projects" / claude_slug(repo) / "session.jsonl"
    log.parent.mkdir(parents=True)
    before = {"input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 9000, "output_tokens": 99}
    log.write_text(_assistant_line("msg_before", time.time() - 60, before))
    during = {"input_tokens": 7, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 12000, "output_tokens": 50}
    deciding = {"input_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 12500, "output_tokens": 9}

    async def body(s):
        err, started = await call(s, "delegate", {"task_path": str(task_file), "profile": "fix"})
        assert not err, started
        with log.open("a") as fh:  # the parent's own turns while the run is in flight
            fh.write(_assistant_line("msg_during", time.time(), during))
        done = await wait_done(s, started["id"])
        assert done["receipt"]["parent_measured"]["measured"] is False  # the review has not ended
        decided_at = time.time()
        err, approved = await call(s, "approve", {"run_id": started["id"]})
        assert not err, approved
        assert _measured(started["id"])["pending"] is True  # its own turn is not written yet
        with log.open("a") as fh:  # now the host writes the turn that called approve, and the call's result
            fh.write(_assistant_line("msg_approve", decided_at, deciding))
            fh.write(json.dumps({"type": "user", "timestamp": _stamp(time.time() + 0.01),
                                 "message": {"role": "user", "content": [{"type": "tool_result"}]}}) + "\n")
        err, res = await call(s, "result", {"run_id": started["id"]})
        err, totals = await call(s, "savings", {})
        return res, totals

    res, totals = with_session(repo, body, env={"HOME": str(home), "PARENT_AGENT": "claude-code"})
    measured = res["receipt"]["parent_measured"]
    assert measured["measured"] is True and measured["agent"] == "claude-code", measured
    window = 7 + 100 + 12000 + 50 + 3 + 12500 + 9  # the earlier turn is not counted, the approving one is
    assert measured["tokens"]["total_tokens"] == window, measured
    assert [t["id"] for t in measured["turns"]] == ["msg_during", "msg_approve"]
    assert measured["cost_usd"] > 0 and "saving_usd" in measured
    assert res["receipt"]["parent_estimated"]["parent_direct_tokens"] > 0
    metrics = json.loads((Path(os.environ["BOSUN_HOME"]) / "runs" / res["id"] / "metrics.json").read_text())
    assert metrics["parent_measured"]["tokens"]["total_tokens"] == window
    assert totals["parent_measured"]["runs"] == 1 and totals["parent_measured"]["parent_tokens"] == window
    assert totals["parent_estimated"]["runs"] == 1


def test_savings_reads_a_window_that_was_still_pending(repo: Path, task_file: Path, tmp_path: Path):
    import time

    from bosun.parents.sessionlogs import claude_slug

    home = tmp_path / "parent-home"
    log = home / ".claude" / "projects" / claude_slug(repo) / "session.jsonl"
    log.parent.mkdir(parents=True)
    turn = {"input_tokens": 7, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100, "output_tokens": 3}
    log.write_text(_assistant_line("msg_before", time.time() - 60, turn))

    async def body(s):
        err, started = await call(s, "delegate", {"task_path": str(task_file), "profile": "fix"})
        await wait_done(s, started["id"])
        with log.open("a") as fh:
            fh.write(_assistant_line("msg_during", time.time(), turn))
        err, approved = await call(s, "approve", {"run_id": started["id"]})
        assert not err and _measured(started["id"])["pending"] is True, approved
        with log.open("a") as fh:  # the parent goes on after the call; nothing asks bosun about the run
            fh.write(_assistant_line("msg_after", time.time() + 0.01, turn))
        err, totals = await call(s, "savings", {})
        return totals

    totals = with_session(repo, body, env={"HOME": str(home), "PARENT_AGENT": "claude-code"})
    assert totals["parent_measured"]["runs"] == 1 and totals["parent_measured"]["parent_tokens"] == 110, totals
    assert totals["not_measured"] == {}


# -- a run that needs review: the parent carries its person's yes, never its own ----------------------


def _unproven_task() -> dict:
    import sys

    return dict(TASK, verify=[f"{sys.executable} -m pytest -q tests/test_calc.py::test_sub"])  # passed before


def test_approve_of_a_run_that_needs_review_names_every_reason(repo: Path):
    async def body(s):
        err, started = await call(s, "delegate", {"task": _unproven_task(), "profile": "fix"})
        assert not err, started
        run_id = started["id"]
        done = await wait_done(s, run_id)
        assert done["state"] == "verified" and done["verdict"]["outcome"] == "needs_review", done
        assert done["summary"].startswith("needs review (NOT_PROVEN): a person must decide"), done["summary"]
        assert "Read these reasons to your person before approving" in done["summary"]

        err, out = await call(s, "approve", {"run_id": run_id})
        assert err and out["error"]["code"] == "NEEDS_REVIEW", out
        assert "NOT_PROVEN" in out["error"]["message"] and "acknowledge=['NOT_PROVEN']" in out["error"]["hint"]
        assert out["verdict"]["outcome"] == "needs_review"

        err, out = await call(s, "approve", {"run_id": run_id, "acknowledge": ["WAIVED"]})
        assert err and out["error"]["code"] == "ACKNOWLEDGE_MISSING", out
        assert out["error"]["message"].endswith("missing: NOT_PROVEN"), out
        err, out = await call(s, "approve", {"run_id": run_id, "acknowledge": []})
        assert err and out["error"]["code"] == "ACKNOWLEDGE_MISSING" and "NOT_PROVEN" in out["error"]["message"]
        err, out = await call(s, "status", {"run_id": run_id})
        assert not err and out["state"] == "verified"  # every refusal left the run as it was

        err, out = await call(s, "approve", {"run_id": run_id, "acknowledge": ["NOT_PROVEN"]})
        assert not err and out["state"] == "approved", out
        assert out["verdict"]["acknowledged"]["by"] == "parent"
        assert out["verdict"]["acknowledged"]["codes"] == ["NOT_PROVEN"]

    with_session(repo, body)


def test_auto_approve_leaves_a_run_that_needs_review_waiting(repo: Path):
    from tests.conftest import user_state

    (repo / "notes.txt").write_text("uncommitted work of the user\n")
    before = user_state(repo)

    async def body(s):
        err, started = await call(s, "delegate", {"task": _unproven_task(), "profile": "fix", "auto_approve": True})
        assert not err, started
        done = await wait_done(s, started["id"])
        return done

    done = with_session(repo, body)
    assert done["state"] == "verified" and done["verdict"]["outcome"] == "needs_review", done
    assert done["verdict"]["acknowledged"] is None and done["merged_commit"] is None
    assert "acknowledge=['NOT_PROVEN']" in done["next"]
    assert user_state(repo) == before  # the branch, the index and the files: byte for byte
    assert "return a - b  # bug" in (repo / "src/calc.py").read_text()
