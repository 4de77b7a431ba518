from __future__ import annotations

import pytest

from bosun.workers.base import ErrorClass
from bosun.workers.classify import classify_failure, parse_retry_after


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Error: 401 Unauthorized", ErrorClass.auth),
        ("Invalid API key provided", ErrorClass.auth),
        ("You are not logged in. Please log in", ErrorClass.auth),
        ("429 Too Many Requests", ErrorClass.rate_limited),
        ("Rate limit reached for requests, try again in 20s", ErrorClass.rate_limited),
        ("The server is overloaded", ErrorClass.rate_limited),
        ("You exceeded your current quota, please check your plan and billing details", ErrorClass.quota),
        ("The model `gpt-9` does not exist or you do not have access to it.", ErrorClass.model_unavailable),
        ("ModelNotFound: unknown model mock", ErrorClass.model_unavailable),
        ("connect ECONNREFUSED 127.0.0.1:9", ErrorClass.transient),
        ("502 Bad Gateway", ErrorClass.transient),
        ("TypeError: cannot read properties of undefined", ErrorClass.permanent),
    ],
)
def test_classification(text, expected):
    assert classify_failure(text) == expected


def test_timeout_wins():
    assert classify_failure("429", timed_out=True) == ErrorClass.timeout


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("Retry-After: 30", 30),
        ('{"retry_after": 12.5}', 12.5),
        ("Rate limit reached. Please try again in 4h28m.", 4 * 3600 + 28 * 60),
        ("try again in 20s", 20),
        ("Please retry after 2 minutes", 120),
        ("quota resets in 1 day", 86400),
        ("try again in 1m30s", 90),
        ("no hint here", None),
    ],
)
def test_retry_after(text, seconds):
    assert parse_retry_after(text) == seconds
