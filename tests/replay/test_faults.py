"""Fault injection on every wire API, stalls and shutdown, the request log and the serve entry point."""

from __future__ import annotations

import io
import json
import threading
import time

import httpx
import pytest

from bosun.replay import ReplayServer, main_serve, serve_forever
from bosun.replay.sse import parse_sse

S = {"type": "string"}


def chat_body(stream=True):
    return {"model": "mock-model", "messages": [{"role": "user", "content": "q"}], "stream": stream}


def resp_body(stream=True):
    return {"model": "mock-model", "input": "q", "stream": stream}


def msg_body(stream=True):
    return {
        "model": "mock-model",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "q"}],
        "stream": stream,
    }


def gem_body(stream=True):
    return {"contents": [{"role": "user", "parts": [{"text": "q"}]}]}


# api -> (path for streaming, body factory, a function reading the error message)
APIS = {
    "chat": ("/v1/chat/completions", chat_body, lambda j: j["error"]["message"]),
    "responses": ("/v1/responses", resp_body, lambda j: j["error"]["message"]),
    "anthropic": ("/v1/messages?beta=true", msg_body, lambda j: j["error"]["message"]),
    "gemini": (
        "/v1beta/models/mock-model:streamGenerateContent?alt=sse",
        gem_body,
        lambda j: j["error"]["message"],
    ),
}


def post(srv, api, stream=True, timeout=5.0):
    path, body, _ = APIS[api]
    return httpx.post(srv.url + path, json=body(stream), timeout=timeout)


@pytest.mark.parametrize("api", list(APIS))
def test_status_faults_then_recovery(api):
    script = [{"fault": 401}, {"fault": 429, "retry_after": 3}, {"fault": 500}, {"say": "recovered"}]
    with ReplayServer(script) as srv:
        message = APIS[api][2]
        r = post(srv, api)
        assert r.status_code == 401 and message(r.json())
        r = post(srv, api)
        assert r.status_code == 429 and r.headers["retry-after"] == "3"
        assert "Rate limit reached" in message(r.json()) and "try again in 3s" in message(r.json())
        r = post(srv, api)
        assert r.status_code == 500
        r = post(srv, api)
        assert r.status_code == 200 and "recovered" in "".join(e.data for e in parse_sse(r.text))
        assert [x["fault"] for x in srv.requests] == ["401", "429", "500", None]
        assert srv.turns_used == 4


def test_error_bodies_follow_each_provider():
    with ReplayServer([{"fault": 401}] * 4 + [{"fault": 429}] * 2) as srv:
        assert post(srv, "chat").json()["error"]["code"] == "invalid_api_key"
        assert post(srv, "responses").json()["error"]["type"] == "invalid_request_error"
        body = post(srv, "anthropic").json()
        assert body == {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        }
        assert post(srv, "gemini").json()["error"]["status"] == "UNAUTHENTICATED"
        assert post(srv, "chat").json()["error"]["code"] == "rate_limit_exceeded"
        details = post(srv, "gemini").json()["error"]["details"]
        assert details[0]["retryDelay"] == "1s"


def test_model_not_found_per_api():
    with ReplayServer([{"fault": "model_not_found"}] * 4) as srv:
        r = post(srv, "chat")
        assert r.status_code == 404
        assert r.json()["error"]["code"] == "model_not_found"
        assert r.json()["error"]["type"] == "invalid_request_error"
        assert "The model `mock-model` does not exist" in r.json()["error"]["message"]
        r = post(srv, "responses")
        assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
        r = post(srv, "anthropic")
        assert r.status_code == 404 and r.json()["error"] == {
            "type": "not_found_error",
            "message": "model: mock-model",
        }
        r = post(srv, "gemini")
        err = r.json()["error"]
        assert r.status_code == 404 and err["status"] == "NOT_FOUND" and err["code"] == 404
        assert "models/mock-model is not found" in err["message"]


@pytest.mark.parametrize("api", list(APIS))
def test_malformed_sse(api):
    with ReplayServer([{"fault": "malformed_sse"}]) as srv:
        r = post(srv, api)
        assert r.status_code == 200
        events = parse_sse(r.text)
        events[0].json()  # a valid first frame...
        with pytest.raises(ValueError):
            events[-1].json()  # ...then a broken one
        assert "[DONE]" not in r.text and "response.completed" not in r.text and "message_stop" not in r.text


def test_malformed_non_streamed_json():
    with ReplayServer([{"fault": "malformed_sse"}]) as srv:
        r = post(srv, "chat", stream=False)
        with pytest.raises(ValueError):
            r.json()


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_stall_times_the_client_out_without_blocking_others_or_shutdown(api):
    srv = ReplayServer([{"fault": "stall"}, {"say": "still alive"}]).start()
    try:
        path, body, _ = APIS[api]
        got_first = []
        with pytest.raises(httpx.ReadTimeout):
            with httpx.stream("POST", srv.url + path, json=body(), timeout=httpx.Timeout(5, read=0.5)) as r:
                assert r.status_code == 200
                for chunk in r.iter_text():
                    got_first.append(chunk)
        assert got_first and "data:" in got_first[0]  # headers and one frame, then nothing
        # the stalled stream holds one thread; other requests are served meanwhile
        r = post(srv, api)
        assert r.status_code == 200 and "still alive" in "".join(e.data for e in parse_sse(r.text))
    finally:
        started = time.monotonic()
        srv.stop()  # the stalled handler is still waiting: stopping must not wait for it
        assert time.monotonic() - started < 2.0


def test_stop_is_prompt_with_a_stalled_stream_open():
    srv = ReplayServer([{"fault": "stall", "stall_s": 60}]).start()
    errors = []

    def client():
        try:
            with httpx.stream("POST", srv.url + "/v1/chat/completions", json=chat_body(), timeout=30) as r:
                for _ in r.iter_raw():
                    pass
        except httpx.HTTPError as exc:
            errors.append(exc)

    t = threading.Thread(target=client, daemon=True)
    t.start()
    assert srv.wait_for_requests(1, timeout=5)
    time.sleep(0.1)
    started = time.monotonic()
    srv.stop()
    t.join(5)
    assert time.monotonic() - started < 2.0
    assert not t.is_alive()  # the client saw the connection end instead of hanging 60 s
    assert srv.requests[0]["fault"] == "stall"


def test_on_exhausted_error_and_gzip_request_bodies():
    import gzip

    with ReplayServer({"turns": [], "on_exhausted": "error"}) as srv:
        data = gzip.compress(json.dumps(chat_body(stream=False)).encode())
        r = httpx.post(
            srv.url + "/v1/chat/completions",
            content=data,
            headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
        )
        assert r.status_code == 500 and "exhausted" in r.json()["error"]["message"]
        assert srv.requests[0]["source"] == "exhausted" and srv.errors == ["replay script exhausted"]
        r = httpx.post(srv.url + "/v1/chat/completions", content=b"not json")
        assert r.status_code == 400


def test_request_log_records_and_json_lines(tmp_path):
    log = tmp_path / "requests.jsonl"
    tools = [
        {
            "type": "function",
            "function": {"name": "bash", "parameters": {"type": "object", "properties": {"command": S}}},
        }
    ]
    with ReplayServer([{"run": "make test"}, {"say": "ok"}], log_path=log) as srv:
        body = {**chat_body(stream=False), "tools": tools}
        httpx.post(srv.url + "/chat/completions", json=body, headers={"Authorization": "Bearer sk-secret"})
    rec = json.loads(log.read_text().splitlines()[0])
    assert rec["method"] == "POST" and rec["path"] == "/chat/completions" and rec["api"] == "openai_chat"
    assert rec["body"]["model"] == "mock-model" and rec["tools"] == ["bash"]
    assert rec["turn"] == 0 and rec["source"] == "turn" and rec["fault"] is None and rec["status"] == 200
    assert rec["calls"] == [
        {
            "id": "call_0_0",
            "name": "bash",
            "kind": "function",
            "arguments": {"command": "make test"},
            "action": "run make test",
        }
    ]
    assert rec["usage"]["input"] > 0 and rec["headers"]["auth"] == "authorization"
    assert "sk-secret" not in log.read_text()


def test_concurrent_requests_never_share_a_turn():
    script = [{"say": f"turn {i}"} for i in range(20)]
    with ReplayServer(script) as srv:
        texts: list[str] = []
        lock = threading.Lock()

        def worker():
            for _ in range(5):
                r = httpx.post(srv.url + "/v1/chat/completions", json=chat_body(stream=False), timeout=5)
                with lock:
                    texts.append(r.json()["choices"][0]["message"]["content"])

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert sorted(texts) == sorted(f"turn {i}" for i in range(20))
        assert srv.turns_used == 20


def test_serve_forever_prints_the_url_and_stops_on_request():
    out, stop = io.StringIO(), threading.Event()
    rc: list[int] = []
    t = threading.Thread(
        target=lambda: rc.append(serve_forever([{"say": "hi"}], out=out, stop=stop)), daemon=True
    )
    t.start()
    deadline = time.monotonic() + 5
    while not out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    url = out.getvalue().strip()
    assert url.startswith("http://127.0.0.1:")
    assert httpx.get(url + "/health").json()["ok"] is True
    stop.set()
    t.join(5)
    assert rc == [0]


def test_main_serve_rejects_a_missing_script(tmp_path, capsys):
    assert main_serve(["--script", str(tmp_path / "missing.yaml")]) == 2
    assert "replay script not found" in capsys.readouterr().err
