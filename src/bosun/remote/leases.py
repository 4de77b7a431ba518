"""Leases, the fencing token and the one terminal result.

An agent claims a task by *creating* its key in ``bosun_leases`` (only one create succeeds) and keeps
it by compare-and-set renewals; a holder that dies stops renewing and the bucket's TTL frees the
task for the next delivery. To finish, the holder compare-and-sets the lease once more (it fails if
the lease was lost: a late result is dropped there) and *creates* the task's key in ``bosun_done``
with that revision, the fencing token. ``bosun_done`` accepts one create per task: whatever races,
a task has exactly one terminal result, and a result notice is accepted only when it names the
holder and token recorded there.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from bosun.remote.protocol import Outcome


class LeaseLost(Exception):
    """The lease was taken over or expired: this holder must stop and publish nothing."""


@dataclass
class Lease:
    kv: Any
    task_id: str
    holder: str
    revision: int

    def _value(self, state: str) -> bytes:
        return json.dumps({"holder": self.holder, "state": state, "at": time.time()}).encode()

    async def renew(self, state: str = "running") -> int:
        from nats.js.errors import KeyWrongLastSequenceError

        try:
            self.revision = await self.kv.update(self.task_id, self._value(state), last=self.revision)
        except (KeyWrongLastSequenceError, Exception) as exc:
            if isinstance(exc, KeyWrongLastSequenceError) or "wrong last sequence" in str(exc):
                raise LeaseLost(self.task_id) from None
            raise
        return self.revision


async def claim(kv: Any, task_id: str, holder: str) -> Lease | None:
    """The lease, or None when someone holds it (or held it recently and has not expired)."""
    from nats.js.errors import KeyWrongLastSequenceError

    value = json.dumps({"holder": holder, "state": "running", "at": time.time()}).encode()
    try:
        rev = await kv.create(task_id, value)
    except KeyWrongLastSequenceError:
        return None
    return Lease(kv, task_id, holder, rev)


async def holder_of(kv: Any, task_id: str) -> dict[str, Any] | None:
    from nats.js.errors import KeyNotFoundError

    try:
        entry = await kv.get(task_id)
    except KeyNotFoundError:
        return None
    if not entry.value:
        return None
    try:
        doc = json.loads(entry.value)
    except ValueError:
        return None
    return {**doc, "revision": entry.revision} if isinstance(doc, dict) else None


async def finish(lease: Lease, done_kv: Any, outcome: Outcome) -> bool:
    """Fence and record the terminal result. False: someone else's result is already recorded, or
    the lease was lost (nothing is written then)."""
    from nats.js.errors import KeyWrongLastSequenceError

    outcome.revision = await lease.renew("done")
    outcome.agent = lease.holder
    try:
        await done_kv.create(lease.task_id, outcome.encode())
    except KeyWrongLastSequenceError:
        return False
    return True


async def recorded(done_kv: Any, task_id: str) -> Outcome | None:
    """The task's terminal result, if one is recorded."""
    from nats.js.errors import KeyNotFoundError

    try:
        entry = await done_kv.get(task_id)
    except KeyNotFoundError:
        return None
    if not entry.value:
        return None
    try:
        return Outcome.decode(entry.value)
    except (ValueError, TypeError):
        return None


async def cancel_requested(cancels_kv: Any, task_id: str) -> bool:
    from nats.js.errors import KeyNotFoundError

    try:
        entry = await cancels_kv.get(task_id)
    except KeyNotFoundError:
        return False
    return bool(entry.value)
