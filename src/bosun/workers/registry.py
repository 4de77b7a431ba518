"""Loads an adapter's class from the one table (``bosun.core.adapters``), lazily: CLI start-up stays fast."""

from __future__ import annotations

import importlib
import importlib.util

from bosun.core.adapters import ADAPTERS, unknown_adapter
from bosun.core.errors import BadInput
from bosun.workers.base import Worker

TYPE_CHECKING = False
if TYPE_CHECKING:
    from bosun.core.config import Profile
    from bosun.workers.cli_worker import CliSpec


def get_worker(adapter: str) -> Worker:
    try:
        target = ADAPTERS[adapter].target
    except KeyError:
        raise BadInput(unknown_adapter(adapter) or adapter, "docs/workers.md describes each adapter") from None
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


def cli_spec(adapter: str) -> CliSpec | None:
    """What bosun knows about the adapter's CLI; None for adapters without one (command, native, remote)."""
    spec: CliSpec | None = getattr(get_worker(adapter), "spec", None)
    return spec


def effort_args(adapter: str, level: str, profile: Profile) -> list[str]:
    """The argv that tells the adapter's CLI the effort level (empty: it has no such flag)."""
    spec = cli_spec(adapter)
    return spec.effort_args(level, profile) if spec and spec.effort_args else []


def available_adapters() -> list[str]:
    out = []
    for name, row in ADAPTERS.items():
        if importlib.util.find_spec(row.target.split(":")[0]) is not None:
            out.append(name)
    return out
