"""A scripted model server for testing worker CLIs end to end without network.

    from bosun.replay import ReplayServer, load_script
    with ReplayServer("fix_bug", root=worktree) as srv:
        env["OPENAI_BASE_URL"] = srv.base_url("openai")
        ...
        assert srv.turns_used == 3

It speaks OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini, maps the script's
logical actions onto the tools each CLI advertises, injects faults, and logs every request.
See docs/replay.md.
"""

from bosun.replay.player import Player, Reply
from bosun.replay.script import Action, Fault, Script, ScriptError, Turn, bundled_script_path, load_script
from bosun.replay.serve import main_serve, serve_forever
from bosun.replay.server import ReplayServer
from bosun.replay.toolmap import ToolCall, ToolMapError, ToolSpec

__all__ = [
    "Action",
    "Fault",
    "Player",
    "ReplayServer",
    "Reply",
    "Script",
    "ScriptError",
    "ToolCall",
    "ToolMapError",
    "ToolSpec",
    "Turn",
    "bundled_script_path",
    "load_script",
    "main_serve",
    "serve_forever",
]
