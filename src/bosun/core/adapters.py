"""The one table of worker adapters: each name, the class that implements it, and the facts about its
CLI that bosun needs without running it.

Everything else that names adapters derives from this table: config validation (``Profile.adapter``),
the registry that loads a class (``workers/registry.py``), ``bosun doctor``, ``bosun workers``,
``bosun models``, effort snapping and the docs tests. It sits in the base layer and imports nothing,
because config checks a name with it and the read-only verbs (``bosun models``) read its facts
without importing a worker module (their start-up stays under 30 ms). What a CLI does at run time
(argv, environment, parser, what it enforces, how it is told an effort level) lives in the adapter's
module and its ``CliSpec``.
"""

from __future__ import annotations


class Adapter:
    """One row. A plain class, not a dataclass: importing dataclasses would cost the read-only verbs."""

    __slots__ = ("name", "target", "effort_levels", "wire_api", "default_base_url", "model_listing")

    def __init__(self, name: str, target: str, *, effort_levels: tuple[str, ...] = (), wire_api: str = "openai",
                 default_base_url: str | None = None, model_listing: str | None = None) -> None:
        self.name = name
        self.target = target  # "module:Class", imported only when a run needs it
        self.effort_levels = effort_levels  # what the CLI's --help accepts, on effort.SCALE; () : no setting
        self.wire_api = wire_api  # what a profile without ``api`` speaks: openai, responses, anthropic, gemini
        self.default_base_url = default_base_url  # the endpoint a profile without ``base_url`` reaches
        self.model_listing = model_listing  # the CLI whose ``models`` verb lists its own providers' models


ALL_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

ADAPTERS: dict[str, Adapter] = {a.name: a for a in (
    Adapter("command", "bosun.workers.command:CommandWorker"),
    Adapter("native", "bosun.workers.native:NativeWorker"),
    Adapter("opencode", "bosun.workers.opencode:OpenCodeWorker", effort_levels=ALL_LEVELS, model_listing="opencode"),
    # Pi sends xhigh as high for models it does not know.
    Adapter("pi", "bosun.workers.pi:PiWorker", effort_levels=("none", "minimal", "low", "medium", "high")),
    Adapter("codex", "bosun.workers.codex:CodexWorker", effort_levels=("none", "minimal", "low", "medium", "high", "xhigh"),
            wire_api="responses", default_base_url="https://api.openai.com/v1"),
    Adapter("claude", "bosun.workers.claude:ClaudeWorker", effort_levels=("low", "medium", "high", "xhigh", "max"),
            wire_api="anthropic"),
    Adapter("qwen", "bosun.workers.qwen:QwenWorker"),
    Adapter("gemini", "bosun.workers.gemini:GeminiWorker", wire_api="gemini"),
    Adapter("kilo", "bosun.workers.kilo:KiloWorker", effort_levels=ALL_LEVELS, model_listing="kilo"),
    Adapter("acp", "bosun.workers.acp:AcpWorker"),
    Adapter("remote", "bosun.remote.adapter:RemoteWorker"),
)}

NAMES = tuple(ADAPTERS)


def unknown_adapter(name: str) -> str | None:
    """Why ``name`` is not an adapter (with the nearest real name), or None when it is one."""
    if name in ADAPTERS:
        return None
    from difflib import get_close_matches

    near = get_close_matches(name, NAMES, n=1)
    guess = f"did you mean {near[0]!r}? " if near else ""
    return f"unknown adapter {name!r}: {guess}valid adapters: {', '.join(NAMES)}"


def effort_levels(adapter: str) -> tuple[str, ...]:
    row = ADAPTERS.get(adapter)
    return row.effort_levels if row else ()
