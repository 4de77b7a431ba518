"""Map logical script actions onto the tools a calling CLI advertised.

Every CLI names its tools and their arguments differently (``filePath`` for OpenCode, ``path`` for
Pi, ``file_path`` for Claude/Qwen/Gemini, Codex's freeform ``apply_patch``...). The server never
hard-codes a CLI: it picks the advertised tool by known aliases and the argument names from that
tool's JSON schema, so a script written once drives them all.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bosun.replay import codex_patch
from bosun.replay.script import Action

# Preferred tool names per action, best first. Matching is exact first, then case-insensitive.
TOOL_ALIASES: dict[str, tuple[str, ...]] = {
    "write": ("write", "write_file", "Write", "create_file", "writeFile", "apply_patch"),
    "edit": ("edit", "edit_file", "Edit", "replace", "str_replace", "apply_patch"),
    "read": ("read", "read_file", "Read", "view"),
    "run": ("bash", "shell", "run_shell_command", "exec_command", "Bash", "shell_command"),
    "list": ("list", "ls", "list_dir", "list_directory", "LS", "glob", "find"),
    "grep": ("grep", "Grep", "search_file_content", "grep_search", "rg"),
}
GLOB_TOOLS = {"glob", "find"}
# Argument names per logical field, best first; also matched ignoring case, "_" and "-".
FILE_KEYS = ("path", "filePath", "file_path", "absolute_path", "filename", "file", "target_file")
DIR_KEYS = ("path", "dir_path", "directory", "dir", "absolute_path", "target_directory", "filePath")
CONTENT_KEYS = ("content", "contents", "file_text", "text")
OLD_KEYS = ("old", "oldString", "old_string", "old_str", "oldText", "old_text")
NEW_KEYS = ("new", "newString", "new_string", "new_str", "newText", "new_text")
COMMAND_KEYS = ("command", "cmd", "script")
PATTERN_KEYS = ("pattern", "regex", "query")


@dataclass(frozen=True)
class ToolSpec:
    """A tool as advertised in a request, normalized across wire APIs."""

    name: str
    kind: str = "function"  # "function" (JSON arguments) | "custom" (freeform text input)
    schema: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    kind: str  # "function" | "custom"
    arguments: dict[str, Any] | None = None
    input: str | None = None  # custom tools only
    action: Action | None = None

    def payload(self) -> str:
        """The text the model "wrote": JSON arguments, or the raw custom input."""
        return (self.input or "") if self.kind == "custom" else json.dumps(self.arguments or {})

    def to_log(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.call_id, "name": self.name, "kind": self.kind}
        if self.kind == "custom":
            out["input"] = self.input
        else:
            out["arguments"] = self.arguments
        if self.action is not None:
            out["action"] = self.action.describe()
        return out


class ToolMapError(Exception):
    """No advertised tool (or argument) fits a scripted action."""


@dataclass(frozen=True)
class ToolMapState:
    root: Path | None = None
    results: Mapping[str, str] = field(default_factory=dict)  # call id -> tool output, sent back so far


def map_actions(
    actions: Sequence[Action], tools: Sequence[ToolSpec], state: ToolMapState, id_prefix: str
) -> list[ToolCall]:
    return [map_action(a, tools, state, f"{id_prefix}_{i}") for i, a in enumerate(actions)]


def map_action(action: Action, tools: Sequence[ToolSpec], state: ToolMapState, call_id: str) -> ToolCall:
    if action.kind == "call":
        return _named_call(action, tools, state, call_id)
    action = substitute_root(action, state.root)
    tool = find_tool(action.kind, tools)
    if tool is None and action.kind in ("read", "list", "grep"):
        # Codex advertises no read/list/grep tool: the model would use the shell, and so do we.
        shell = find_tool("run", tools)
        if shell is not None:
            via_shell = Action(kind="run", target=shell_fallback(action, state.root))
            return dataclasses.replace(_build(via_shell, shell, state, call_id), action=action)
    if tool is None and action.kind in ("edit", "write"):
        # Codex offers no patch tool to a model it has no metadata for; such a model patches through the
        # shell with `apply_patch <<'EOF'`, which Codex intercepts and applies as a file change.
        shell = find_tool("run", tools)
        if shell is not None and shell.name == "exec_command":
            via_shell = Action(kind="run", target=shell_patch(action, state.root))
            return dataclasses.replace(_build(via_shell, shell, state, call_id), action=action)
    if tool is None:
        names = ", ".join(t.name for t in tools) or "none"
        raise ToolMapError(f"no advertised tool fits action '{action.describe()}' (advertised: {names})")
    return _build(action, tool, state, call_id)


def find_tool(kind: str, tools: Iterable[ToolSpec]) -> ToolSpec | None:
    tools = list(tools)
    by_name = {t.name: t for t in tools}
    folded = {t.name.casefold(): t for t in tools}
    aliases = TOOL_ALIASES[kind]
    for alias in aliases:
        if alias in by_name:
            return by_name[alias]
    for alias in aliases:
        if alias.casefold() in folded:
            return folded[alias.casefold()]
    return None


def substitute_root(action: Action, root: Path | None) -> Action:
    """Expand ``{root}`` in every text field (``.`` when no root is known)."""
    value = str(root) if root is not None else "."
    fields = {
        f: getattr(action, f).replace("{root}", value) for f in ("target", "content", "old", "new", "path")
    }
    return dataclasses.replace(action, **fields)


def shell_fallback(action: Action, root: Path | None) -> str:
    q = shlex.quote
    if action.kind == "read":
        return f"cat {q(action.target)}"
    if action.kind == "list":
        return f"ls -la {q(action.target)}"
    return f"grep -rn -- {q(action.target)} {q(action.path)}"


def shell_patch(action: Action, root: Path | None) -> str:
    """An ``apply_patch`` heredoc doing an edit or a write (Codex's own shell form of a patch)."""
    return f"apply_patch <<'EOF'\n{_patch_text(action, root)}\nEOF"


def _patch_text(action: Action, root: Path | None) -> str:
    abs_path = _absolute(action.target, root)
    rel = _relative(action.target, root)
    current = codex_patch.read_text(abs_path) if abs_path is not None else None
    if action.kind == "edit":
        return codex_patch.edit_patch(rel, action.old, action.new, current)
    return codex_patch.write_patch(rel, action.content, current)


def _build(action: Action, tool: ToolSpec, state: ToolMapState, call_id: str) -> ToolCall:
    if tool.name.casefold() == "apply_patch":
        return _apply_patch_call(action, tool, state, call_id)
    if tool.kind == "custom":
        # A freeform tool takes the raw text: the command, the new content, or the path.
        text = action.content if action.kind == "write" else action.target
        return ToolCall(call_id, tool.name, "custom", input=text, action=action)
    return ToolCall(call_id, tool.name, "function", arguments=_Args(tool, state).build(action), action=action)


def _apply_patch_call(action: Action, tool: ToolSpec, state: ToolMapState, call_id: str) -> ToolCall:
    if action.kind not in ("edit", "write"):
        raise ToolMapError(f"apply_patch cannot do '{action.describe()}'")
    patch = _patch_text(action, state.root)
    if tool.kind == "custom":
        return ToolCall(call_id, tool.name, "custom", input=patch, action=action)
    props = _properties(tool.schema)
    key = "input" if "input" in props or not props else next(iter(props))
    return ToolCall(call_id, tool.name, "function", arguments={key: patch}, action=action)


def _absolute(path: str, root: Path | None) -> Path | None:
    if os.path.isabs(path):
        return Path(path)
    return root / path if root is not None else None


def _relative(path: str, root: Path | None) -> str:
    # Codex patches name files relative to its working directory.
    if root is not None and os.path.isabs(path):
        try:
            return Path(path).relative_to(root).as_posix()
        except ValueError:
            return path
    return path


def _properties(schema: Mapping[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return dict(props) if isinstance(props, Mapping) else {}


def _type(prop: Any) -> str:
    t = prop.get("type") if isinstance(prop, Mapping) else None
    if isinstance(t, list):
        t = next((x for x in t if str(x).lower() != "null"), None)
    return str(t or "").lower()  # Gemini schemas spell types in capitals


def _norm(name: str) -> str:
    return name.replace("_", "").replace("-", "").casefold()


def pick_key(props: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    """The advertised argument name for a logical field; the default name when no schema is given."""
    if not props:
        return keys[0]
    for key in keys:
        if key in props:
            return key
    normalized = {_norm(p): p for p in props}
    for key in keys:
        if _norm(key) in normalized:
            return normalized[_norm(key)]
    return None


class _Args:
    """Builds one tool's arguments from an action, following the tool's advertised schema."""

    def __init__(self, tool: ToolSpec, state: ToolMapState) -> None:
        self.tool, self.state = tool, state
        self.props = _properties(tool.schema)
        self.args: dict[str, Any] = {}

    def build(self, action: Action) -> dict[str, Any]:
        getattr(self, f"_{action.kind}")(action)
        self._fill_required(action)
        return self.args

    def _read(self, a: Action) -> None:
        self._path(FILE_KEYS, a.target, "file path")

    def _write(self, a: Action) -> None:
        self._path(FILE_KEYS, a.target, "file path")
        self._set(CONTENT_KEYS, a.content, "content")

    def _edit(self, a: Action) -> None:
        self._path(FILE_KEYS, a.target, "file path")
        if pick_key(self.props, OLD_KEYS) is None and self._edits_array(a):
            return
        self._set(OLD_KEYS, a.old, "old text")
        self._set(NEW_KEYS, a.new, "new text")

    def _run(self, a: Action) -> None:
        key = self._key(COMMAND_KEYS, "command")
        # Codex's `shell` function takes an argv array, not a string.
        self.args[key] = ["bash", "-lc", a.target] if _type(self.props.get(key)) == "array" else a.target

    def _list(self, a: Action) -> None:
        if self.tool.name.casefold() not in GLOB_TOOLS:
            self._path(DIR_KEYS, a.target, "directory")
            return
        dir_key = pick_key(self.props, DIR_KEYS) if self.props else None
        if dir_key is None:
            self._set(PATTERN_KEYS, os.path.join(a.target, "*"), "pattern")
            return
        self._set(PATTERN_KEYS, "*", "pattern")
        self.args[dir_key] = self._resolve(a.target, dir_key)

    def _grep(self, a: Action) -> None:
        self._set(PATTERN_KEYS, a.target, "pattern")
        key = pick_key(self.props, DIR_KEYS)
        if key is not None:
            self.args[key] = self._resolve(a.path, key)

    def _edits_array(self, a: Action) -> bool:
        """Pi-style edit: {path, edits: [{oldText, newText}]}; True when such an array exists."""
        for name, prop in self.props.items():
            items = prop.get("items") if isinstance(prop, Mapping) and _type(prop) == "array" else None
            sub = _properties(items) if isinstance(items, Mapping) else {}
            old_key, new_key = pick_key(sub, OLD_KEYS), pick_key(sub, NEW_KEYS)
            if sub and old_key and new_key:
                self.args[name] = [{old_key: a.old, new_key: a.new}]
                return True
        return False

    def _key(self, keys: Sequence[str], what: str) -> str:
        key = pick_key(self.props, keys)
        if key is None:
            raise ToolMapError(
                f"tool '{self.tool.name}' has no argument for the {what} (schema: {sorted(self.props)})"
            )
        return key

    def _set(self, keys: Sequence[str], value: Any, what: str) -> None:
        self.args[self._key(keys, what)] = value

    def _path(self, keys: Sequence[str], path: str, what: str) -> None:
        key = self._key(keys, what)
        self.args[key] = self._resolve(path, key)

    def _resolve(self, path: str, key: str) -> str:
        root = self.state.root
        if root is None:
            return path
        if self._wants_relative(key):
            return _relative(path, root)
        return path if os.path.isabs(path) else os.path.normpath(os.path.join(root, path))

    def _wants_relative(self, key: str) -> bool:
        # Descriptions say which they want; "absolute" wins because it is often "absolute, not relative".
        prop = self.props.get(key)
        for text in (prop.get("description", "") if isinstance(prop, Mapping) else "", self.tool.description):
            low = str(text).lower()
            if "absolute" in low:
                return False
            if "relative" in low:
                return True
        return False

    def _fill_required(self, action: Action) -> None:
        """Give required arguments the script cannot know (e.g. OpenCode bash's description) a value."""
        required = self.tool.schema.get("required") if isinstance(self.tool.schema, Mapping) else None
        for name in required or []:
            if name in self.args or name not in self.props:
                continue
            value = _placeholder(self.props[name], action)
            if value is not None:
                self.args[name] = value


def _placeholder(prop: Any, action: Action) -> Any:
    if not isinstance(prop, Mapping):
        return None
    if "default" in prop:
        return prop["default"]
    if prop.get("enum"):
        return prop["enum"][0]
    kind = _type(prop)
    if kind == "string":
        return f"{action.kind} {action.target}"[:80]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return prop.get("minimum", 0)
    return None


RESULT_REF = re.compile(r"^\{result:([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)\}$")


def result_object(text: str) -> Any:
    """The JSON object a tool returned, as the CLI relayed it: whole, or after a preamble of the CLI's
    own (Codex sends "Wall time: 1.2 seconds\nOutput:\n{...}")."""
    try:
        return json.loads(text)
    except ValueError:
        start = text.find("{")
        if start < 0:
            raise
        return json.JSONDecoder().raw_decode(text[start:])[0]


def _named_call(action: Action, tools: Sequence[ToolSpec], state: ToolMapState, call_id: str) -> ToolCall:
    """``call: NAME`` with ``args``; a string argument ``{result:CALL_ID.KEY}`` is KEY of the JSON
    object an earlier call returned (a run id a tool handed out, say)."""
    tool = next((t for t in tools if t.name == action.target), None)
    if tool is None:
        names = ", ".join(t.name for t in tools) or "none"
        raise ToolMapError(f"tool {action.target!r} is not advertised (advertised: {names})")
    try:
        args = json.loads(action.args) if action.args else {}
    except ValueError:
        raise ToolMapError(f"call {action.target}: args are not JSON") from None

    def resolve(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        m = RESULT_REF.match(value) if isinstance(value, str) else None
        if m is None:
            return value
        try:
            return result_object(state.results[m.group(1)])[m.group(2)]
        except (KeyError, ValueError, TypeError):
            raise ToolMapError(f"call {action.target}: no {m.group(2)!r} in the result of {m.group(1)}") from None

    return ToolCall(call_id=call_id, name=tool.name, kind="function", arguments=resolve(args), action=action)

