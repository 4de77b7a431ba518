"""The parent measured: its real tokens between ``delegate`` and the end of its review.

At ``delegate`` bosun notes who the parent is, which session log it writes and the time. When the
parent ends its review (approve, integrate, discard or cancel), the window closes: its end is that
call's time. The window is read once it is complete, which it is not yet at that call: the parent's
host writes the turn that made the call after the call returns. Until the log holds a line written
after the window's end, the record says ``pending`` and holds no figure; it is read again at the
parent's next call on the run, when the receipt is written (``report``) and when it is read (the MCP
``result`` and ``wait``, ``savings``). A complete reading names the turns it counted. Anything
unknown is recorded as "not measured" with the reason; no figure is ever invented.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.parents.sessionlogs import (
    CLAUDE,
    CODEX,
    claude_usage,
    codex_usage,
    find_claude_log,
    find_codex_log,
)

if TYPE_CHECKING:
    from bosun.store.db import Store
    from bosun.store.run import Run

# Names a user or host may put in PARENT_AGENT, and the MCP client names hosts announce.
_ALIASES = {"claude": CLAUDE, "claude-code": CLAUDE, "claude_code": CLAUDE, "claudecode": CLAUDE,
            "codex": CODEX, "codex-cli": CODEX, "codex-mcp-client": CODEX}


def detect_parent(env: Mapping[str, str] | None = None, client_name: str | None = None) -> str | None:
    """``claude-code``, ``codex``, another name from PARENT_AGENT, or None.

    PARENT_AGENT wins; then the MCP client's own name; then the markers each host puts in the
    environment of the processes it starts.
    """
    env = os.environ if env is None else env
    explicit = (env.get("PARENT_AGENT") or "").strip()
    if explicit:
        return _ALIASES.get(explicit.lower(), explicit.lower())
    if client_name:
        low = client_name.lower()
        if "claude" in low:
            return CLAUDE
        if "codex" in low:
            return CODEX
    if env.get("CLAUDECODE") == "1" or env.get("CLAUDE_CODE_ENTRYPOINT"):
        return CLAUDE
    if any(env.get(k) for k in ("CODEX_SANDBOX", "CODEX_THREAD_ID", "CODEX_SANDBOX_NETWORK_DISABLED")):
        return CODEX
    return None


def start(cwds: list[Path], env: Mapping[str, str] | None = None, client_name: str | None = None,
          now: float | None = None) -> dict[str, Any]:
    """What bosun notes at delegate time (stored in the run's data as ``parent_meter``)."""
    env = os.environ if env is None else env
    agent = detect_parent(env, client_name)
    note: dict[str, Any] = {"agent": agent, "started_at": time.time() if now is None else now, "log": None}
    if agent == CLAUDE:
        log = find_claude_log(cwds, env)
    elif agent == CODEX:
        log = find_codex_log(cwds, env)
    else:
        note["reason"] = "no known parent agent (set PARENT_AGENT=claude-code or codex)"
        return note
    if log is None:
        note["reason"] = f"no {agent} session log found for {', '.join(str(c) for c in cwds)}"
    else:
        note["log"] = str(log)
    return note


def measure(note: dict[str, Any] | None, end: float | None = None) -> dict[str, Any]:
    """The parent's tokens in the window from ``note``'s start to ``end``: ``{"measured": bool, ...}``,
    ``pending`` while the log does not hold the window's end yet."""
    end = time.time() if end is None else end
    if not isinstance(note, dict):
        return {"measured": False, "reason": "delegated without the parent meter (not through bosun mcp)"}
    out: dict[str, Any] = {"measured": False, "agent": note.get("agent"), "log": note.get("log"),
                           "from": note.get("started_at"), "to": end}
    if not note.get("log"):
        out["reason"] = note.get("reason") or "no session log"
        return out
    start_at = note.get("started_at")
    if not isinstance(start_at, (int, float)):
        out["reason"] = "no start time recorded"
        return out
    reader = claude_usage if note.get("agent") == CLAUDE else codex_usage
    try:
        window = reader(Path(note["log"]), float(start_at), end)
    except Exception as exc:  # noqa: BLE001 - a log format bosun does not understand is "not measured"
        window = None
        out["reason"] = f"cannot read the session log: {type(exc).__name__}"
    if window is None:
        out.setdefault("reason", "the session log holds no token usage bosun understands")
        return out
    if (window["last_entry_at"] or 0.0) <= end:
        out.update(pending=True, reason=PENDING)
        return out
    out.update(measured=True, tokens=window["tokens"], turns=window["turns"])
    return out


PENDING = ("the parent's session log does not hold the end of its review yet (the turn that ended it is "
           "written after the call); read again at its next call, at report time or when the receipt is read")


def close_window(store: Store, run_id: str, now: float | None = None) -> bool:
    """The parent's review of ``run_id`` ended (now, the first time): measure its window; a window
    closed earlier and still pending is read again. True when the record changed."""
    run = store.require_run(run_id)
    if run.data.parent_meter is None:
        return False
    if run.data.parent_measured is None:
        store.write(run, parent_measured=measure(run.data.parent_meter, now))
        return True
    return read_again(store, run)


def pending(run: Run) -> bool:
    measured = run.data.parent_measured
    return isinstance(measured, dict) and bool(measured.get("pending"))


def read_again(store: Store, run: Run) -> bool:
    """Read a pending window again; True when it is complete now (the run's data holds the reading)."""
    if not pending(run):
        return False
    again = measure(run.data.parent_meter, float(run.data.parent_measured["to"]))  # type: ignore[index]
    if again.get("pending"):
        return False
    store.write(run, parent_measured=again)
    return True


def cost_usd(tokens: dict[str, int], prices: Any) -> float:
    """The measured tokens at the parent's prices (cache writes priced as input)."""
    cached = tokens.get("cached_input_tokens", 0)
    uncached = max(0, tokens.get("input_tokens", 0) - cached)
    return round((uncached * prices.input + cached * prices.cached_input + tokens.get("output_tokens", 0) * prices.output)
                 / 1_000_000, 6)


MEASURED_FORMULA = (
    "saving = direct cost (estimated) - the parent's measured cost between delegate and the end of its "
    "review - worker cost"
)


def measured_receipt(measured: Any, estimate: dict[str, Any], prices: Any, worker_cost: float) -> dict[str, Any] | None:
    """The receipt's ``parent_measured`` block: the measurement, priced, or why there is none."""
    if not isinstance(measured, dict):
        return None
    out = dict(measured)
    tokens = measured.get("tokens")
    if measured.get("measured") and isinstance(tokens, dict):
        cost = cost_usd(tokens, prices)
        out["cost_usd"] = cost
        out["saving_usd"] = round(float(estimate.get("parent_direct_cost_usd") or 0.0) - cost - worker_cost, 6)
        out["formula"] = MEASURED_FORMULA
    return out
