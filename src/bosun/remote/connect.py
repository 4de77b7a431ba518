"""Connecting to the hub: auth and TLS passed through to ``nats.connect``, reconnects, and the
streams, consumer and buckets both sides need (created idempotently)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from bosun.core.errors import BadInput, BosunError
from bosun.remote import protocol as P


class RemoteUnavailable(BosunError):
    """The hub cannot be reached, or the optional dependency is missing."""


def require_nats() -> Any:
    try:
        import nats
    except ModuleNotFoundError:
        raise RemoteUnavailable(
            "remote workers need the nats-py package", "pip install 'bosun[remote]'", code="REMOTE_UNAVAILABLE"
        ) from None
    return nats


@dataclass
class ConnectOptions:
    """Everything ``nats.connect`` needs. Unset fields fall back to ``BOSUN_NATS_*`` variables."""

    url: str
    name: str = "bosun"
    creds: str | None = None  # a .creds file (JWT + nkey seed)
    nkey_seed: str | None = None  # a file holding an nkey seed
    user: str | None = None
    password: str | None = None
    token: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    @classmethod
    def from_env(cls, url: str | None, name: str = "bosun", **given: str | None) -> ConnectOptions:
        env = os.environ.get
        opts = cls(
            url=url or env("BOSUN_NATS_URL") or "",
            name=name,
            creds=given.get("creds") or env("BOSUN_NATS_CREDS"),
            nkey_seed=given.get("nkey_seed") or env("BOSUN_NATS_NKEY_SEED"),
            user=given.get("user") or env("BOSUN_NATS_USER"),
            password=env("BOSUN_NATS_PASSWORD"),  # never on a command line
            token=env("BOSUN_NATS_TOKEN"),
            tls_ca=given.get("tls_ca") or env("BOSUN_NATS_TLS_CA"),
            tls_cert=given.get("tls_cert") or env("BOSUN_NATS_TLS_CERT"),
            tls_key=given.get("tls_key") or env("BOSUN_NATS_TLS_KEY"),
        )
        if not opts.url:
            raise BadInput("no NATS server given", "pass --nats URL / --remote URL, or set remote = \"nats://...\" "
                           "in bosun.toml")
        return opts

    def kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "servers": [u.strip() for u in self.url.split(",") if u.strip()],
            "name": self.name,
            # Keep trying through a hub restart: JetStream keeps the tasks, leases and results.
            "max_reconnect_attempts": -1,
            "reconnect_time_wait": 0.5,
            "connect_timeout": 5,
            "allow_reconnect": True,
        }
        if self.creds:
            kw["user_credentials"] = self.creds
        if self.nkey_seed:
            kw["nkeys_seed"] = self.nkey_seed
        if self.user:
            kw["user"] = self.user
            kw["password"] = self.password or ""
        if self.token:
            kw["token"] = self.token
        if self.tls_ca or self.tls_cert or any(u.startswith("tls://") for u in kw["servers"]):
            import ssl

            ctx = ssl.create_default_context(cafile=self.tls_ca)
            if self.tls_cert:
                ctx.load_cert_chain(self.tls_cert, self.tls_key)
            kw["tls"] = ctx
        return kw


async def connect(opts: ConnectOptions, quiet: bool = True) -> Any:
    nats = require_nats()

    async def _ignore(*_: Any) -> None:  # reconnects are expected; the client logs nothing by default
        return None

    # Reconnects after a first connection never give up (the hub may restart), so the client would
    # also retry a first connection forever: bound that one.
    limit = float(os.environ.get("BOSUN_REMOTE_CONNECT_TIMEOUT_S") or 20)
    try:
        return await asyncio.wait_for(nats.connect(**opts.kwargs(), error_cb=_ignore, disconnected_cb=_ignore,
                                                   reconnected_cb=_ignore), limit)
    except Exception as exc:  # noqa: BLE001 - the client raises several unrelated types for "cannot connect"
        raise RemoteUnavailable(f"cannot connect to {opts.url}: {type(exc).__name__}: {exc}",
                                "check the URL, that nats-server runs with JetStream (-js), and the credentials",
                                code="REMOTE_UNAVAILABLE") from None


async def ensure_infra(js: Any, timing: P.Timing) -> dict[str, Any]:
    """Create (or open) every stream, consumer-independent bucket and the object store."""
    from nats.js.api import KeyValueConfig, ObjectStoreConfig, RetentionPolicy, StorageType, StreamConfig
    from nats.js.errors import BadRequestError

    async def stream(cfg: Any) -> None:
        try:
            await js.add_stream(cfg)
        except BadRequestError:
            pass  # exists with another configuration (an older bosun, an operator's tuning): use it

    await stream(StreamConfig(name=P.TASKS_STREAM, subjects=["bosun.task.>"],
                              retention=RetentionPolicy.WORK_QUEUE, storage=StorageType.FILE,
                              duplicate_window=120.0))
    await stream(StreamConfig(name=P.RESULTS_STREAM, subjects=["bosun.result.>"], max_age=7 * P.DAY_S,
                              storage=StorageType.FILE, duplicate_window=120.0))
    await stream(StreamConfig(
        name=P.DEAD_STREAM, storage=StorageType.FILE, max_age=7 * P.DAY_S,
        subjects=["bosun.dead.>", f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{P.TASKS_STREAM}.*"]))

    async def kv(bucket: str, ttl: float | None) -> Any:
        try:
            return await js.key_value(bucket)
        except Exception:  # noqa: BLE001 - nats-py raises many unrelated types for one failure
            return await js.create_key_value(KeyValueConfig(bucket=bucket, history=1, ttl=ttl,
                                                            storage=StorageType.FILE))

    out = {
        "leases": await kv(P.LEASES, timing.lease_ttl),
        "done": await kv(P.DONE, 7 * P.DAY_S),
        "cancels": await kv(P.CANCELS, 7 * P.DAY_S),
        "agents": await kv(P.AGENTS, max(3 * timing.heartbeat, 5.0)),
        "bases": await kv(P.BASES, 30 * P.DAY_S),
    }
    try:
        out["blobs"] = await js.object_store(P.BLOBS)
    except Exception:  # noqa: BLE001 - nats-py raises many unrelated types for one failure
        out["blobs"] = await js.create_object_store(P.BLOBS, config=ObjectStoreConfig(
            ttl=7 * P.DAY_S, storage=StorageType.FILE))
    return out


async def ensure_pool(js: Any, pool: str, timing: P.Timing) -> None:
    """The pool's durable pull consumer: acks explicit, redelivery with backoff, bounded deliveries."""
    from nats.js.api import AckPolicy, ConsumerConfig
    from nats.js.errors import BadRequestError

    cfg = ConsumerConfig(
        durable_name=P.durable_name(pool), filter_subject=P.task_subject(pool), ack_policy=AckPolicy.EXPLICIT,
        ack_wait=timing.ack_wait, max_deliver=timing.max_deliver, backoff=timing.backoff(),
        max_ack_pending=1000,
    )
    try:
        await js.add_consumer(P.TASKS_STREAM, cfg)
    except BadRequestError:
        pass  # the durable exists (another agent created it): its settings stand


def hub_unreachable(exc: BaseException) -> bool:
    """A lost or slow connection to the hub, worth retrying, as opposed to a missing or broken
    object, which no retry fixes."""
    from nats.errors import ConnectionClosedError, NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout

    return isinstance(exc, (NatsTimeout, ConnectionClosedError, NoRespondersError, asyncio.TimeoutError,
                            ConnectionError))
