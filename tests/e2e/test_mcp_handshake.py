"""`bosun mcp` as a host first meets it, through the MCP SDK's own client: the initialize answer and the
errors for a call the server cannot route. Quick (one server, no run), so not marked slow."""

from __future__ import annotations

from pathlib import Path

from mcp import ClientSession
from mcp.types import InitializeResult

import bosun
from tests.e2e.mcp_support import call, with_session


def test_initialize_names_bosun_and_its_version(repo: Path) -> None:
    async def body(s: ClientSession) -> InitializeResult:
        return await s.initialize()  # the answer with_session's handshake got (the session keeps it)

    init = with_session(repo, body)
    assert init.server_info.name == "bosun"
    assert init.server_info.version == bosun.__version__


def test_an_unknown_tool_is_named_and_the_real_ones_listed(repo: Path) -> None:
    async def body(s: ClientSession) -> tuple[list[str], list[dict[str, str]]]:
        names = [t.name for t in (await s.list_tools()).tools]
        outs = []
        for tool, args in (("list", {}), ("no_such_tool", {"x": 1}), ("wait", {"run_id": 5})):
            err, out = await call(s, tool, args)
            assert err, (tool, out)
            outs.append(out["error"])
        return names, outs

    names, (unknown, other, bad_args) = with_session(repo, body)
    assert unknown["code"] == "BAD_INPUT" and "'list'" in unknown["message"], unknown
    # The hint offers the tools there are, not the input schema of one that is not.
    assert "input schema" not in unknown["hint"], unknown
    assert all(name in unknown["hint"] for name in names), unknown
    assert "'no_such_tool'" in other["message"], other
    # A known tool given bad arguments points at that tool's schema, named once.
    assert bad_args["code"] == "BAD_INPUT" and "'wait'" in bad_args["hint"], bad_args
    assert bad_args["hint"].count("wait") == 1, bad_args
