"""The replay server over OpenAI Chat Completions and OpenAI Responses (httpx as the client)."""

from __future__ import annotations

import json

import httpx

from bosun.replay import ReplayServer
from bosun.replay.sse import parse_sse

S = {"type": "string"}
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": n, "parameters": {"type": "object", "properties": p, "required": list(p)}},
    }
    for n, p in [
        ("read", {"filePath": S}),
        ("edit", {"filePath": S, "oldString": S, "newString": S}),
        ("bash", {"command": S, "description": S}),
    ]
]
SCRIPT = [
    {"edit": "calc.py", "old": "a - b", "new": "a + b"},
    {"say": "Fixed the sign."},
]


def chat(client: httpx.Client, messages, tools=CHAT_TOOLS, **extra):
    body = {"model": "mock-model", "messages": messages, **extra}
    if tools is not None:
        body["tools"] = tools
    return client.post("/chat/completions", json=body)


def chat_stream(client, messages, tools=CHAT_TOOLS, include_usage=True):
    r = chat(client, messages, tools, stream=True, stream_options={"include_usage": include_usage})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(r.text)
    assert events[-1].data == "[DONE]"
    return [e.json() for e in events[:-1]]


def assemble_chat(chunks):
    """Reassemble streamed chunks as a client does: text, tool calls by index, finish, usage."""
    text, calls, finish, usage = "", {}, None, None
    for c in chunks:
        usage = c.get("usage") or usage
        for choice in c["choices"]:
            d = choice["delta"]
            text += d.get("content") or ""
            for tc in d.get("tool_calls") or []:
                slot = calls.setdefault(tc["index"], {"id": None, "name": "", "arguments": ""})
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return text, [calls[i] for i in sorted(calls)], finish, usage


def test_chat_stream_tool_call_then_text_with_tool_results_logged(tmp_path):
    with ReplayServer(SCRIPT, root=tmp_path) as srv:
        client = httpx.Client(base_url=srv.base_url("openai"), timeout=5)
        user = [{"role": "user", "content": "fix calc.py"}]
        text, calls, finish, usage = assemble_chat(chat_stream(client, user))
        assert finish == "tool_calls" and text == ""
        assert calls[0]["name"] == "edit" and calls[0]["id"] == "call_0_0"
        args = json.loads(calls[0]["arguments"])
        assert args == {"filePath": str(tmp_path / "calc.py"), "oldString": "a - b", "newString": "a + b"}
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0

        history = user + [
            {
                "role": "assistant",
                "tool_calls": [{"id": "call_0_0", "type": "function", "function": calls[0]}],
            },
            {"role": "tool", "tool_call_id": "call_0_0", "content": "Edit applied successfully."},
        ]
        text, calls, finish, _ = assemble_chat(chat_stream(client, history))
        assert (text, calls, finish) == ("Fixed the sign.", [], "stop")
        assert srv.turns_used == 2
        assert srv.tool_results() == {"call_0_0": "Edit applied successfully."}
        assert [r["turn"] for r in srv.requests] == [0, 1]


def test_chat_usage_is_in_the_finish_chunk_without_include_usage():
    with ReplayServer([{"say": "hi"}]) as srv:
        client = httpx.Client(base_url=srv.base_url("openai"), timeout=5)
        chunks = chat_stream(client, [{"role": "user", "content": "x"}], include_usage=False)
        assert all(c["choices"] for c in chunks)  # no usage-only chunk
        assert (
            chunks[-1]["choices"][0]["finish_reason"] == "stop"
            and chunks[-1]["usage"]["completion_tokens"] >= 1
        )


def test_chat_json_and_usage_override():
    script = [{"read": "a.py", "usage": {"input": 100, "output": 7, "cached": 40}}, {"say": "ok"}]
    with ReplayServer(script) as srv:  # no root, no cwd in the prompt: relative paths
        client = httpx.Client(base_url=srv.base_url("openai"), timeout=5)
        body = chat(client, [{"role": "user", "content": "x"}]).json()
        choice = body["choices"][0]
        assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
        fn = choice["message"]["tool_calls"][0]["function"]
        assert fn["name"] == "read" and json.loads(fn["arguments"]) == {"filePath": "a.py"}
        assert body["usage"]["prompt_tokens"] == 100 and body["usage"]["completion_tokens"] == 7
        assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == 40
        body = chat(client, [{"role": "user", "content": "x"}]).json()
        assert body["choices"][0]["message"]["content"] == "ok"
        # exhausted: a final "done" so CLIs stop, without consuming anything
        body = chat(client, [{"role": "user", "content": "x"}]).json()
        assert body["choices"][0]["message"]["content"] == "done"
        assert srv.turns_used == 2 and srv.requests[-1]["source"] == "exhausted"


def test_title_request_without_tools_does_not_consume_a_tool_turn(tmp_path):
    with ReplayServer(SCRIPT, root=tmp_path) as srv:
        client = httpx.Client(base_url=srv.base_url("openai"), timeout=5)
        title = [
            {"role": "system", "content": "You are a title generator."},
            {"role": "user", "content": "fix it"},
        ]
        text, calls, _, _ = assemble_chat(chat_stream(client, title, tools=None))
        assert text == "Task" and not calls
        assert srv.turns_used == 0 and srv.requests[0]["source"] == "side"
        _, calls, _, _ = assemble_chat(chat_stream(client, [{"role": "user", "content": "fix it"}]))
        assert calls[0]["name"] == "edit" and srv.turns_used == 1


def test_title_request_before_a_text_only_turn_is_also_side():
    with ReplayServer([{"say": "the answer"}]) as srv:
        client = httpx.Client(base_url=srv.base_url("openai"), timeout=5)
        title = [{"role": "system", "content": "Generate a short title"}, {"role": "user", "content": "q"}]
        assert chat(client, title, tools=None).json()["choices"][0]["message"]["content"] == "Task"
        plain = [{"role": "user", "content": "q"}]
        assert chat(client, plain, tools=None).json()["choices"][0]["message"]["content"] == "the answer"


def test_consume_toolless_true_and_missing_tool_error():
    script = {"turns": [{"run": "ls"}], "consume_toolless": True}
    with ReplayServer(script) as srv:
        client = httpx.Client(base_url=srv.base_url("openai"), timeout=5)
        content = chat(client, [{"role": "user", "content": "q"}], tools=None).json()["choices"][0][
            "message"
        ]["content"]
        assert content.startswith("replay error: no advertised tool fits action 'run ls'")
        assert srv.turns_used == 1 and "no advertised tool" in srv.errors[0]


def test_root_detected_from_the_prompt_when_no_root_option():
    with ReplayServer([{"read": "a.py"}]) as srv:
        client = httpx.Client(base_url=srv.base_url("openai"), timeout=5)
        msgs = [
            {"role": "system", "content": "Env:\n  Working directory: /work/proj\n"},
            {"role": "user", "content": "q"},
        ]
        fn = chat(client, msgs).json()["choices"][0]["message"]["tool_calls"][0]["function"]
        assert json.loads(fn["arguments"]) == {"filePath": "/work/proj/a.py"}


RESP_TOOLS = [
    {
        "type": "function",
        "name": "exec_command",
        "parameters": {"type": "object", "properties": {"cmd": S}, "required": ["cmd"]},
    },
    {
        "type": "custom",
        "name": "apply_patch",
        "description": "patch",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"},
    },
    {"type": "web_search"},
]


def responses_events(client, input_items, stream=True):
    r = client.post(
        "/responses", json={"model": "gpt-5.5", "input": input_items, "tools": RESP_TOOLS, "stream": stream}
    )
    assert r.status_code == 200
    return [e for e in parse_sse(r.text)] if stream else r.json()


def test_responses_stream_function_call_custom_apply_patch_then_text(tmp_path):
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script = [
        {"actions": [{"read": "calc.py"}, {"edit": "calc.py", "old": "a - b", "new": "a + b"}]},
        {"say": "Done."},
    ]
    with ReplayServer(script, root=tmp_path) as srv:
        client = httpx.Client(base_url=srv.base_url("codex"), timeout=5)
        user = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix"}]}]
        events = responses_events(client, user)
        types = [e.event for e in events]
        assert all(e.event == e.json()["type"] for e in events)
        assert [e.json()["sequence_number"] for e in events] == list(range(len(events)))
        assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"
        assert (
            "response.function_call_arguments.delta" in types
            and "response.custom_tool_call_input.delta" in types
        )
        items = [e.json()["item"] for e in events if e.event == "response.output_item.done"]
        assert items[0]["type"] == "function_call" and json.loads(items[0]["arguments"]) == {
            "cmd": "cat calc.py"
        }
        patch = "*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n*** End Patch"
        assert items[1] == {
            "type": "custom_tool_call",
            "id": items[1]["id"],
            "call_id": "call_0_1",
            "name": "apply_patch",
            "input": patch,
        }
        deltas = "".join(
            e.json()["delta"] for e in events if e.event == "response.custom_tool_call_input.delta"
        )
        assert deltas == patch
        completed = events[-1].json()["response"]
        assert completed["status"] == "completed" and completed["output"] == items
        u = completed["usage"]
        assert (
            u["total_tokens"] == u["input_tokens"] + u["output_tokens"]
            and "cached_tokens" in u["input_tokens_details"]
        )

        history = (
            user
            + items
            + [
                {"type": "function_call_output", "call_id": "call_0_0", "output": "def add(a, b): ..."},
                {
                    "type": "custom_tool_call_output",
                    "call_id": "call_0_1",
                    "output": "Success. Updated: calc.py",
                },
            ]
        )
        events = responses_events(client, history)
        text = "".join(e.json()["delta"] for e in events if e.event == "response.output_text.delta")
        assert text == "Done."
        done = [e.json()["item"] for e in events if e.event == "response.output_item.done"]
        assert done[0]["type"] == "message" and done[0]["content"][0]["text"] == "Done."
        assert srv.tool_results()["call_0_1"] == "Success. Updated: calc.py"


def test_responses_json():
    with ReplayServer([{"run": "ls"}]) as srv:
        client = httpx.Client(base_url=srv.base_url("openai"), timeout=5)
        body = responses_events(client, "hello", stream=False)
        assert body["object"] == "response" and body["status"] == "completed"
        assert body["output"][0]["type"] == "function_call" and body["output"][0]["name"] == "exec_command"
        assert body["usage"]["input_tokens"] >= 1


def test_model_listing_and_unknown_path(tmp_path):
    log = tmp_path / "log.jsonl"
    with ReplayServer([], log_path=log) as srv:
        client = httpx.Client(base_url=srv.url, timeout=5)
        data = client.get("/v1/models").json()
        assert data["object"] == "list" and data["data"][0]["id"] == "mock-model"
        r = client.post("/v1/nope", json={})
        assert r.status_code == 404 and "no route" in r.json()["error"]["message"]
        assert srv.requests[-1]["status"] == 404 and srv.errors
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["path"] for x in lines] == ["/v1/models", "/v1/nope"]


NAMESPACED = [*RESP_TOOLS, {"type": "namespace", "name": "mcp__bosun", "description": "bosun", "tools": [
    {"type": "function", "name": "delegate", "parameters": {"type": "object", "properties": {"task_path": S}}},
    {"type": "function", "name": "wait", "parameters": {"type": "object", "properties": {"run_id": S}}},
]}]


def test_a_namespaced_tool_is_called_by_its_inner_name_and_namespace():
    """Codex lists each MCP server's tools as a namespace; a script calls them as NAMESPACE__NAME."""
    script = {"turns": [{"call": "mcp__bosun__delegate", "args": {"task_path": "t.yaml"}},
                        {"call": "mcp__bosun__wait", "args": {"run_id": "{result:call_0_0.id}"}}],
              "consume_toolless": False}
    with ReplayServer(script) as srv:
        client = httpx.Client(base_url=srv.base_url("codex"), timeout=5)
        user = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]
        r = client.post("/responses", json={"model": "m", "input": user, "tools": NAMESPACED, "stream": False})
        call = r.json()["output"][0]
        assert (call["type"], call["name"], call["namespace"]) == ("function_call", "delegate", "mcp__bosun")
        # Codex relays the tool's JSON after a preamble of its own; the next call still finds the id.
        output = 'Wall time: 1.5 seconds\nOutput:\n{"id": "run-7", "state": "prepared"}'
        history = [*user, call, {"type": "function_call_output", "call_id": call["call_id"], "output": output}]
        r = client.post("/responses", json={"model": "m", "input": history, "tools": NAMESPACED, "stream": False})
        wait = r.json()["output"][0]
        assert (wait["name"], wait["namespace"], json.loads(wait["arguments"])) == ("wait", "mcp__bosun", {"run_id": "run-7"})
        assert not srv.errors


def test_a_plain_tool_call_carries_no_namespace():
    with ReplayServer([{"run": "ls"}]) as srv:
        client = httpx.Client(base_url=srv.base_url("codex"), timeout=5)
        r = client.post("/responses", json={"model": "m", "input": "hi", "tools": NAMESPACED, "stream": False})
        assert r.json()["output"][0]["name"] == "exec_command" and "namespace" not in r.json()["output"][0]
