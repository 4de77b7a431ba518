"""The ``remote`` adapter: the worker step runs on an agent of a NATS JetStream pool.

The profile's ``base_url`` is the hub (``nats://host:4222``) and its ``model`` names the pool. Only
the worker step leaves the machine: bosun prepared the worktree, and verifies, gates, approves and
integrates the returned change here exactly as for a local worker. See bosun.remote and docs/remote.md.
"""

from __future__ import annotations

from bosun.config import Profile
from bosun.workers.base import WorkerContext, WorkerInfo, WorkerResult


class RemoteWorker:
    name = "remote"

    def run(self, ctx: WorkerContext) -> WorkerResult:
        from bosun.errors import BosunError
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
