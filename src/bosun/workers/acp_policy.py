"""How the ``acp`` worker answers an agent's ``session/request_permission``: by what the run's mode allows.

The answer is always a one-off: an ``allow_once`` option or a rejection, never ``allow_always`` (an
"always" persists in the agent's own settings and would outlive the run). Refused whatever the mode:
web fetches, mode switches, any tool touching a path outside the worktree, and shell commands on
bosun's deny list. Writes (edit, delete, move) need a mode that may edit; shell commands need a mode
with a shell, and a read-only mode's shell runs only the commands it lists (test mode: the verify
commands). Reads, searches and thinking are allowed.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bosun.workers.base import Permissions
from bosun.workers.policy import denied_commands

READS = frozenset({"read", "search", "think"})
WRITES = frozenset({"edit", "delete", "move"})
NEVER = frozenset({"fetch", "switch_mode"})
_PATH_KEYS = ("path", "filePath", "filepath", "file_path", "absolute_path", "dir_path", "directory", "cwd")
_SPLIT_RE = re.compile(r"&&|\|\||;|\||\n")


@dataclass
class Decision:
    allow: bool
    reason: str


def decide(tool_call: dict[str, Any], allowed: Permissions, worktree: Path) -> Decision:
    """Whether the mode allows the tool call an agent asks about."""
    kind = str(tool_call.get("kind") or "other")
    if kind in NEVER:
        return Decision(False, f"bosun: workers may not use {kind}")
    outside = [p for p in tool_paths(tool_call) if not inside(p, worktree)]
    if outside:
        return Decision(False, f"bosun: {outside[0]} is outside the worktree")
    if kind in READS:
        return Decision(True, "read-only tool")
    if kind in WRITES:
        return Decision(allowed.edit, "edits allowed" if allowed.edit else "bosun: this run may not edit")
    if kind == "execute":
        return decide_command(command_of(tool_call), allowed)
    return Decision(allowed.edit, "allowed in a mode that may edit" if allowed.edit
                    else f"bosun: a read-only run may not use {kind} tools")


def decide_command(command: str, allowed: Permissions) -> Decision:
    if not allowed.shell:
        return Decision(False, "bosun: this run has no shell")
    words = " ".join(command.split())
    for part in (" ".join(p.split()) for p in _SPLIT_RE.split(command)):
        for denied in denied_commands():
            if _starts_with(part, denied):
                return Decision(False, f"bosun: `{denied}` is not allowed for workers")
    if allowed.edit:
        return Decision(True, "shell allowed")
    if any(words == cmd or words.startswith(cmd + " ") for cmd in (" ".join(c.split()) for c in allowed.commands)):
        return Decision(True, "one of the run's allowed commands")
    return Decision(False, "bosun: this run may only run its verify commands")


def _starts_with(part: str, prefix: str) -> bool:
    try:
        words = shlex.split(part)
    except ValueError:
        words = part.split()
    if words:
        words[0] = words[0].rsplit("/", 1)[-1]  # /usr/bin/curl is curl
    want = prefix.split()
    return words[: len(want)] == want


def command_of(tool_call: dict[str, Any]) -> str:
    raw = tool_call.get("rawInput")
    if isinstance(raw, dict):
        cmd = raw.get("command") or raw.get("cmd")
        if isinstance(cmd, list):
            return " ".join(str(c) for c in cmd)
        if isinstance(cmd, str):
            return cmd
    return str(tool_call.get("title") or "")


def tool_paths(tool_call: dict[str, Any]) -> list[str]:
    """Every path the tool call names: its ``locations`` and path-like fields of its raw input."""
    found: list[str] = []
    for loc in tool_call.get("locations") or []:
        if isinstance(loc, dict) and isinstance(loc.get("path"), str):
            found.append(loc["path"])
    raw = tool_call.get("rawInput")
    if isinstance(raw, dict):
        found += [raw[k] for k in _PATH_KEYS if isinstance(raw.get(k), str) and raw[k]]
    return found


def inside(path: str, worktree: Path) -> bool:
    root = worktree.resolve()
    target = Path(path) if Path(path).is_absolute() else root / path
    try:
        target.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def answer(options: list[Any], decision: Decision) -> dict[str, Any]:
    """The ``session/request_permission`` result: an ``allow_once`` option, a ``reject_once``, or cancelled."""
    kinds = {str(o.get("kind")): str(o.get("optionId")) for o in options if isinstance(o, dict) and o.get("optionId")}
    want = "allow_once" if decision.allow else "reject_once"
    if want in kinds:
        return {"outcome": {"outcome": "selected", "optionId": kinds[want]}}
    return {"outcome": {"outcome": "cancelled"}}  # no one-off answer offered: refuse
