"""Names and messages shared by the coordinator and the agents: streams, subjects, buckets, payloads.

Streams and buckets (created idempotently by whoever connects first):

==================== ========================== =====================================================
name                 kind                       holds
==================== ========================== =====================================================
BOSUN_TASKS          stream, work-queue         ``bosun.task.<pool>``: one message per task
BOSUN_RESULTS        stream, limits (7 days)    ``bosun.result.<task>``: "a result is ready" notices
BOSUN_DEAD           stream, limits (7 days)    ``bosun.dead.<pool>`` and the server's max-deliveries
                                                advisories for BOSUN_TASKS: tasks that ran out of tries
bosun_leases         KV, TTL                    ``<task>`` -> the agent working it (the fencing token
                                                is the entry's revision)
bosun_done           KV, 7 days                 ``<task>`` -> the one terminal result (created once)
bosun_cancel         KV, 7 days                 ``<task>`` -> a cancel request
bosun_agents         KV, TTL                    ``<agent>`` -> presence: profile, load, version
bosun_bases          KV, 30 days                ``<repo>.<tree>`` -> a shipped base and its bundle chain
bosun_blobs          object store, 7 days       base bundles and result patches
==================== ========================== =====================================================

Core (not persisted) subjects: ``bosun.control.<task>`` (cancel, prompt delivery to the agent),
``bosun.events.<task>`` (the worker's events, best effort, for live progress).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from bosun.core.errors import BadInput

PROTOCOL_VERSION = 1

TASKS_STREAM = "BOSUN_TASKS"
RESULTS_STREAM = "BOSUN_RESULTS"
DEAD_STREAM = "BOSUN_DEAD"
LEASES = "bosun_leases"
DONE = "bosun_done"
CANCELS = "bosun_cancel"
AGENTS = "bosun_agents"
BASES = "bosun_bases"
BLOBS = "bosun_blobs"

DAY_S = 24 * 3600.0
MAX_PATCH_BYTES = 64 * 1024 * 1024  # a returned change larger than this is refused unread
MAX_TASK_BYTES = 1024 * 1024

_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def check_token(value: str, what: str) -> str:
    """A subject token, KV key part or consumer name: letters, digits, ``-`` and ``_`` only."""
    if not _TOKEN.match(value or ""):
        raise BadInput(f"invalid {what} {value!r}", f"a {what} is 1-64 letters, digits, '-' or '_'")
    return value


def task_subject(pool: str) -> str:
    return f"bosun.task.{pool}"


def result_subject(task_id: str) -> str:
    return f"bosun.result.{task_id}"


def control_subject(task_id: str) -> str:
    return f"bosun.control.{task_id}"


def events_subject(task_id: str) -> str:
    return f"bosun.events.{task_id}"


def dead_subject(pool: str) -> str:
    return f"bosun.dead.{pool}"


def durable_name(pool: str) -> str:
    return f"pool-{pool}"


@dataclass
class Timing:
    """Seconds. Small values make tests fast; the defaults suit a real pool."""

    ack_wait: float = 30.0  # no in_progress() for this long: the task is redelivered
    lease_ttl: float = 30.0  # a lease not renewed for this long expires
    heartbeat: float = 5.0  # in_progress(), lease renewal, presence
    max_deliver: int = 5

    @classmethod
    def from_env(cls) -> Timing:
        t = cls()
        for name in ("ack_wait", "lease_ttl", "heartbeat"):
            raw = os.environ.get(f"BOSUN_REMOTE_{name.upper()}_S")
            if raw:
                setattr(t, name, float(raw))
        if os.environ.get("BOSUN_REMOTE_MAX_DELIVER"):
            t.max_deliver = int(os.environ["BOSUN_REMOTE_MAX_DELIVER"])
        return t

    def backoff(self) -> list[float]:
        """Redelivery delays, doubling from ack_wait, capped at 10 minutes (one per delivery)."""
        return [min(self.ack_wait * 2**i, 600.0) for i in range(self.max_deliver)]


@dataclass
class Bundle:
    name: str  # object name in BLOBS
    tip: str  # the commit the bundle brings


@dataclass
class TaskMsg:
    """What the coordinator asks of the pool. ``task`` is the contract as JSON (verify commands
    included for the worker's information; the agent never runs them)."""

    task_id: str
    run_id: str
    repo_key: str
    base: str  # the commit the worker starts from (a tree-only commit; no user history is shipped)
    bundles: list[Bundle]
    task: dict[str, Any]
    prompt: str
    pool: str = "default"
    timeout_s: float = 1800.0
    coordinator: str = ""
    version: int = PROTOCOL_VERSION

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decode(cls, data: bytes) -> TaskMsg:
        if len(data) > MAX_TASK_BYTES:
            raise ValueError("task message too large")
        doc = json.loads(data)
        bundles = [Bundle(name=str(b["name"]), tip=str(b["tip"])) for b in doc.pop("bundles")]
        msg = cls(bundles=bundles, **doc)
        check_token(msg.task_id, "task id")
        check_token(msg.repo_key, "repository key")
        if not re.fullmatch(r"[0-9a-f]{40,64}", msg.base) or any(
            not re.fullmatch(r"[0-9a-f]{40,64}", b.tip) for b in msg.bundles
        ):
            raise ValueError("base and bundle tips must be commit ids")
        return msg


@dataclass
class Outcome:
    """The one terminal result of a task, written once to ``bosun_done`` by the lease holder.

    ``revision`` is the lease revision of the holder's final compare-and-set: the fencing token
    a result notice must carry to be accepted."""

    task_id: str
    agent: str
    revision: int
    status: str  # ok | failed | timeout | cancelled
    patch: str | None = None  # object name in BLOBS (None: no change)
    patch_sha256: str | None = None
    error_class: str | None = None
    error_message: str | None = None
    final_text: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    profile: str = ""
    unenforced: list[str] = field(default_factory=list)

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decode(cls, data: bytes) -> Outcome:
        doc = json.loads(data)
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in doc.items() if k in known})


TERMINAL = ("ok", "failed", "timeout", "cancelled")
