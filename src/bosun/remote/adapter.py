"""The ``remote`` adapter: the worker step runs on an agent of a NATS JetStream pool.

The profile's ``base_url`` is the hub (``nats://host:4222``) and its ``model`` names the pool. Only
the worker step leaves the machine: bosun prepared the worktree, and verifies, gates, approves and
integrates the returned change here exactly as for a local worker. See bosun.remote and docs/remote.md.
"""

from __future__ import annotations

from bosun.core.config import Profile
from bosun.workers.base import WorkerContext, WorkerInfo, WorkerResult


class RemoteWorker:
    """Not a ``CliWorker``: the worker step runs on a remote agent's machine, reached over NATS (bosun.remote)."""

    name = "remote"

    def run(self, ctx: WorkerContext) -> WorkerResult:
        from bosun.core.errors import BosunError
        from bosun.remote.client import run_remote
        from bosun.workers.base import ErrorClass, ev_error

        try:
            return run_remote(ctx)
        except BosunError as exc:
            # An unreachable hub is a failed attempt like a provider outage: the run records it, and a
            # profile with fallbacks moves on to the next one.
            unavailable = exc.code == "REMOTE_UNAVAILABLE"
            cls = ErrorClass.transient if unavailable else ErrorClass.permanent
            ctx.emit(ev_error(f"{exc.message} ({exc.hint})" if exc.hint else exc.message, cls))
            return WorkerResult(status="failed", error_class=cls, error_message=exc.message)

    def describe(self, profile: Profile) -> WorkerInfo:
        import importlib.util

        info = WorkerInfo(
            enforces=["local verification and gates of the returned change", "lease-holder-only results"],
            cannot_enforce=["the worker's sandbox: it is the agent machine's"],
        )
        if importlib.util.find_spec("nats") is None:
            info.problems.append("the remote adapter needs nats-py: pip install 'bosun[remote]'")
        if not profile.base_url:
            info.problems.append("profile has adapter = \"remote\" but no base_url = \"nats://...\"")
        return info


CAPACITY_LOOKUP_S = 5.0


def live_capacity(profile: Profile) -> int | None:
    """How many tasks the pool of a remote ``profile`` runs at once now (its live agents' capacity,
    from their presence), or None when the hub cannot say (unreachable, no nats-py, no agents)."""
    import asyncio

    async def lookup() -> int:
        from bosun.remote import protocol as P
        from bosun.remote.connect import ConnectOptions, connect
        from bosun.remote.presence import live_agents, pool_capacity

        nc = await connect(ConnectOptions.from_env(profile.base_url, name="bosun capacity"))
        try:
            kv = await nc.jetstream().key_value(P.AGENTS)
            return pool_capacity(await live_agents(kv), profile.model or "default")
        finally:
            await nc.close()

    try:
        capacity = asyncio.run(asyncio.wait_for(lookup(), CAPACITY_LOOKUP_S))
    except Exception:  # noqa: BLE001 - any failure means the pool's capacity is unknown; callers fall back
        return None
    return capacity or None
