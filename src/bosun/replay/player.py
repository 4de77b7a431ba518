"""Decides what answers each request: the next scripted turn, a side reply, or the exhausted reply.

Wire-API modules parse a request into a ``ParsedRequest`` and render a ``Reply``; everything in
between (turn counter, side-request rule, tool mapping, usage) lives here, once for all APIs.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bosun.replay.script import Fault, Script, Turn
from bosun.replay.toolmap import ToolCall, ToolMapError, ToolMapState, ToolSpec, map_actions

# A toolless request whose system prompt talks about a title is a title/topic generator
# (OpenCode's small_model call, Claude Code's topic detection), never the agent's conversation.
TITLE_RE = re.compile(r"(?i)\btitle\b")
# Where CLIs tell the model their working directory (Claude Code, OpenCode, Pi, Gemini/Qwen, Codex).
CWD_RES = (
    re.compile(r"<cwd>\s*(/[^<\n]+?)\s*</cwd>"),
    re.compile(r"(?i)(?:current )?working directory(?: is)?:\s*(/[^\s\"'<>]+)"),
    re.compile(r"(?i)currently working in the directory:?\s*(/[^\s\"'<>]+)"),
    # Gemini CLI 0.61: "**Workspace Directories:**\n  - /path"
    re.compile(r"(?i)workspace directories:?\**\s*\n\s*-\s*(/[^\s\"'<>]+)"),
)


@dataclass
class ParsedRequest:
    """What the player needs from a request, whatever its wire API."""

    api: str
    model: str
    stream: bool
    tools: list[ToolSpec]
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int | None = None
    system: str = ""
    last_user: str = ""
    include_usage: bool = False
    json_schema: dict[str, Any] | None = None  # the request asks for JSON output of this shape
    namespaces: tuple[str, ...] = ()  # tool namespaces (Responses API): their tools are NAMESPACE__NAME
    raw_len: int = 0
    raw_text: str = ""


@dataclass(frozen=True)
class TokenUsage:
    input: int  # all prompt tokens, cached ones included
    output: int
    cached: int  # a subset of input

    @property
    def total(self) -> int:
        return self.input + self.output


@dataclass
class Reply:
    source: str  # "turn" | "side" | "exhausted"
    turn: int | None = None
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    fault: Fault | None = None
    usage: TokenUsage = TokenUsage(0, 0, 0)
    error: str | None = None  # why the scripted actions could not be played
    note: str = ""  # why a request was a side request
    seq: int = 0

    @property
    def stop_for_tools(self) -> bool:
        return bool(self.calls)


class Player:
    def __init__(self, script: Script, root: Path | None = None, detect_root: bool = True) -> None:
        self.script = script
        self.root = root
        self.detect_root = detect_root
        self._lock = threading.Lock()
        # The next turn of each conversation: None is the top-level turns, i the i-th `conversations` entry.
        self._next: dict[int | None, int] = {}
        self._seq = 0

    @property
    def turns_used(self) -> int:
        with self._lock:
            return sum(self._next.values())

    def conversation(self, req: ParsedRequest) -> tuple[int | None, tuple[Turn, ...]]:
        """Which conversation a request belongs to: the first whose ``match`` is in its text."""
        for i, conv in enumerate(self.script.conversations):
            if conv.match.search(req.raw_text):
                return i, conv.turns
        return None, self.script.turns

    def next_reply(self, req: ParsedRequest) -> Reply:
        key, turns = self.conversation(req)
        with self._lock:  # peek and consume atomically: concurrent requests never share a turn
            self._seq += 1
            seq = self._seq
            index = self._next.get(key, 0)
            turn = turns[index] if index < len(turns) else None
            side = self.side_reason(req, turn)
            if side is None and turn is not None:
                self._next[key] = index + 1
        if side is not None:
            reply = Reply(source="side", text=self._side_text(req, side), note=side[0])
        elif turn is None:
            reply = self._exhausted()
        else:
            reply = self._play(turn, req, key)
        reply.seq = seq
        reply.usage = self._usage(req, reply, turn if reply.source == "turn" else None)
        return reply

    def side_reason(self, req: ParsedRequest, turn: Turn | None) -> tuple[str, str | None] | None:
        """(reason, reply override) when the request is not part of the agent's conversation."""
        text = f"{req.system}\n{req.last_user}"
        for rule in self.script.match:
            if rule.matches(text, req.model, bool(req.tools)):
                return ("match rule", rule.reply)
        if req.max_tokens is not None and req.max_tokens <= 1:
            return ("max_tokens<=1 probe", None)
        if req.tools:
            return None
        return self._toolless_reason(req, turn)

    def _toolless_reason(self, req: ParsedRequest, turn: Turn | None) -> tuple[str, str | None] | None:
        consume = self.script.consume_toolless
        if consume is True:
            return None
        if consume is False:
            return ("toolless request (consume_toolless: false)", None)
        if turn is not None and turn.needs_tools:
            return ("toolless request while the next turn needs tools", None)
        if TITLE_RE.search(req.system):
            return ("toolless title request", None)
        if req.json_schema is not None:
            return ("toolless structured-output request", None)  # e.g. Gemini CLI's next-speaker check
        return None

    def _side_text(self, req: ParsedRequest, side: tuple[str, str | None]) -> str:
        text = side[1] if side[1] is not None else self.script.side_reply
        if req.json_schema is not None:
            # e.g. Gemini CLI's next-speaker check wants {"next_speaker": "user"|"model", ...}
            return json.dumps(synth_json(req.json_schema, text))
        return text

    def _exhausted(self) -> Reply:
        if self.script.on_exhausted == "error":
            fault = Fault(kind="status", status=500, message="replay script exhausted")
            return Reply(source="exhausted", fault=fault, error="replay script exhausted")
        return Reply(source="exhausted", text=self.script.exhausted_text)

    def _play(self, turn: Turn, req: ParsedRequest, conversation: int | None = None) -> Reply:
        reply = Reply(source="turn", turn=turn.index, text=turn.say or "", fault=turn.fault)
        if not turn.needs_tools:
            return reply
        results = {str(r.get("id")): str(r.get("output") or "") for r in req.tool_results}
        ctx = ToolMapState(root=self.request_root(req), results=results)
        try:
            prefix = f"call_{turn.index}" if conversation is None else f"call_c{conversation}_{turn.index}"
            reply.calls = map_actions(turn.actions, req.tools, ctx, prefix)
        except ToolMapError as exc:
            # Answer in words so the run ends and the test that used this script fails clearly.
            reply.error = str(exc)
            reply.text = f"replay error: {exc}"
        return reply

    def request_root(self, req: ParsedRequest) -> Path | None:
        if self.root is not None or not self.detect_root:
            return self.root
        return detect_root(req.raw_text)

    def _usage(self, req: ParsedRequest, reply: Reply, turn: Turn | None) -> TokenUsage:
        over = turn.usage if turn is not None else None
        produced = reply.text + "".join(c.payload() for c in reply.calls)
        inp = over.input if over and over.input is not None else max(1, req.raw_len // 4)
        out = over.output if over and over.output is not None else max(1, len(produced) // 4)
        cached = over.cached if over and over.cached is not None else 0
        return TokenUsage(input=inp, output=out, cached=min(cached, inp))


def detect_root(text: str) -> Path | None:
    for pattern in CWD_RES:
        m = pattern.search(text)
        if m:
            return Path(m.group(1).rstrip(".,;"))
    return None


def synth_json(schema: Any, text: str) -> Any:
    """A minimal value of the given JSON schema (first enum value, ``text`` for strings)."""
    if not isinstance(schema, dict):
        return text
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = (kind[0] if isinstance(kind, list) and kind else kind or "object").lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: synth_json(v, text) for k, v in props.items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return 0
    return text
