"""Short adapter names mapped to their classes, imported lazily (CLI start-up stays fast)."""

from __future__ import annotations

import importlib
import importlib.util

from bosun.errors import BadInput
from bosun.workers.base import Worker

ADAPTERS: dict[str, str] = {
    "command": "bosun.workers.command:CommandWorker",
    "native": "bosun.workers.native:NativeWorker",
    "opencode": "bosun.workers.opencode:OpenCodeWorker",
    "pi": "bosun.workers.pi:PiWorker",
    "codex": "bosun.workers.codex:CodexWorker",
    "claude": "bosun.workers.claude:ClaudeWorker",
    "qwen": "bosun.workers.qwen:QwenWorker",
    "gemini": "bosun.workers.gemini:GeminiWorker",
    "kilo": "bosun.workers.kilo:KiloWorker",
    "acp": "bosun.workers.acp:AcpWorker",
    "remote": "bosun.workers.remote:RemoteWorker",
}


def get_worker(adapter: str) -> Worker:
    try:
        target = ADAPTERS[adapter]
    except KeyError:
        raise BadInput(
            f"unknown adapter {adapter!r}", f"valid adapters: {', '.join(sorted(ADAPTERS))}"
        ) from None
    module_name, cls_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise BadInput(
                f"adapter {adapter!r} is not available in this version of bosun",
                f"available now: {', '.join(available_adapters())}",
            ) from None
        raise
    worker: Worker = getattr(module, cls_name)()
    return worker


def available_adapters() -> list[str]:
    out = []
    for name, target in ADAPTERS.items():
        if importlib.util.find_spec(target.split(":")[0]) is not None:
            out.append(name)
    return out
