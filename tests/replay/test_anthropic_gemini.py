"""The replay server over Anthropic Messages and Gemini generateContent (httpx as the client)."""

from __future__ import annotations

import json

import httpx

from bosun.replay import ReplayServer
from bosun.replay.sse import parse_sse

S = {"type": "string"}
CLAUDE_TOOLS = [
    {
        "name": "Read",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"file_path": S}},
    },
    {
        "name": "Edit",
        "description": "Edit a file",
        "input_schema": {"type": "object", "properties": {"file_path": S, "old_string": S, "new_string": S}},
    },
    {"type": "web_search_20250305", "name": "web_search"},
]
SCRIPT = [
    {
        "actions": [{"read": "calc.py"}, {"edit": "calc.py", "old": "a - b", "new": "a + b"}],
        "say": "Let me fix it.",
    },
    {"say": "Fixed."},
]
HEADERS = {"anthropic-version": "2023-06-01", "x-api-key": "dummy"}


def messages(client, msgs, tools=CLAUDE_TOOLS, stream=True, **extra):
    body = {"model": "claude-mock", "max_tokens": 4096, "messages": msgs, "stream": stream, **extra}
    if tools is not None:
        body["tools"] = tools
    return client.post("/v1/messages?beta=true", json=body, headers=HEADERS)


def assemble_anthropic(events):
    blocks, stop, usage = {}, None, {}
    for ev in events:
        data = ev.json()
        assert ev.event == data["type"]
        if data["type"] == "message_start":
            usage.update(data["message"]["usage"])
        elif data["type"] == "content_block_start":
            blocks[data["index"]] = {**data["content_block"], "_json": ""}
        elif data["type"] == "content_block_delta":
            d, b = data["delta"], blocks[data["index"]]
            if d["type"] == "text_delta":
                b["text"] += d["text"]
            else:
                b["_json"] += d["partial_json"]
        elif data["type"] == "message_delta":
            stop = data["delta"]["stop_reason"]
            usage.update(data["usage"])
    for b in blocks.values():
        if b["type"] == "tool_use":
            b["input"] = json.loads(b.pop("_json"))
        else:
            b.pop("_json")
    return [blocks[i] for i in sorted(blocks)], stop, usage


def test_anthropic_stream_text_and_parallel_tool_uses_then_text(tmp_path):
    with ReplayServer(SCRIPT, root=tmp_path) as srv:
        client = httpx.Client(base_url=srv.base_url("anthropic"), timeout=5)
        user = [{"role": "user", "content": "fix calc.py"}]
        r = messages(client, user)
        events = parse_sse(r.text)
        assert events[0].event == "message_start" and events[-1].event == "message_stop"
        blocks, stop, usage = assemble_anthropic(events)
        assert stop == "tool_use"
        assert blocks[0] == {"type": "text", "text": "Let me fix it."}
        assert blocks[1]["name"] == "Read" and blocks[1]["input"] == {"file_path": str(tmp_path / "calc.py")}
        assert blocks[2]["input"] == {
            "file_path": str(tmp_path / "calc.py"),
            "old_string": "a - b",
            "new_string": "a + b",
        }
        assert (
            usage["input_tokens"] > 0 and usage["output_tokens"] > 0 and usage["cache_read_input_tokens"] == 0
        )

        results = [
            {"type": "tool_result", "tool_use_id": blocks[1]["id"], "content": "def add(a, b): return a - b"},
            {
                "type": "tool_result",
                "tool_use_id": blocks[2]["id"],
                "content": [{"type": "text", "text": "edited"}],
            },
        ]
        history = user + [{"role": "assistant", "content": blocks}, {"role": "user", "content": results}]
        blocks, stop, _ = assemble_anthropic(parse_sse(messages(client, history).text))
        assert blocks == [{"type": "text", "text": "Fixed."}] and stop == "end_turn"
        assert srv.tool_results() == {"call_0_0": "def add(a, b): return a - b", "call_0_1": "edited"}
        assert srv.requests[0]["query"] == {"beta": "true"} and srv.requests[0]["tools"] == ["Read", "Edit"]
        assert srv.requests[0]["headers"]["auth"] == "x-api-key"  # which credential, never its value


def test_anthropic_json_with_cached_usage_split():
    script = [{"say": "hi", "usage": {"input": 100, "output": 5, "cached": 60}}]
    with ReplayServer(script) as srv:
        client = httpx.Client(base_url=srv.url, timeout=5)
        body = messages(client, [{"role": "user", "content": "x"}], stream=False).json()
        assert body["type"] == "message" and body["stop_reason"] == "end_turn"
        assert body["content"] == [{"type": "text", "text": "hi"}]
        # Anthropic counts cache reads apart from input_tokens: 100 total = 40 + 60
        assert body["usage"] == {
            "input_tokens": 40,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 60,
            "output_tokens": 5,
        }


def test_claude_code_side_requests_do_not_consume_turns():
    with ReplayServer(SCRIPT) as srv:
        client = httpx.Client(base_url=srv.url, timeout=5)
        quota = messages(client, [{"role": "user", "content": "quota"}], max_tokens=1, stream=False).json()
        assert quota["content"][0]["text"] == "Task"
        topic = messages(client, [{"role": "user", "content": "fix"}], tools=None, stream=False).json()
        assert topic["content"][0]["text"] == "Task"
        count = client.post("/v1/messages/count_tokens", json={"messages": []}, headers=HEADERS).json()
        assert count["input_tokens"] >= 1
        assert srv.turns_used == 0
        assert [r.get("side_reason") for r in srv.requests[:2]] == [
            "max_tokens<=1 probe",
            "toolless request while the next turn needs tools",
        ]
        blocks, _, _ = assemble_anthropic(
            parse_sse(messages(client, [{"role": "user", "content": "fix"}]).text)
        )
        assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_use"] and srv.turns_used == 1


def test_anthropic_model_listing_by_header():
    with ReplayServer([]) as srv:
        data = httpx.get(srv.url + "/v1/models", headers=HEADERS).json()
        assert data["data"][0]["type"] == "model" and data["has_more"] is False


GEMINI_TOOLS = [
    {
        "functionDeclarations": [
            {"name": "read_file", "parametersJsonSchema": {"type": "object", "properties": {"file_path": S}}},
            {
                "name": "replace",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {
                        "file_path": {"type": "STRING"},
                        "old_string": {"type": "STRING"},
                        "new_string": {"type": "STRING"},
                    },
                },
            },
        ]
    }
]


def gemini(client, contents, method="streamGenerateContent", sse=True, tools=GEMINI_TOOLS, **extra):
    url = f"/v1beta/models/gemini-mock:{method}" + ("?alt=sse" if sse else "")
    body = {"contents": contents, **extra}
    if tools is not None:
        body["tools"] = tools
    return client.post(url, json=body, headers={"x-goog-api-key": "dummy"})


def test_gemini_sse_function_call_then_text(tmp_path):
    script = [
        {"edit": "calc.py", "old": "a - b", "new": "a + b", "say": "Editing."},
        {"say": "All fixed now, thanks for waiting."},
    ]
    with ReplayServer(script, root=tmp_path) as srv:
        client = httpx.Client(base_url=srv.base_url("gemini"), timeout=5)
        user = [{"role": "user", "parts": [{"text": "fix"}]}]
        records = [e.json() for e in parse_sse(gemini(client, user).text)]
        parts = [p for r in records for p in r["candidates"][0]["content"]["parts"]]
        assert parts[0] == {"text": "Editing."}
        fc = parts[1]["functionCall"]
        assert fc["name"] == "replace" and fc["id"] == "call_0_0"
        assert fc["args"] == {
            "file_path": str(tmp_path / "calc.py"),
            "old_string": "a - b",
            "new_string": "a + b",
        }
        last = records[-1]
        assert last["candidates"][0]["finishReason"] == "STOP"
        u = last["usageMetadata"]
        assert (
            u["totalTokenCount"] == u["promptTokenCount"] + u["candidatesTokenCount"]
            and "cachedContentTokenCount" in u
        )

        history = user + [
            {"role": "model", "parts": [{"functionCall": fc}]},
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": fc["id"], "name": "replace", "response": {"output": "ok"}}}
                ],
            },
        ]
        records = [e.json() for e in parse_sse(gemini(client, history).text)]
        assert len(records) > 1  # text comes in pieces
        text = "".join(p.get("text", "") for r in records for p in r["candidates"][0]["content"]["parts"])
        assert text == "All fixed now, thanks for waiting."
        assert srv.tool_results() == {"call_0_0": {"output": "ok"}}
        assert srv.requests[0]["model"] == "gemini-mock"


def test_gemini_json_array_stream_and_generate_content():
    with ReplayServer([{"read": "a.py"}, {"say": "ok"}]) as srv:
        client = httpx.Client(base_url=srv.url, timeout=5)
        arr = gemini(client, [{"role": "user", "parts": [{"text": "q"}]}], sse=False).json()
        assert (
            isinstance(arr, list)
            and arr[-1]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "read_file"
        )
        one = gemini(
            client, [{"role": "user", "parts": [{"text": "q"}]}], method="generateContent", sse=False
        ).json()
        assert one["candidates"][0]["content"]["parts"] == [{"text": "ok"}]


def test_gemini_next_speaker_check_gets_schema_json_without_consuming():
    schema = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "next_speaker": {"type": "string", "enum": ["user", "model"]},
        },
    }
    with ReplayServer([{"read": "a.py"}]) as srv:
        client = httpx.Client(base_url=srv.url, timeout=5)
        config = {"responseMimeType": "application/json", "responseJsonSchema": schema}
        one = gemini(
            client,
            [{"role": "user", "parts": [{"text": "who next?"}]}],
            method="generateContent",
            sse=False,
            tools=None,
            generationConfig=config,
        ).json()
        answer = json.loads(one["candidates"][0]["content"]["parts"][0]["text"])
        assert answer["next_speaker"] == "user" and srv.turns_used == 0


def test_gemini_model_listing():
    with ReplayServer({"turns": [], "models": ["gemini-mock"]}) as srv:
        data = httpx.get(srv.url + "/v1beta/models").json()
        assert data["models"][0]["name"] == "models/gemini-mock"
        assert "generateContent" in data["models"][0]["supportedGenerationMethods"]
