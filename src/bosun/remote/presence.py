"""Agent presence: each agent puts its status in ``bosun_agents`` every heartbeat; the bucket's TTL
removes an agent that stopped. ``bosun agents`` reads it."""

from __future__ import annotations

import json
from typing import Any


async def announce(kv: Any, name: str, status: dict[str, Any]) -> None:
    await kv.put(name, json.dumps(status).encode())


async def withdraw(kv: Any, name: str) -> None:
    try:
        await kv.purge(name)
    except Exception:  # noqa: BLE001 - the hub is away or the entry expired: presence is best effort
        pass  # the TTL removes it anyway


async def live_agents(kv: Any) -> list[dict[str, Any]]:
    from nats.js.errors import NoKeysError

    try:
        keys = await kv.keys()
    except NoKeysError:
        return []
    out = []
    for key in sorted(keys):
        try:
            entry = await kv.get(key)
        except Exception:  # noqa: BLE001 - the hub is away or the entry expired: presence is best effort
            continue  # expired between listing and reading
        if not entry.value:
            continue
        try:
            doc = json.loads(entry.value)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append({"name": key, **{k: v for k, v in doc.items() if k != "name"}})
    return out


def pool_capacity(agents: list[dict[str, Any]], pool: str) -> int:
    """How many tasks ``pool`` takes at once: the declared capacity of its live agents that are not
    draining (a draining agent takes nothing new)."""
    total = 0
    for agent in agents:
        if agent.get("pool") != pool or agent.get("draining"):
            continue
        try:
            total += max(0, int(agent.get("capacity") or 0))
        except (TypeError, ValueError):
            continue  # a malformed presence entry says nothing about capacity
    return total
