"""`bosun replay serve` as a user runs it: a real process serving on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx

from tests.conftest import ROOT


def test_replay_serve_prints_its_url_and_answers(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- say: hello from the script\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "bosun", "replay", "serve", "--script", str(script)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        res = httpx.post(url + "/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert res.status_code == 200
        assert res.json()["choices"][0]["message"]["content"] == "hello from the script"
        assert httpx.get(url + "/v1/models").status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
