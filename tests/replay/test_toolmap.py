"""Mapping logical actions onto the tools each CLI advertises (names and arguments from the schema)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bosun.replay.codex_patch import edit_patch, write_patch
from bosun.replay.script import Action
from bosun.replay.toolmap import ToolMapError, ToolMapState, ToolSpec, map_action

ROOT = Path("/repo")


def obj(*required: str, **props: dict) -> dict:
    return {"type": "object", "properties": props, "required": list(required)}


S = {"type": "string"}
READ = Action("read", "src/a.py")
EDIT = Action("edit", "src/a.py", old="x = 1", new="x = 2")
WRITE = Action("write", "new.txt", content="hello\n")
RUN = Action("run", "pytest -q")

OPENCODE = [
    ToolSpec("read", schema=obj("filePath", filePath=S)),
    ToolSpec("write", schema=obj("filePath", "content", filePath=S, content=S)),
    ToolSpec("edit", schema=obj("filePath", "oldString", "newString", filePath=S, oldString=S, newString=S)),
    ToolSpec("bash", schema=obj("command", "description", command=S, description=S)),
    ToolSpec("glob", schema=obj("pattern", pattern=S, path=S)),
    ToolSpec("grep", schema=obj("pattern", pattern=S, path=S)),
]
CLAUDE = [
    ToolSpec("Read", schema=obj("file_path", file_path=S)),
    ToolSpec(
        "Edit", schema=obj("file_path", "old_string", "new_string", file_path=S, old_string=S, new_string=S)
    ),
    ToolSpec("Bash", schema=obj("command", command=S, description=S)),
]
PI = [
    ToolSpec("read", schema=obj("path", path=S)),
    ToolSpec(
        "edit",
        schema=obj(
            "path",
            "edits",
            path=S,
            edits={"type": "array", "items": obj("oldText", "newText", oldText=S, newText=S)},
        ),
    ),
    ToolSpec("bash", schema=obj("command", command=S)),
]
GEMINI = [
    ToolSpec(
        "replace",
        schema={
            "type": "OBJECT",
            "properties": {
                "file_path": {"type": "STRING"},
                "old_string": {"type": "STRING"},
                "new_string": {"type": "STRING"},
            },
        },
    ),
    ToolSpec("list_directory", schema=obj("dir_path", dir_path=S)),
    ToolSpec(
        "run_shell_command",
        schema=obj("command", "is_background", command=S, is_background={"type": "boolean"}),
    ),
]
CODEX = [
    ToolSpec("exec_command", schema=obj("cmd", cmd=S, workdir=S)),
    ToolSpec("apply_patch", kind="custom", schema={"type": "grammar", "syntax": "lark"}),
]
NATIVE_RELATIVE = [
    ToolSpec(
        "read_file",
        schema=obj("path", path={"type": "string", "description": "Path relative to the repository root"}),
    ),
    ToolSpec(
        "edit_file",
        schema=obj("path", "old", "new", path=S, old=S, new=S),
        description="Edit a file (paths relative to the repo)",
    ),
    ToolSpec("list_dir", schema=obj("path", path=S)),
]


def call(action, tools, root=ROOT):
    return map_action(action, tools, ToolMapState(root=root), "call_0_0")


def test_opencode_names_and_absolute_paths():
    c = call(EDIT, OPENCODE)
    assert c.name == "edit"
    assert c.arguments == {"filePath": "/repo/src/a.py", "oldString": "x = 1", "newString": "x = 2"}
    w = call(WRITE, OPENCODE)
    assert w.arguments == {"filePath": "/repo/new.txt", "content": "hello\n"}
    b = call(RUN, OPENCODE)
    assert b.arguments["command"] == "pytest -q"
    assert b.arguments["description"]  # a required argument the script cannot know gets a value
    g = call(Action("list", "src"), OPENCODE)
    assert (g.name, g.arguments) == ("glob", {"pattern": "*", "path": "/repo/src"})
    s = call(Action("grep", "TODO", path="src"), OPENCODE)
    assert s.arguments == {"pattern": "TODO", "path": "/repo/src"}


def test_claude_code_names():
    assert call(READ, CLAUDE).arguments == {"file_path": "/repo/src/a.py"}
    e = call(EDIT, CLAUDE)
    assert e.name == "Edit" and e.arguments["old_string"] == "x = 1" and e.arguments["new_string"] == "x = 2"
    assert call(RUN, CLAUDE).arguments == {"command": "pytest -q"}


def test_pi_edit_fills_the_edits_array():
    e = call(EDIT, PI)
    assert e.arguments == {"path": "/repo/src/a.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]}


def test_gemini_capital_types_dir_path_and_required_boolean():
    assert call(EDIT, GEMINI).arguments == {
        "file_path": "/repo/src/a.py",
        "old_string": "x = 1",
        "new_string": "x = 2",
    }
    assert call(Action("list", "."), GEMINI).arguments == {"dir_path": "/repo"}
    assert call(RUN, GEMINI).arguments == {"command": "pytest -q", "is_background": False}


def test_codex_exec_command_cmd_and_shell_fallbacks():
    r = call(RUN, CODEX)
    assert (r.name, r.arguments) == ("exec_command", {"cmd": "pytest -q"})
    read = call(READ, CODEX)  # Codex has no read tool: the shell reads
    assert read.arguments == {"cmd": "cat src/a.py"} and read.action == READ
    grep = call(Action("grep", "a b", path="src"), CODEX)
    assert grep.arguments == {"cmd": "grep -rn -- 'a b' src"}


def test_codex_apply_patch_custom_tool(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def f():\n    x = 1\n    return x\n")
    e = call(EDIT, CODEX, root=tmp_path)
    assert e.kind == "custom" and e.arguments is None
    # the partial-line `old` is widened to the whole line, as Codex matches whole lines
    assert e.input == "*** Begin Patch\n*** Update File: src/a.py\n@@\n-    x = 1\n+    x = 2\n*** End Patch"
    w = call(WRITE, CODEX, root=tmp_path)
    assert w.input == "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch"


def test_apply_patch_as_function_tool_and_codex_shell_array():
    tools = [
        ToolSpec("apply_patch", schema=obj("input", input=S)),
        ToolSpec("shell", schema=obj("command", command={"type": "array", "items": S})),
    ]
    e = call(EDIT, tools, root=None)
    assert e.kind == "function"
    assert e.arguments == {
        "input": "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x = 1\n+x = 2\n*** End Patch"
    }
    assert call(RUN, tools).arguments == {"command": ["bash", "-lc", "pytest -q"]}


def test_native_worker_gets_relative_paths():
    assert call(READ, NATIVE_RELATIVE).arguments == {"path": "src/a.py"}  # property says relative
    assert call(EDIT, NATIVE_RELATIVE).arguments == {"path": "src/a.py", "old": "x = 1", "new": "x = 2"}
    assert call(Action("list", "."), NATIVE_RELATIVE, root=None).arguments == {"path": "."}  # no root


def test_no_schema_uses_default_names_and_root_placeholder():
    tools = [ToolSpec("write_file"), ToolSpec("bash")]
    w = call(Action("write", "{root}/x.txt", content="root is {root}"), tools, root=Path("/r"))
    assert w.arguments == {"path": "/r/x.txt", "content": "root is /r"}


def test_no_fitting_tool_or_argument_is_a_clear_error():
    with pytest.raises(ToolMapError, match="no advertised tool fits action 'edit src/a.py'"):
        call(EDIT, [ToolSpec("bash", schema=obj("command", command=S))])
    with pytest.raises(ToolMapError, match="no argument for the content"):
        call(WRITE, [ToolSpec("write", schema=obj("file", "data", file=S, data=S))])


def test_codex_patch_text_forms():
    assert (
        edit_patch("f.py", "old", "new")
        == "*** Begin Patch\n*** Update File: f.py\n@@\n-old\n+new\n*** End Patch"
    )
    assert (
        edit_patch("f.py", "a\nb\n", "c\n")
        == "*** Begin Patch\n*** Update File: f.py\n@@\n-a\n-b\n+c\n*** End Patch"
    )
    assert (
        write_patch("f.py", "x\n", existing="y\n")
        == "*** Begin Patch\n*** Update File: f.py\n@@\n-y\n+x\n*** End Patch"
    )
    assert "+" not in edit_patch("f.py", "gone", "").split("@@")[1]


def test_call_names_a_tool_and_fills_ids_from_earlier_results():
    from bosun.replay.script import load_script

    script = load_script([
        {"call": "mcp__bosun__delegate", "args": {"task": {"title": "t"}}},
        {"call": "mcp__bosun__wait", "args": {"run_id": "{result:call_0_0.id}", "timeout_s": 5}},
    ])
    tools = [ToolSpec("mcp__bosun__delegate"), ToolSpec("mcp__bosun__wait"), ToolSpec("Read")]
    first = map_action(script.turns[0].actions[0], tools, ToolMapState(), "call_0_0")
    assert first.name == "mcp__bosun__delegate" and first.arguments == {"task": {"title": "t"}}
    ctx = ToolMapState(results={"call_0_0": '{"id": "20261201-120000-abcdef", "state": "prepared"}'})
    second = map_action(script.turns[1].actions[0], tools, ctx, "call_1_0")
    assert second.arguments == {"run_id": "20261201-120000-abcdef", "timeout_s": 5}
    with pytest.raises(ToolMapError, match="no 'id' in the result of call_0_0"):
        map_action(script.turns[1].actions[0], tools, ToolMapState(), "call_1_0")
    with pytest.raises(ToolMapError, match="not advertised"):
        map_action(Action("call", "mcp__other__x"), tools, ToolMapState(), "call_2_0")
