"""The parent measured from its own session log (recorded Claude Code and Codex logs)."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

from bosun.core.config import Prices
from bosun.parents import meter
from bosun.parents.sessionlogs import claude_slug, claude_usage, codex_usage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parents"
PROJECT = Path("/home/dev/calc")


def ts(hms: str) -> float:
    return datetime.fromisoformat(f"2026-11-30T{hms}+00:00").timestamp()


START, END = ts("10:00:10"), ts("10:01:30")


def test_claude_usage_counts_each_message_once_inside_the_window():
    got = claude_usage(FIXTURES / "claude-session.jsonl", START, END)
    assert got is not None
    # msg_01BBB (its last line), msg_01CCC and msg_01DDD; the first and last messages are outside.
    assert got["tokens"] == {"input_tokens": 15 + 1450 + 49450, "cached_input_tokens": 49450,
                             "cache_write_tokens": 1450, "output_tokens": 285, "total_tokens": 51200}
    assert [t["id"] for t in got["turns"]] == ["msg_01BBB", "msg_01CCC", "msg_01DDD"]
    assert sum(t["tokens"] for t in got["turns"]) == 51200
    assert got["last_entry_at"] == ts("10:05:00")


def test_codex_usage_is_the_growth_of_the_cumulative_count():
    got = codex_usage(FIXTURES / "codex-rollout.jsonl", START, END)
    assert got is not None
    assert got["tokens"] == {"input_tokens": 23700, "cached_input_tokens": 19800, "output_tokens": 260,
                             "reasoning_tokens": 102, "total_tokens": 23960}
    assert sum(t["tokens"] for t in got["turns"]) == 23960 and all(t["tokens"] > 0 for t in got["turns"])


def test_the_window_is_read_once_the_log_holds_its_end(tmp_path: Path):
    """The turn that made the call ending the review is timestamped before the call but written after
    it: a reading at the call would leave it out, so the window waits for a line after its end."""
    lines = (FIXTURES / "claude-session.jsonl").read_text().splitlines(keepends=True)
    approving = next(i for i, line in enumerate(lines) if "mcp__bosun__approve" in line)
    log = tmp_path / "session.jsonl"
    log.write_text("".join(lines[:approving]))  # at the approve call: its own turn is not written yet
    note = {"agent": "claude-code", "log": str(log), "started_at": START}
    end = ts("10:01:05")
    early = meter.measure(note, end)
    assert early["measured"] is False and early["pending"] is True and "tokens" not in early, early
    log.write_text("".join(lines[:approving + 1]))  # the turn, but nothing after the call yet
    assert meter.measure(note, end)["pending"] is True
    log.write_text("".join(lines))  # the host went on writing after the call
    done = meter.measure(note, end)
    assert done["measured"] is True and "pending" not in done
    assert [t["id"] for t in done["turns"]] == ["msg_01BBB", "msg_01CCC", "msg_01DDD"]
    assert done["tokens"]["total_tokens"] == 51200 and (done["from"], done["to"]) == (START, end)


def test_a_log_without_usage_is_not_measured(tmp_path: Path):
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"type": "assistant", "message": {"content": "no usage here"}}\n{broken\n')
    assert claude_usage(odd, START, END) is None
    assert codex_usage(odd, START, END) is None
    assert claude_usage(tmp_path / "missing.jsonl", START, END) is None


def test_detect_parent():
    assert meter.detect_parent({"PARENT_AGENT": "Claude"}) == "claude-code"
    assert meter.detect_parent({"PARENT_AGENT": "cursor"}) == "cursor"
    assert meter.detect_parent({}, client_name="claude-code") == "claude-code"
    assert meter.detect_parent({}, client_name="codex-mcp-client") == "codex"
    assert meter.detect_parent({"CLAUDECODE": "1"}) == "claude-code"
    assert meter.detect_parent({"CODEX_SANDBOX": "seccomp"}) == "codex"
    assert meter.detect_parent({}) is None


def test_claude_code_end_to_end_from_a_home_directory(tmp_path: Path):
    project_dir = tmp_path / ".claude" / "projects" / claude_slug(PROJECT)
    project_dir.mkdir(parents=True)
    older = project_dir / "0000-older.jsonl"
    older.write_text("")
    shutil.copy(FIXTURES / "claude-session.jsonl", project_dir / "5f0c9a1e.jsonl")
    env = {"HOME": str(tmp_path), "PARENT_AGENT": "claude-code"}
    note = meter.start([PROJECT], env, now=START)
    assert note["log"] == str(project_dir / "5f0c9a1e.jsonl")
    out = meter.measure(note, END)
    assert out["measured"] is True and out["tokens"]["total_tokens"] == 51200
    receipt = meter.measured_receipt(out, {"parent_direct_cost_usd": 1.0}, Prices(input=3, cached_input=0.3, output=15),
                                     worker_cost=0.01)
    assert receipt is not None
    # 1465 uncached input at $3/M + 49450 cached at $0.30/M + 285 output at $15/M
    assert receipt["cost_usd"] == round((1465 * 3 + 49450 * 0.3 + 285 * 15) / 1e6, 6)
    assert receipt["saving_usd"] == round(1.0 - receipt["cost_usd"] - 0.01, 6)


def test_codex_end_to_end_picks_the_rollout_of_this_directory(tmp_path: Path):
    day = tmp_path / "codex" / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    other = day / "rollout-2026-11-30T09-00-00-other.jsonl"
    other.write_text((FIXTURES / "codex-rollout.jsonl").read_text().replace("/home/dev/calc", "/elsewhere"))
    mine = day / "rollout-2026-11-30T10-00-00-0199a2b3.jsonl"
    shutil.copy(FIXTURES / "codex-rollout.jsonl", mine)
    import os

    os.utime(other, (END + 100, END + 100))  # newer, but another project
    env = {"CODEX_HOME": str(tmp_path / "codex"), "PARENT_AGENT": "codex"}
    note = meter.start([PROJECT], env, now=START)
    assert note["log"] == str(mine)
    assert meter.measure(note, END)["tokens"]["total_tokens"] == 23960


def test_nothing_is_invented(tmp_path: Path):
    assert meter.measure(None)["measured"] is False
    note = meter.start([PROJECT], {"HOME": str(tmp_path), "PARENT_AGENT": "claude-code"}, now=START)
    out = meter.measure(note, END)
    assert out["measured"] is False and "no claude-code session log" in out["reason"]
    unknown = meter.measure(meter.start([PROJECT], {"HOME": str(tmp_path)}, now=START), END)
    assert unknown["measured"] is False and "PARENT_AGENT" in unknown["reason"]
    assert meter.measured_receipt(unknown, {}, Prices(), 0.0) == unknown


def test_codex_responses_are_counted_from_their_usage_records():
    """A Codex log with per-response usage records (written as each response completes) is read from
    them: the turn that calls approve counts, the one that called delegate does not. Its cumulative
    counts are written after each tool call returns, one turn late for a window of calls."""
    log = FIXTURES / "codex-rollout-records.jsonl"
    delegated, approving = ts_at(log, "delegate"), ts_at(log, "approve")
    got = codex_usage(log, delegated + 0.1, approving + 0.3)
    assert got is not None
    assert [t["id"] for t in got["turns"]] == [f"resp_replay_{n}" for n in range(2, 9)]  # 8: the approving one
    assert got["tokens"]["total_tokens"] == 13822 + 14320 + 14817 + 15315 + 15812 + 16310 + 16803
    assert got["tokens"]["input_tokens"] + got["tokens"]["output_tokens"] == got["tokens"]["total_tokens"]


def ts_at(log: Path, call: str) -> float:
    import json

    from bosun.parents.sessionlogs import parse_time

    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry["payload"].get("name") == call:
            stamp = parse_time(entry["timestamp"])
            assert stamp is not None
            return stamp
    raise AssertionError(call)
