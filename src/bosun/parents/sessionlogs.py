"""Reading a parent agent's own session log: the tokens it spent in a time window.

Claude Code writes ``<config>/projects/<slug>/<session>.jsonl`` (``<config>`` is ``$CLAUDE_CONFIG_DIR``
or ``~/.claude``; the slug is the working directory with every character other than a letter or a
digit replaced by ``-``). Assistant lines carry ``message.usage``; a message streamed in several
blocks repeats its usage on each line, so usage is counted once per message id.

Codex writes ``<$CODEX_HOME or ~/.codex>/sessions/YYYY/MM/DD/rollout-*.jsonl``; ``event_msg`` lines of
payload type ``token_count`` carry cumulative ``info.total_token_usage``.

Both formats change between versions. Everything here is defensive: an unreadable file, a line that
is not JSON or a missing field is skipped, and no usage at all means "not measured" (None), never 0.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

CLAUDE = "claude-code"
CODEX = "codex"
MAX_LOG_BYTES = 256 * 1024 * 1024  # a session log larger than this is not read


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def claude_projects_dir(env: Mapping[str, str]) -> Path:
    base = env.get("CLAUDE_CONFIG_DIR")
    return (Path(base) if base else _home(env) / ".claude") / "projects"


def codex_sessions_dir(env: Mapping[str, str]) -> Path:
    base = env.get("CODEX_HOME")
    return (Path(base) if base else _home(env) / ".codex") / "sessions"


def claude_slug(cwd: Path) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def parse_time(value: Any) -> float | None:
    """Epoch seconds from an ISO-8601 timestamp (``2026-11-30T12:00:00.123Z``), or None."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        if path.stat().st_size > MAX_LOG_BYTES:
            return
        fh = path.open("rb")
    except OSError:
        return
    with fh:
        for raw in fh:
            try:
                obj = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(obj, dict):
                yield obj


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _newest(paths: list[Path]) -> list[Path]:
    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    return sorted(paths, key=mtime, reverse=True)


# --- finding the log -------------------------------------------------------------------------------


def find_claude_log(cwds: list[Path], env: Mapping[str, str]) -> Path | None:
    """The most recently written session log of a project whose directory is one of ``cwds``."""
    root = claude_projects_dir(env)
    for cwd in cwds:
        d = root / claude_slug(cwd)
        try:
            logs = [p for p in d.glob("*.jsonl") if p.is_file()]
        except OSError:
            continue
        if logs:
            return _newest(logs)[0]
    return None


def _codex_cwd(path: Path) -> str | None:
    for obj in _lines(path):
        payload = obj.get("payload")
        if obj.get("type") == "session_meta" and isinstance(payload, dict):
            cwd = payload.get("cwd")
            return cwd if isinstance(cwd, str) else None
        return None  # the meta line comes first; anything else means an unknown layout
    return None


def find_codex_log(cwds: list[Path], env: Mapping[str, str], scan: int = 30) -> Path | None:
    """The most recently written rollout whose session ran in one of ``cwds`` (the newest rollout
    when none records its directory)."""
    root = codex_sessions_dir(env)
    try:
        logs = _newest([p for p in root.glob("**/rollout-*.jsonl") if p.is_file()])[:scan]
    except OSError:
        return None
    wanted = {str(c) for c in cwds}
    unknown = None
    for p in logs:
        cwd = _codex_cwd(p)
        if cwd in wanted:
            return p
        if cwd is None and unknown is None:
            unknown = p
    return unknown


# --- usage in a window -----------------------------------------------------------------------------
# A window's reading: ``tokens`` summed over it, the ``turns`` counted (each ``{id, at, tokens}``,
# ``at`` in epoch seconds), and ``last_entry_at``: the newest timestamp of any line in the log. A window
# is complete once the log holds a line after its end: the host appends its lines in order, so the
# turn that made the call ending the window (timestamped before it, written after) is in the log then.


def last_entry_at(path: Path) -> float | None:
    """The newest timestamp of any line of the log (None: no timestamped line)."""
    newest = None
    for obj in _lines(path):
        at = parse_time(obj.get("timestamp"))
        if at is not None and (newest is None or at > newest):
            newest = at
    return newest


def _total(count: dict[str, Any]) -> int:
    return _int(count.get("total_tokens")) or _int(count.get("input_tokens")) + _int(count.get("output_tokens"))


def claude_usage(path: Path, start: float, end: float) -> dict[str, Any] | None:
    """The assistant messages written in [start, end]; None when the log has no usage."""
    by_message: dict[str, tuple[float, dict[str, Any]]] = {}
    seen_usage = False
    for n, obj in enumerate(_lines(path)):
        msg = obj.get("message")
        if obj.get("type") != "assistant" or not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
            continue
        seen_usage = True
        at = parse_time(obj.get("timestamp"))
        if at is None:
            continue
        mid = msg.get("id")
        key = mid if isinstance(mid, str) else f"line-{n}"
        by_message[key] = (at, msg["usage"])
    if not seen_usage:
        return None
    fresh = cached = written = out = 0
    turns = []
    for key, (at, u) in sorted(by_message.items(), key=lambda item: item[1][0]):
        if start <= at <= end:
            turn = [_int(u.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                                               "output_tokens")]
            fresh, written, cached, out = fresh + turn[0], written + turn[1], cached + turn[2], out + turn[3]
            turns.append({"id": key, "at": round(at, 3), "tokens": sum(turn)})
    tokens = {
        "input_tokens": fresh + written + cached,
        "cached_input_tokens": cached,
        "cache_write_tokens": written,
        "output_tokens": out,
        "total_tokens": fresh + written + cached + out,
    }
    return {"tokens": tokens, "turns": turns, "last_entry_at": last_entry_at(path)}


def codex_usage(path: Path, start: float, end: float) -> dict[str, Any] | None:
    """Codex's model responses in [start, end]: its per-response usage records where the log has them,
    else the growth of its cumulative token count; None when the log has neither."""
    records = codex_responses(path, start, end)
    if records is not None:
        return records
    return codex_counts(path, start, end)


_CODEX_KEYS = (("input_tokens", "input_tokens"), ("cached_input_tokens", "cached_input_tokens"),
               ("output_tokens", "output_tokens"), ("reasoning_tokens", "reasoning_output_tokens"))


def codex_responses(path: Path, start: float, end: float) -> dict[str, Any] | None:
    """The ``token_usage_record`` lines (one per model response, written as the response completes:
    the turn that calls a tool is timestamped before the call, as Claude Code's are) in [start, end]."""
    by_response: dict[str, tuple[float, dict[str, Any]]] = {}
    for n, obj in enumerate(_lines(path)):
        payload = obj.get("payload")
        if obj.get("type") != "token_usage_record" or not isinstance(payload, dict):
            continue
        usage, rid, at = payload.get("usage"), payload.get("response_id"), parse_time(obj.get("timestamp"))
        if not isinstance(usage, dict) or at is None:
            continue
        by_response[rid if isinstance(rid, str) else f"line-{n}"] = (at, usage)
    if not by_response:
        return None
    tokens = {ours: 0 for ours, _ in _CODEX_KEYS}
    tokens["total_tokens"] = 0
    turns = []
    for key, (at, usage) in sorted(by_response.items(), key=lambda item: item[1][0]):
        if start <= at <= end:
            for ours, theirs in _CODEX_KEYS:
                tokens[ours] += _int(usage.get(theirs))
            tokens["total_tokens"] += _total(usage)
            turns.append({"id": key, "at": round(at, 3), "tokens": _total(usage)})
    return {"tokens": tokens, "turns": turns, "last_entry_at": last_entry_at(path)}


def codex_counts(path: Path, start: float, end: float) -> dict[str, Any] | None:
    """The growth of Codex's cumulative ``token_count`` over [start, end] (each count in it a turn), for
    logs without usage records; None when the log has none."""
    before: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
    turns = []
    seen = False
    for obj in _lines(path):
        payload = obj.get("payload")
        if obj.get("type") != "event_msg" or not isinstance(payload, dict) or payload.get("type") != "token_count":
            continue
        info = payload.get("info")
        total = info.get("total_token_usage") if isinstance(info, dict) else None
        at = parse_time(obj.get("timestamp"))
        if not isinstance(total, dict) or at is None:
            continue
        seen = True
        if at < start:
            before = total
        elif at <= end:
            grown = _total(total) - _total(last or before or {})
            if grown > 0:  # Codex repeats the count when nothing new was spent
                turns.append({"id": None, "at": round(at, 3), "tokens": grown})
            last = total
    if not seen:
        return None
    base = before or {}
    top = last or base

    def grew(key: str) -> int:
        return max(0, _int(top.get(key)) - _int(base.get(key)))

    inp, out = grew("input_tokens"), grew("output_tokens")
    tokens = {
        "input_tokens": inp,
        "cached_input_tokens": grew("cached_input_tokens"),
        "output_tokens": out,
        "reasoning_tokens": grew("reasoning_output_tokens"),
        "total_tokens": grew("total_tokens") or inp + out,
    }
    return {"tokens": tokens, "turns": turns, "last_entry_at": last_entry_at(path)}
