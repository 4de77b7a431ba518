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


def claude_usage(path: Path, start: float, end: float) -> dict[str, int] | None:
    """Tokens of the assistant messages written in [start, end]; None when the log has no usage."""
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
    for at, u in by_message.values():
        if start <= at <= end:
            fresh += _int(u.get("input_tokens"))
            written += _int(u.get("cache_creation_input_tokens"))
            cached += _int(u.get("cache_read_input_tokens"))
            out += _int(u.get("output_tokens"))
    return {
        "input_tokens": fresh + written + cached,
        "cached_input_tokens": cached,
        "cache_write_tokens": written,
        "output_tokens": out,
        "total_tokens": fresh + written + cached + out,
    }


def codex_usage(path: Path, start: float, end: float) -> dict[str, int] | None:
    """The growth of Codex's cumulative token count over [start, end]; None when the log has none."""
    before: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
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
            last = total
    if not seen:
        return None
    if last is None:
        return {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_tokens": 0, "total_tokens": 0}
    base = before or {}

    def grew(key: str) -> int:
        return max(0, _int(last.get(key)) - _int(base.get(key)))  # type: ignore[union-attr]

    inp, out = grew("input_tokens"), grew("output_tokens")
    return {
        "input_tokens": inp,
        "cached_input_tokens": grew("cached_input_tokens"),
        "output_tokens": out,
        "reasoning_tokens": grew("reasoning_output_tokens"),
        "total_tokens": grew("total_tokens") or inp + out,
    }
