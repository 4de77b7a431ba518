"""Credentials are replaced wherever bosun writes text; prose about secrets is left alone."""

from __future__ import annotations

import pytest

from bosun.core.errors import BadInput
from bosun.core.redaction import contains_secret, redact, refuse_secret_in_task, register_key_names

ANTHROPIC = "sk-ant-" + "api03-AbCdEfGhIjKlMnOpQrStUvWx0123456789"


def test_a_registered_key_value_is_replaced_everywhere(monkeypatch):
    monkeypatch.setenv("PROVIDER_CRED", "plain-value-0123456789")  # a name that does not say "key"
    register_key_names(["PROVIDER_CRED"])
    event = {"type": "message", "text": "auth with plain-value-0123456789 failed",
             "input": {"argv": ["curl", "-H", "x: plain-value-0123456789"]}}
    out = redact(event)
    assert "plain-value-0123456789" not in str(out)
    assert out["text"] == "auth with [REDACTED] failed" and out["type"] == "message"


def test_variables_named_like_keys_are_redacted_without_registration(monkeypatch):
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-9f8e7d6c5b4a")
    assert redact("token tok-9f8e7d6c5b4a here") == "token [REDACTED] here"


def test_known_formats_and_hardcoded_assignments_are_replaced():
    text = f'client = Client(key="{ANTHROPIC}")\ndb_password = "hunter2hunter2"\nx = 1'
    out = redact(text)
    assert ANTHROPIC not in out and "hunter2hunter2" not in out
    assert "[REDACTED:Anthropic API key]" in out and "[REDACTED:password]" in out and "x = 1" in out


@pytest.mark.parametrize("text", [
    "Rotate the API key when the user logs out.",
    "password = os.environ['DB_PASSWORD']",
    'token = "changeme"',
    "AKIAIOSFODNN7EXAMPLE is the documented example id",
])
def test_prose_placeholders_and_references_are_not_secrets(text):
    assert contains_secret(text) == []
    assert redact(text) == text


def test_a_task_holding_a_secret_is_refused_unless_allowed():
    with pytest.raises(BadInput) as exc:
        refuse_secret_in_task({"prompt": f"call the API with {ANTHROPIC}"}, allow=False)
    assert exc.value.code == "SECRET_IN_TASK" and ANTHROPIC not in exc.value.message
    assert "Anthropic API key" in exc.value.message
    refuse_secret_in_task({"prompt": f"call the API with {ANTHROPIC}"}, allow=True)
