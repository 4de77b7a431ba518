"""The coordinator's side of a remote run: ship the task, wait for the lease holder's result, apply it.

Called by the ``remote`` worker adapter inside an ordinary run, so preparation, verification, gates,
approval and integration around it are bosun's usual local ones. The task id and the published
message are kept in the run directory (``remote.json``) before anything is sent: a coordinator that
restarts resumes waiting for the same task (its result stays in JetStream) instead of sending a new one.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import socket
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bosun.core.fileio import write_bytes_atomic
from bosun.remote import bundles, leases
from bosun.remote import protocol as P
from bosun.remote.connect import ConnectOptions, connect, ensure_infra, ensure_pool, hub_unreachable
from bosun.workers.base import ErrorClass, Usage, WorkerContext, WorkerResult, ev_message, truncate

STATE = "remote.json"
RELAYED = ("message", "tool_call", "tool_result", "usage", "warning")
CANCEL_WAIT_S = 30.0  # after a cancel, how long the holder has to report its terminal result
GRACE_S = 120.0  # beyond the task's timeout, for queueing and shipping
BLOB_TIMEOUT_S = 300.0


def read_state(run_dir: Path) -> dict[str, Any]:
    try:
        doc = json.loads((run_dir / STATE).read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def write_state(run_dir: Path, doc: dict[str, Any]) -> None:
    write_bytes_atomic(run_dir / STATE, json.dumps(doc, indent=2).encode())


class Remote:
    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        self.pool = P.check_token(ctx.profile.model or "default", "pool")
        self.timing = P.Timing.from_env()
        self.opts = ConnectOptions.from_env(ctx.profile.base_url, name=f"bosun {ctx.run_id}")
        self._relaying: set[str] = set()

    def note(self, text: str) -> None:
        self.ctx.emit(ev_message(text, role="system"))

    async def run(self) -> WorkerResult:
        self.nc = await connect(self.opts)
        try:
            self.js = self.nc.jetstream()
            self.infra = await ensure_infra(self.js, self.timing)
            await ensure_pool(self.js, self.pool, self.timing)
            task_id, seq = await self.submit()
            return await self.wait(task_id, seq)
        finally:
            try:
                await self.nc.close()
            except Exception:  # noqa: BLE001 - any failure of the hub here means the object or the record is not there
                pass

    # -- submit ---------------------------------------------------------------------------------

    async def submit(self) -> tuple[str, int | None]:
        ctx = self.ctx
        state = read_state(ctx.run_dir)
        if state.get("task_id") and not state.get("outcome"):
            self.note(f"remote: resuming task {state['task_id']} (sent earlier; its result is kept by the hub)")
            await self._relay_events(state["task_id"])
            if not state.get("published"):
                await self._publish(state)
            return state["task_id"], state.get("seq")
        task_id = f"{ctx.run_id}-{os.urandom(3).hex()}"
        tree = await asyncio.to_thread(bundles.disk_tree, ctx.worktree, ctx.run_dir / "scratch")
        base, chain = await self.ship(tree)
        msg = P.TaskMsg(task_id=task_id, run_id=ctx.run_id, repo_key=self.repo_key, base=base, bundles=chain,
                        task=ctx.task.model_dump(mode="json"), prompt=ctx.prompt, pool=self.pool,
                        timeout_s=ctx.timeout_s, coordinator=socket.gethostname())
        state = {"task_id": task_id, "pool": self.pool, "url": self.opts.url, "message": asdict(msg),
                 "published": False, "sent_at": time.time()}
        write_state(ctx.run_dir, state)
        await self._relay_events(task_id)
        await self._publish(state)
        self.note(f"remote: task {task_id} sent to pool {self.pool!r} ({len(chain)} bundle(s) in its base chain)")
        return task_id, state.get("seq")

    async def _publish(self, state: dict[str, Any]) -> None:
        data = json.dumps(state["message"]).encode()
        # The message id makes a resend after a crash a no-op within the stream's duplicate window.
        ack = await self.js.publish(P.task_subject(self.pool), data, headers={"Nats-Msg-Id": state["task_id"]})
        state.update(published=True, seq=ack.seq)
        write_state(self.ctx.run_dir, state)

    @functools.cached_property
    def repo_key(self) -> str:
        return bundles.repo_key(Path(self.ctx.worktree))

    async def ship(self, tree: str) -> tuple[str, list[P.Bundle]]:
        """The ship commit for ``tree`` and its bundle chain; uploads only what the pool lacks.

        A plan's tasks start from the same tree at the same moment: one of them ships it while the
        others of this process wait, then find it known and reuse it (without the lock each would
        build, upload and have the agents fetch its own bundle of the same tree)."""
        lock = _ship_lock(f"{self.repo_key}.{tree}")
        await asyncio.to_thread(lock.acquire)
        try:
            return await self._ship(tree)
        finally:
            lock.release()

    async def _ship(self, tree: str) -> tuple[str, list[P.Bundle]]:
        kv, blobs, key = self.infra["bases"], self.infra["blobs"], self.repo_key
        known = await _kv_json(kv, f"{key}.{tree}")
        if known:
            chain = [P.Bundle(**b) for b in known["bundles"]]
            if await _has_blob(blobs, chain[-1].name):
                return str(known["commit"]), chain
        tip = await _kv_json(kv, f"{key}.tip")
        ship, parent, chain = await asyncio.to_thread(bundles.plan_ship, self.ctx.worktree, tree, tip)
        data = await asyncio.to_thread(bundles.make_bundle, self.ctx.worktree, ship, parent)
        # A unique name: coordinators shipping the same tree at once must not replace each other's
        # object while an agent reads it (the object store swaps chunks on a re-put).
        name = f"bundle-{ship}-{os.urandom(4).hex()}"
        await blobs.put(name, data)
        chain = [*chain, P.Bundle(name=name, tip=ship)]
        doc = json.dumps({"commit": ship, "bundles": [asdict(b) for b in chain]}).encode()
        await kv.put(f"{key}.{tree}", doc)
        await kv.put(f"{key}.tip", doc)
        self.note(f"remote: shipped base {ship[:12]} as a {len(data)} byte bundle"
                  + (f" on top of {parent[:12]}" if parent else " (full)"))
        return ship, chain

    # -- wait -----------------------------------------------------------------------------------

    async def _relay_events(self, task_id: str) -> None:
        """Relay the task's live events (best effort) from before it is published: an agent that
        claims it at once starts its worker, and sends the first events, within milliseconds."""
        if task_id in self._relaying:
            return
        ctx = self.ctx

        async def on_event(msg: Any) -> None:
            try:
                ev = json.loads(msg.data)
            except ValueError:
                return
            if isinstance(ev, dict) and ev.get("type") in RELAYED:
                ctx.emit({k: truncate(v) for k, v in ev.items() if k not in ("seq", "ts")})

        await self.nc.subscribe(P.events_subject(task_id), cb=on_event)
        self._relaying.add(task_id)

    async def wait(self, task_id: str, seq: int | None) -> WorkerResult:
        ctx = self.ctx
        notices: asyncio.Queue[Any] = asyncio.Queue()

        async def on_notice(msg: Any) -> None:
            await notices.put(msg.data)

        await self._relay_events(task_id)
        await _retrying(lambda: self.js.subscribe(P.result_subject(task_id), cb=on_notice, ordered_consumer=True))
        deadline = time.monotonic() + ctx.timeout_s + GRACE_S
        cancel_by: float | None = None
        next_dead_check = 0.0
        while True:
            try:
                try:
                    data = await asyncio.wait_for(notices.get(), timeout=0.25)
                except TimeoutError:
                    data = None
                outcome = await leases.recorded(self.infra["done"], task_id)
                if data is not None:
                    self._judge_notice(task_id, data, outcome)
                if outcome is not None:
                    return await self.accept(task_id, outcome, seq)
                now = time.monotonic()
                if cancel_by is None and ctx.should_stop is not None and ctx.should_stop():
                    cancel_by = now + CANCEL_WAIT_S
                    await self.cancel(task_id, "cancelled by the coordinator")
                elif cancel_by is None and now > deadline:
                    cancel_by = now + CANCEL_WAIT_S
                    await self.cancel(task_id, "timed out waiting for the pool")
                elif cancel_by is not None and now > cancel_by:
                    await self.settle_unheld(task_id, "cancelled", "the holder did not confirm the cancel")
                if now > next_dead_check and seq is not None:
                    next_dead_check = now + 5
                    if await self._exhausted(seq):
                        why = "the task ran out of deliveries (dead letter)"
                        await self.settle_unheld(task_id, "failed", why, force=True)
                        if await leases.recorded(self.infra["done"], task_id) is None:
                            # A holder that never finishes keeps the record open; the pool will not
                            # deliver the task again, so the run ends here (a late result is ignored).
                            self.note(f"remote: {why}; the task's lease is held but no result came")
                            return WorkerResult(status="failed", error_class=ErrorClass.permanent,
                                                error_message=why)
            except Exception as exc:  # the hub restarted or a reply was lost: the client reconnects
                if isinstance(exc, asyncio.CancelledError):
                    raise
                await asyncio.sleep(0.5)

    def _judge_notice(self, task_id: str, data: bytes, recorded: P.Outcome | None) -> None:
        try:
            notice = P.Outcome.decode(data)
        except (ValueError, TypeError):
            self.note("remote: ignored a malformed result notice")
            return
        if recorded is not None and (notice.agent, notice.revision, notice.patch) == (
                recorded.agent, recorded.revision, recorded.patch):
            return
        self.note(f"remote: ignored a result from {notice.agent!r} (token {notice.revision}) for {task_id}: "
                  "it is not the lease holder's recorded result (forged, duplicate or late)")

    async def cancel(self, task_id: str, why: str) -> None:
        """Ask the holder to stop; a task no agent holds is settled here, so there is always exactly one
        terminal result."""
        self.note(f"remote: {why}; cancelling task {task_id}")
        await self.infra["cancels"].put(task_id, b"cancel")
        await self.nc.publish(P.control_subject(task_id), json.dumps({"op": "cancel"}).encode())
        await self.settle_unheld(task_id, "cancelled", why)

    async def settle_unheld(self, task_id: str, status: str, why: str, force: bool = False) -> None:
        lease = await leases.claim(self.infra["leases"], task_id, "coordinator")
        if lease is None and force:
            holder = await leases.holder_of(self.infra["leases"], task_id)
            if holder and holder.get("holder") == "coordinator":
                lease = leases.Lease(self.infra["leases"], task_id, "coordinator", int(holder["revision"]))
        if lease is None:
            return  # an agent holds it: its terminal result will come
        outcome = P.Outcome(task_id=task_id, agent="coordinator", revision=0, status=status, error_message=why,
                            error_class="permanent" if status == "failed" else None)
        try:
            await leases.finish(lease, self.infra["done"], outcome)
        except leases.LeaseLost:
            pass

    async def _exhausted(self, seq: int) -> bool:
        subject = f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{P.TASKS_STREAM}.{P.durable_name(self.pool)}"
        try:
            msg = await self.js.get_last_msg(P.DEAD_STREAM, subject)
        except Exception:  # noqa: BLE001 - any failure of the hub here means the object or the record is not there
            return False
        try:
            return int(json.loads(msg.data).get("stream_seq", -1)) == seq
        except (ValueError, TypeError):
            return False

    # -- accept ---------------------------------------------------------------------------------

    async def accept(self, task_id: str, outcome: P.Outcome, seq: int | None) -> WorkerResult:
        ctx = self.ctx
        state = read_state(ctx.run_dir)
        refusal = await self._fence(task_id, outcome)
        if refusal:
            state["outcome"] = {"refused": refusal, **asdict(outcome)}
            write_state(ctx.run_dir, state)
            self.note("remote: " + refusal)
            return WorkerResult(status="failed", error_class=ErrorClass.permanent, error_message=refusal)
        self.note(f"remote: result {outcome.status} from agent {outcome.agent!r} (token {outcome.revision})")
        result = WorkerResult(
            status=outcome.status if outcome.status in P.TERMINAL else "failed",
            error_class=_error_class(outcome.error_class), error_message=outcome.error_message,
            final_text=outcome.final_text, usage=_usage(outcome.usage), steps=int(outcome.steps or 0),
            unenforced=[*outcome.unenforced[:20],
                        f"remote: the worker ran on agent {outcome.agent!r} under that machine's sandbox"],
        )
        if result.ok and outcome.patch:
            problem = await self._apply(outcome)
            if problem:
                result = WorkerResult(status="failed", error_class=ErrorClass.permanent, error_message=problem,
                                      usage=result.usage, steps=result.steps)
                self.note("remote: " + problem)
        state["outcome"] = asdict(outcome)
        write_state(ctx.run_dir, state)
        return result

    async def _fence(self, task_id: str, outcome: P.Outcome) -> str | None:
        """Why the recorded result is refused, or None. The lease at the recorded token must name the
        same holder (a record written by anyone else is refused); once the lease expired (a coordinator
        that was away for long) only the record stands."""
        if outcome.agent == "coordinator":
            return None
        holder = await leases.holder_of(self.infra["leases"], task_id)
        if holder is None:
            self.note("remote: the lease has expired; the recorded result is accepted on its record alone")
            return None
        if holder.get("holder") != outcome.agent or int(holder["revision"]) != outcome.revision:
            return (f"refused the result recorded for {task_id}: it names agent {outcome.agent!r} with token "
                    f"{outcome.revision}, but the lease is {holder.get('holder')!r} at {holder['revision']}")
        return None

    async def _apply(self, outcome: P.Outcome) -> str | None:
        from bosun.isolation.git import git

        blobs = self.infra["blobs"]
        name = outcome.patch
        assert name is not None
        try:
            info = await _retrying_while_away(lambda: blobs.get_info(name))
        except Exception:  # noqa: BLE001 - any failure of the hub here means the object or the record is not there
            return f"the returned change {outcome.patch!r} is not in the object store"
        if (info.size or 0) > P.MAX_PATCH_BYTES:
            return f"the returned change is {info.size} bytes, over the {P.MAX_PATCH_BYTES} byte limit"
        got = await _retrying_while_away(lambda: asyncio.wait_for(blobs.get(name), BLOB_TIMEOUT_S))
        data = got.data or b""
        if hashlib.sha256(data).hexdigest() != outcome.patch_sha256:
            return "the returned change does not match its recorded digest"
        # git apply refuses paths outside the tree, into .git and through symlinks; bosun's own view
        # then computes and verifies what actually landed on disk.
        res = await asyncio.to_thread(
            git, ["apply", "--binary", "--whitespace=nowarn", "-"], self.ctx.worktree, input=data, text=False,
            check=False)
        if res.returncode != 0:
            err = res.stderr.decode("utf-8", "replace") if isinstance(res.stderr, bytes) else res.stderr
            return "the returned change does not apply to the base: " + err.strip()[-500:]
        return None


_SHIP_LOCKS: dict[str, threading.Lock] = {}
_SHIP_LOCKS_GUARD = threading.Lock()


def _ship_lock(key: str) -> threading.Lock:
    with _SHIP_LOCKS_GUARD:
        return _SHIP_LOCKS.setdefault(key, threading.Lock())


async def _retrying(make: Any, attempts: int = 240) -> Any:
    """``await make()`` until it works: a hub restarting answers nothing for a while."""
    for _ in range(attempts - 1):
        try:
            return await make()
        except Exception:  # noqa: BLE001 - nats-py raises timeouts and its own types while reconnecting
            await asyncio.sleep(0.5)
    return await make()


async def _retrying_while_away(make: Any, attempts: int = 240) -> Any:
    """``await make()``, again while the hub is unreachable; any other failure is final."""
    for _ in range(attempts - 1):
        try:
            return await make()
        except Exception as exc:  # noqa: BLE001 - nats-py raises timeouts and its own types while reconnecting
            if not hub_unreachable(exc):
                raise
            await asyncio.sleep(0.5)
    return await make()


async def _kv_json(kv: Any, key: str) -> dict[str, Any] | None:
    from nats.js.errors import KeyNotFoundError

    try:
        entry = await kv.get(key)
    except KeyNotFoundError:
        return None
    try:
        doc = json.loads(entry.value or b"")
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


async def _has_blob(blobs: Any, name: str) -> bool:
    try:
        await blobs.get_info(name)
    except Exception:  # noqa: BLE001 - any failure of the hub here means the object or the record is not there
        return False
    return True


def _error_class(value: str | None) -> ErrorClass | None:
    try:
        return ErrorClass(value) if value else None
    except ValueError:
        return ErrorClass.permanent


def _usage(doc: dict[str, Any]) -> Usage:
    u = Usage.from_event(doc if isinstance(doc, dict) else {})
    try:
        u.cost_usd = float(doc["cost_usd"]) if isinstance(doc, dict) and doc.get("cost_usd") is not None else None
    except (TypeError, ValueError):
        u.cost_usd = None
    return u


def run_remote(ctx: WorkerContext) -> WorkerResult:
    return asyncio.run(Remote(ctx).run())
