"""Keep credentials out of everything bosun writes: events, reports, ``--json`` output, errors.

Two kinds of secret are replaced: the values of the environment variables that hold keys (every
profile's ``api_key_env`` once a profile is used, and any variable whose name says it holds a key,
token, secret or password), wherever they appear; and anything the secret scanner recognises (known
key formats, hard-coded credentials in assignments).
"""

from __future__ import annotations

import _thread
import os
import re

TYPE_CHECKING = False  # not typing's: importing typing costs every read-only verb ~5 ms
if TYPE_CHECKING:
    from typing import Any

MASK = "[REDACTED]"
MIN_SECRET_CHARS = 8
_SECRET_NAME = re.compile(r"(?i)(?:api[_-]?key|_key|token|secret|passw(?:or)?d|credential)s?$")
_lock = _thread.allocate_lock()  # not threading: it costs start-up on every read-only verb
_names: set[str] = set()


def register_key_names(names: list[str] | tuple[str, ...]) -> None:
    """Variables whose values must never be written (a profile's ``api_key_env``)."""
    with _lock:
        _names.update(n for n in names if n)


def secret_values(env: dict[str, str] | None = None) -> list[str]:
    """The current values of key-holding variables, longest first (so no secret is half-replaced)."""
    src = os.environ if env is None else env
    with _lock:
        names = set(_names)
    values = {v for k, v in src.items() if (k in names or _SECRET_NAME.search(k)) and len(v) >= MIN_SECRET_CHARS}
    return sorted(values, key=len, reverse=True)


def redact_text(text: str, values: list[str] | None = None) -> str:
    from bosun.core.secretscan import redact_line

    for value in secret_values() if values is None else values:
        if value in text:
            text = text.replace(value, MASK)
    return redact_line(text)


def redact(obj: Any, values: list[str] | None = None) -> Any:
    """``obj`` (JSON-like: dicts, lists, strings) with every string redacted."""
    values = secret_values() if values is None else values
    if isinstance(obj, str):
        return redact_text(obj, values)
    if isinstance(obj, dict):
        return {k: redact(v, values) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact(v, values) for v in obj]
    return obj


def contains_secret(text: str) -> list[str]:
    """What kinds of secret ``text`` holds (values withheld): for refusing a task before dispatch."""
    from bosun.core.secretscan import scan_line

    kinds: list[str] = []
    if any(v in text for v in secret_values()):
        kinds.append("the value of a key variable")
    for line in text.splitlines():
        for kind in scan_line(line):  # judged as prose/code: only quoted assignments count
            if kind not in kinds:
                kinds.append(kind)
    return kinds


def refuse_secret_in_task(texts: dict[str, str], allow: bool) -> None:
    """Raise ``BadInput`` when the task's text carries a credential: the worker, its provider and
    every record bosun keeps would see it. ``texts`` maps where the text comes from to the text."""
    if allow:
        return
    from bosun.core.errors import BadInput

    for where, text in texts.items():
        kinds = contains_secret(text)
        if kinds:
            raise BadInput(
                f"the task's {where} contains what looks like a secret ({', '.join(kinds)}); "
                "it would be sent to the worker's provider and kept in bosun's records",
                "take the credential out of the task (the worker gets keys through its profile's "
                "api_key_env), or pass --allow-secret-in-task if it is not a real secret",
                code="SECRET_IN_TASK",
            )


def task_texts(task: Any, prefix: str = "") -> dict[str, str]:
    """The text of a task contract that is sent to a worker: prompt and acceptance criteria."""
    texts = {f"{prefix}prompt": task.prompt}
    if task.acceptance:
        texts[f"{prefix}acceptance"] = "\n".join(task.acceptance)
    return texts
