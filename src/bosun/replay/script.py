"""The replay script: a list of turns, each one scripted model response.

A turn holds logical actions (``read``, ``write``, ``edit``, ``run``, ``list``, ``grep``), an optional
final text (``say``), an optional ``fault`` and optional ``usage`` overrides. Actions are logical on
purpose: the server maps them onto whatever tools the calling CLI advertises (see ``toolmap``), so one
script drives every worker CLI. See docs/replay.md for the format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bosun.core.errors import BadInput

SCRIPTS_DIR = Path(__file__).parent / "scripts"

# kind -> (extra fields it takes, fields that are required)
ACTION_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "read": ((), ()),
    "write": (("content",), ("content",)),
    "edit": (("old", "new"), ("old", "new")),
    "run": ((), ()),
    "list": ((), ()),
    "grep": (("path",), ()),
    # Any advertised tool by its exact name (an MCP tool: mcp__bosun__delegate), with JSON arguments.
    "call": (("args",), ()),
}
NAMED_FAULTS = ("model_not_found", "stall", "malformed_sse")
TURN_KEYS = {"say", "fault", "retry_after", "stall_s", "message", "usage", "actions", "repeat"}
TOP_KEYS = {"turns", "on_exhausted", "exhausted_text", "consume_toolless", "side_reply", "match", "models",
            "conversations"}


class ScriptError(BadInput):
    code = "BAD_SCRIPT"


@dataclass(frozen=True)
class Action:
    """One logical tool use. ``target`` is the path, command, directory or pattern."""

    kind: str
    target: str
    content: str = ""
    old: str = ""
    new: str = ""
    path: str = "."  # grep only: where to search
    args: str = ""  # call only: the arguments as JSON text

    def describe(self) -> str:
        return f"{self.kind} {self.target}"


@dataclass(frozen=True)
class Fault:
    kind: str  # "status" | "model_not_found" | "stall" | "malformed_sse"
    status: int = 0
    retry_after: float | None = None
    stall_s: float = 3600.0
    message: str | None = None

    def label(self) -> str:
        return str(self.status) if self.kind == "status" else self.kind


@dataclass(frozen=True)
class UsageOverride:
    input: int | None = None
    output: int | None = None
    cached: int | None = None


@dataclass(frozen=True)
class Turn:
    index: int
    actions: tuple[Action, ...] = ()
    say: str | None = None
    fault: Fault | None = None
    usage: UsageOverride | None = None

    @property
    def needs_tools(self) -> bool:
        return bool(self.actions) and self.fault is None


@dataclass(frozen=True)
class SideRule:
    """A request matching every given condition is a side request answered with ``reply``."""

    text: re.Pattern[str] | None = None
    model: re.Pattern[str] | None = None
    tools: str | None = None  # "none" | "any"
    reply: str | None = None

    def matches(self, text: str, model: str, has_tools: bool) -> bool:
        if self.text is not None and not self.text.search(text):
            return False
        if self.model is not None and not self.model.search(model or ""):
            return False
        if self.tools == "none" and has_tools:
            return False
        return not (self.tools == "any" and not has_tools)


@dataclass(frozen=True)
class Conversation:
    """Turns of their own for the requests whose text matches ``match`` (one worker of several)."""

    match: re.Pattern[str]
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Script:
    turns: tuple[Turn, ...]
    on_exhausted: str = "say"  # "say": answer exhausted_text; "error": answer HTTP 500
    exhausted_text: str = "done"
    consume_toolless: bool | None = None  # None = auto (see player.side_reason)
    side_reply: str = "Task"
    match: tuple[SideRule, ...] = ()
    models: tuple[str, ...] = ("mock-model",)
    conversations: tuple[Conversation, ...] = ()


def load_script(source: Any) -> Script:
    """Load a script from a Script, a list/dict, a file path, YAML/JSON text or a bundled name."""
    if isinstance(source, Script):
        return source
    if isinstance(source, Path):
        return _from_data(_read_file(source))
    if isinstance(source, str):
        return _from_data(_read_text_source(source))
    if isinstance(source, list | dict):
        return _from_data(source)
    raise ScriptError(f"cannot load a replay script from {type(source).__name__}")


def bundled_script_path(name: str) -> Path:
    """The path of a script shipped in bosun/replay/scripts (``fix_bug`` or ``fix_bug.yaml``)."""
    stem = name.removesuffix(".yaml").removesuffix(".yml")
    return SCRIPTS_DIR / f"{stem}.yaml"


def _read_text_source(text: str) -> Any:
    if "\n" not in text:
        path = Path(text)
        if path.is_file():
            return _read_file(path)
        bundled = bundled_script_path(text)
        if bundled.is_file():
            return _read_file(bundled)
        if text.endswith((".yaml", ".yml", ".json")):
            raise ScriptError(f"replay script not found: {text}")
    return _parse_text(text, "<text>")


def _read_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"cannot read replay script {path}: {exc.strerror}") from None
    return _parse_text(text, str(path))


def _parse_text(text: str, origin: str) -> Any:
    try:
        # YAML is a superset of JSON, but json gives clearer errors for .json files.
        return json.loads(text) if origin.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ScriptError(f"replay script {origin} is not valid YAML/JSON: {exc}") from None


def _from_data(data: Any) -> Script:
    if isinstance(data, list):
        return Script(turns=_turns(data))
    if not isinstance(data, dict):
        raise ScriptError("a replay script is a list of turns or a mapping with 'turns'")
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ScriptError(f"unknown script keys: {', '.join(sorted(unknown))}", f"valid: {sorted(TOP_KEYS)}")
    on_exhausted = data.get("on_exhausted", "say")
    if on_exhausted not in ("say", "error"):
        raise ScriptError("on_exhausted must be 'say' or 'error'")
    models = data.get("models") or ["mock-model"]
    return Script(
        turns=_turns(data.get("turns") or []),
        on_exhausted=on_exhausted,
        exhausted_text=str(data.get("exhausted_text", "done")),
        consume_toolless=_consume_toolless(data.get("consume_toolless", "auto")),
        side_reply=str(data.get("side_reply", "Task")),
        match=tuple(_side_rule(r) for r in _as_list(data.get("match"), "match")),
        models=tuple(str(m) for m in _as_list(models, "models")),
        conversations=tuple(_conversation(c) for c in _as_list(data.get("conversations"), "conversations")),
    )


def _conversation(data: Any) -> Conversation:
    if not isinstance(data, dict) or not isinstance(data.get("match"), str) or "turns" not in data:
        raise ScriptError("each conversation is a mapping {match: REGEX, turns: [...]}",
                          "match: a text only that worker's requests contain, e.g. its task's title")
    unknown = set(data) - {"match", "turns"}
    if unknown:
        raise ScriptError(f"unknown conversation keys: {', '.join(sorted(unknown))}")
    try:
        pattern = re.compile(data["match"])
    except re.error as exc:
        raise ScriptError(f"bad regular expression {data['match']!r} in conversations: {exc}") from None
    return Conversation(match=pattern, turns=_turns(_as_list(data["turns"], "turns")))


def _as_list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, dict | str):
        return [value]
    raise ScriptError(f"'{what}' must be a list")


def _consume_toolless(value: Any) -> bool | None:
    if value in (None, "auto"):
        return None
    if isinstance(value, bool):
        return value
    raise ScriptError("consume_toolless must be true, false or 'auto'")


def _side_rule(raw: Any) -> SideRule:
    if not isinstance(raw, dict):
        raise ScriptError("each 'match' rule is a mapping {text, model, tools, reply}")
    unknown = set(raw) - {"text", "model", "tools", "reply"}
    if unknown:
        raise ScriptError(f"unknown match keys: {', '.join(sorted(unknown))}")
    tools = raw.get("tools")
    if tools not in (None, "none", "any"):
        raise ScriptError("match 'tools' must be 'none' or 'any'")
    return SideRule(
        text=_regex(raw.get("text")),
        model=_regex(raw.get("model")),
        tools=tools,
        reply=None if raw.get("reply") is None else str(raw["reply"]),
    )


def _regex(value: Any) -> re.Pattern[str] | None:
    if value is None:
        return None
    try:
        return re.compile(str(value))
    except re.error as exc:
        raise ScriptError(f"bad regular expression {value!r} in match: {exc}") from None


def _turns(raw: Any) -> tuple[Turn, ...]:
    if not isinstance(raw, list):
        raise ScriptError("'turns' must be a list")
    turns: list[Turn] = []
    for number, item in enumerate(raw, start=1):
        # `repeat: N` plays a turn N times in a row: CLIs retry 401/429/5xx on their own.
        for _ in range(_repeat(item, f"turn {number}")):
            turns.append(_turn(len(turns), item, f"turn {number}"))
    return tuple(turns)


def _repeat(raw: Any, where: str) -> int:
    count = raw.get("repeat", 1) if isinstance(raw, dict) else 1
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ScriptError(f"{where}: repeat must be a whole number >= 1")
    return count


def _turn(index: int, raw: Any, where: str) -> Turn:
    if isinstance(raw, str):
        return Turn(index=index, say=raw)
    if isinstance(raw, list):
        return _turn_from_items(index, raw, where)
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: a turn is a mapping, a list of actions or a text")
    actions = _mapping_actions(raw, where)
    fault = _fault(raw, where) if raw.get("fault") is not None else None
    if fault and (actions or raw.get("say") is not None):
        raise ScriptError(f"{where}: a fault turn holds no actions or text", "put them in the next turn")
    say = raw.get("say")
    return Turn(
        index=index,
        actions=tuple(actions),
        say=None if say is None else str(say),
        fault=fault,
        usage=_usage(raw.get("usage"), where),
    )


def _mapping_actions(raw: dict[str, Any], where: str) -> list[Action]:
    kinds = [k for k in raw if k in ACTION_FIELDS]
    if len(kinds) > 1 or (kinds and "actions" in raw):
        raise ScriptError(f"{where}: several actions in one mapping", "list them under 'actions:'")
    if kinds:
        return [_action(raw, where, extra_ok=TURN_KEYS)]  # _action rejects keys it does not know
    unknown = set(raw) - TURN_KEYS
    if unknown:
        raise ScriptError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    return [_action(a, where) for a in _as_list(raw.get("actions"), "actions")]


def _turn_from_items(index: int, items: list[Any], where: str) -> Turn:
    actions: list[Action] = []
    say: str | None = None
    for item in items:
        if isinstance(item, dict) and set(item) == {"say"}:
            say = str(item["say"])
        else:
            actions.append(_action(item, where))
    return Turn(index=index, actions=tuple(actions), say=say)


def _action(raw: Any, where: str, extra_ok: set[str] | frozenset[str] = frozenset()) -> Action:
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: an action is a mapping like {{read: PATH}}")
    kinds = [k for k in raw if k in ACTION_FIELDS]
    if len(kinds) != 1:
        raise ScriptError(f"{where}: each action needs exactly one of {', '.join(ACTION_FIELDS)}")
    kind = kinds[0]
    allowed, required = ACTION_FIELDS[kind]
    extra = set(raw) - {kind} - set(allowed) - set(extra_ok)
    if extra:
        raise ScriptError(f"{where}: '{kind}' does not take {', '.join(sorted(extra))}")
    missing = [f for f in required if raw.get(f) is None]
    if missing:
        raise ScriptError(f"{where}: '{kind}' needs {', '.join(missing)}")
    fields = {f: _text(raw[f]) for f in allowed if raw.get(f) is not None}
    return Action(kind=kind, target=_text(raw[kind] if raw[kind] is not None else "."), **fields)


def _text(value: Any) -> str:
    # YAML turns `content: 42` into an int; scripts mean text.
    return (
        value
        if isinstance(value, str)
        else json.dumps(value)
        if isinstance(value, dict | list)
        else str(value)
    )


def _fault(raw: Mapping[str, Any], where: str) -> Fault:
    spec = raw["fault"]
    opts = dict(raw)
    if isinstance(spec, dict):
        opts.update(spec)
        spec = spec.get("status", spec.get("kind"))
    retry = opts.get("retry_after")
    stall_s = float(opts.get("stall_s", 3600.0))
    message = None if opts.get("message") is None else str(opts["message"])
    if str(spec) in NAMED_FAULTS:
        return Fault(kind=str(spec), retry_after=retry, stall_s=stall_s, message=message)
    try:
        status = int(spec)
    except (TypeError, ValueError):
        raise ScriptError(
            f"{where}: unknown fault {spec!r}", f"use an HTTP status or {NAMED_FAULTS}"
        ) from None
    if not 400 <= status <= 599:
        raise ScriptError(f"{where}: fault status must be 4xx or 5xx")
    return Fault(
        kind="status", status=status, retry_after=None if retry is None else float(retry), message=message
    )


def _usage(raw: Any, where: str) -> UsageOverride | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"input", "output", "cached"}:
        raise ScriptError(f"{where}: usage is {{input, output, cached}}")
    return UsageOverride(**{k: int(v) for k, v in raw.items()})
