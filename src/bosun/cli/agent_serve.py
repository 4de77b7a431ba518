"""``bosun agent serve``: pull tasks from the pool, run the worker step locally, return the change.

Per task: claim the lease (or hand the delivery back), materialize the base from its bundles, then
the ordinary local machinery runs the worker step only (``prepare`` a worktree at the base, ``work``
with the agent's profile, sandboxed, fallbacks and all; no verification, no baseline: that is the
coordinator's job), the change is computed by bosun's own view of the worktree, uploaded, fenced
(``leases.finish``) and announced once. While the worker runs, a heartbeat keeps the delivery
(``in_progress``), the lease and the cancel check alive. The local run is discarded afterwards.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bosun.remote import bundles, leases, presence
from bosun.remote import protocol as P
from bosun.remote.connect import ConnectOptions, connect, ensure_infra, ensure_pool, hub_unreachable

BLOB_TIMEOUT_S = 300.0
MATERIALIZE_RETRY_S = 120.0  # a hub restart is seconds; past this the task goes back to the pool


@dataclass
class AgentConfig:
    opts: ConnectOptions
    profile: str
    name: str
    pool: str = "default"
    concurrency: int = 1
    timing: P.Timing = field(default_factory=P.Timing.from_env)
    drain_timeout: float = 300.0  # SIGTERM: finish the current tasks this long, then hand them back
    cache: Path | None = None


@dataclass
class Running:
    task: P.TaskMsg
    msg: Any
    lease: leases.Lease
    cancel: threading.Event = field(default_factory=threading.Event)
    lost: bool = False
    handed_back: bool = False
    local_run: str | None = None


def log(text: str) -> None:
    sys.stderr.write(f"bosun agent: {text}\n")
    sys.stderr.flush()


class Agent:
    def __init__(self, cfg: AgentConfig) -> None:
        from bosun.core import paths

        self.cfg = cfg
        self.cache = cfg.cache or paths.bosun_home() / "agent" / cfg.name / "repos"
        self.running: dict[str, Running] = {}
        self.draining = asyncio.Event()
        self.repo_locks: dict[str, asyncio.Lock] = {}
        self.started = time.time()
        self.done_count = 0

    # -- the loop -------------------------------------------------------------------------------

    async def serve(self) -> None:
        from bosun import __version__

        self.version = __version__
        self.loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self.draining.set)
        self.nc = await connect(self.cfg.opts)
        self.js = self.nc.jetstream()
        self.infra = await ensure_infra(self.js, self.cfg.timing)
        await ensure_pool(self.js, self.cfg.pool, self.cfg.timing)
        self.sub = await self.js.pull_subscribe_bind(durable=P.durable_name(self.cfg.pool), stream=P.TASKS_STREAM)
        control = await self.nc.subscribe("bosun.control.*", cb=self.on_control)
        beat = asyncio.create_task(self.presence_loop())
        log(f"{self.cfg.name} serving pool {self.cfg.pool!r} with profile {self.cfg.profile!r} "
            f"(concurrency {self.cfg.concurrency})")
        slots = [asyncio.create_task(self.slot()) for _ in range(self.cfg.concurrency)]
        await self.draining.wait()
        log(f"draining: finishing {len(self.running)} task(s)")
        _, pending = await asyncio.wait(slots, timeout=self.cfg.drain_timeout)
        if pending:
            for run in list(self.running.values()):
                run.handed_back = True
                run.cancel.set()
                self._cancel_local(run)
            await asyncio.wait(pending, timeout=60)
        beat.cancel()
        await control.unsubscribe()
        await presence.withdraw(self.infra["agents"], self.cfg.name)
        # Every task is finished or handed back, and the pull subscription holds no messages of ours:
        # close (a drain of a pull subscription waits out its whole timeout).
        await self.nc.close()
        log("stopped")

    async def slot(self) -> None:
        from nats.errors import TimeoutError as FetchTimeout

        while not self.draining.is_set():
            try:
                msgs = await self.sub.fetch(1, timeout=1.0)
            except FetchTimeout:
                continue
            except Exception as exc:  # noqa: BLE001 - disconnected: the client reconnects; try again shortly
                log(f"fetch failed ({type(exc).__name__}); retrying")
                await asyncio.sleep(0.5)
                continue
            for msg in msgs:
                try:
                    await self.handle(msg)
                except Exception as exc:  # noqa: BLE001 - one bad task must not stop the agent; it will be redelivered
                    log(f"task failed in the agent: {type(exc).__name__}: {exc}")

    async def presence_loop(self) -> None:
        while True:
            status = {
                "pool": self.cfg.pool, "profile": self.cfg.profile, "load": len(self.running),
                "capacity": self.cfg.concurrency, "version": self.version, "host": socket.gethostname(),
                "pid": os.getpid(), "started": self.started, "draining": self.draining.is_set(),
                "tasks": sorted(self.running), "done": self.done_count, "seen": time.time(),
            }
            try:
                await presence.announce(self.infra["agents"], self.cfg.name, status)
            except Exception:  # noqa: BLE001 - the hub or the engine failed; the agent keeps serving
                pass  # the hub is away; the next beat tries again
            await asyncio.sleep(self.cfg.timing.heartbeat)

    async def on_control(self, msg: Any) -> None:
        task_id = msg.subject.rsplit(".", 1)[-1]
        run = self.running.get(task_id)
        if run is None:
            return
        try:
            op = json.loads(msg.data).get("op")
        except (ValueError, AttributeError):
            return
        if op == "cancel":
            log(f"{task_id}: cancel requested")
            run.cancel.set()
            await asyncio.to_thread(self._cancel_local, run)

    # -- one task -------------------------------------------------------------------------------

    async def handle(self, msg: Any) -> None:
        try:
            task = P.TaskMsg.decode(msg.data)
        except (ValueError, TypeError, KeyError) as exc:
            log(f"refusing a malformed task: {exc}")
            await self.js.publish(P.dead_subject(self.cfg.pool), json.dumps(
                {"reason": f"malformed task: {exc}", "agent": self.cfg.name}).encode())
            await msg.term()
            return
        if await leases.recorded(self.infra["done"], task.task_id):
            await msg.ack()  # finished already (a redelivery after the result was recorded)
            return
        lease = await leases.claim(self.infra["leases"], task.task_id, self.cfg.name)
        if lease is None:  # its holder may still be alive; look again once the lease could expire
            await msg.nak(delay=max(1.0, self.cfg.timing.lease_ttl / 2))
            return
        run = Running(task=task, msg=msg, lease=lease)
        self.running[task.task_id] = run
        log(f"{task.task_id}: claimed (lease revision {lease.revision}, delivery {msg.metadata.num_delivered})")
        beat = asyncio.create_task(self.heartbeat(run))
        try:
            if await leases.cancel_requested(self.infra["cancels"], task.task_id):
                run.cancel.set()
            outcome, diff = await self.work(run)
        finally:
            beat.cancel()
            self.running.pop(task.task_id, None)
        if run.lost:
            log(f"{task.task_id}: lease lost; result dropped")
            return
        if run.handed_back:
            await self._hand_back(run)
            return
        await self.publish(run, outcome, diff)

    async def work(self, run: Running) -> tuple[P.Outcome, bytes]:
        task = run.task
        if run.cancel.is_set():
            return self._outcome(task, "cancelled", error_message="cancelled before the worker started"), b""
        deadline = time.monotonic() + MATERIALIZE_RETRY_S
        attempt = 0
        while True:
            try:
                repo = await self.materialize(task)
                break
            except Exception as exc:  # noqa: BLE001 - the hub or the engine failed; the agent keeps serving
                if not hub_unreachable(exc):
                    return self._outcome(task, "failed", error_class="permanent",
                                         error_message=f"the agent could not materialize the base: {exc}"), b""
                if time.monotonic() >= deadline or run.cancel.is_set():
                    # The hub stayed away: the base was never this agent's to fail. Hand the task back
                    # so it is delivered again once the hub is up, here or elsewhere.
                    log(f"{task.task_id}: the hub stayed unreachable while fetching the base ({exc})")
                    run.handed_back = True
                    return self._outcome(task, "failed", error_class="transient",
                                         error_message=f"the hub was unreachable: {exc}"), b""
                attempt += 1
                log(f"{task.task_id}: fetching the base failed ({type(exc).__name__}); retrying")
                await asyncio.sleep(min(0.5 * attempt, 5.0))
        return await asyncio.to_thread(self.run_local, run, repo)

    async def materialize(self, task: P.TaskMsg) -> Path:
        lock = self.repo_locks.setdefault(task.repo_key, asyncio.Lock())
        async with lock:
            repo = await asyncio.to_thread(bundles.cache_repo, self.cache, task.repo_key)
            for b in task.bundles:
                if await asyncio.to_thread(bundles.has_commit, repo, b.tip):
                    continue  # a base this agent already holds is reused
                got = await asyncio.wait_for(self.infra["blobs"].get(b.name), BLOB_TIMEOUT_S)
                await asyncio.to_thread(bundles.fetch_bundle, repo, got.data)
            if not await asyncio.to_thread(bundles.has_commit, repo, task.base):
                raise RuntimeError(f"base {task.base[:12]} is not in the shipped bundles")
        return repo

    def run_local(self, run: Running, repo: Path) -> tuple[P.Outcome, bytes]:
        """The worker step through the ordinary engine, in this thread (it blocks)."""
        from bosun.core.contract import TaskContract
        from bosun.core.errors import BosunError
        from bosun.engine import lifecycle as L
        from bosun.engine.teardown import discard
        from bosun.store.db import open_store

        task = run.task
        ctx = L.RunContext(open_store(), {"baseline": "off"})
        try:
            contract = TaskContract.model_validate(task.task)
            # The worker starts from the shipped tree; the agent never verifies, so no verify commands
            # (their programs need not exist here) and no holdout (the tree already lacks those files).
            contract = contract.model_copy(update={"base": task.base, "verify": [], "holdout": []})
            local = L.prepare(ctx, contract, repo, self.cfg.profile, wait=True, carry_uncommitted=False)
        except BosunError as exc:
            return self._outcome(task, "failed", error_class="permanent",
                                 error_message=f"the agent could not prepare the task: {exc.message}"), b""
        run.local_run = local.id
        if run.cancel.is_set():
            self._cancel_local(run)

        def relay(ev: dict[str, Any]) -> None:
            data = json.dumps(ev, default=str).encode()
            asyncio.run_coroutine_threadsafe(self.nc.publish(P.events_subject(task.task_id), data), self.loop)

        try:
            row = L.work(ctx, local.id, on_event=relay)
        except BosunError:
            row = ctx.store.require_run(local.id)
        worker = row.data.worker or {}
        status = worker.get("status") or ("cancelled" if row.state == "cancelled" else "failed")
        if run.cancel.is_set() and status != "ok":
            status = "cancelled"
        diff = L.read_run_change(row).diff if status == "ok" else b""
        outcome = self._outcome(
            task, status, error_class=worker.get("error_class"), error_message=worker.get("error_message"),
            final_text=worker.get("final_text"), usage=worker.get("usage") or {}, steps=int(worker.get("steps") or 0),
            profile=row.profile or self.cfg.profile, unenforced=list(worker.get("unenforced") or []),
        )
        try:
            discard(ctx, local.id)
        except BosunError:
            pass  # the local copy is only the agent's; a later `bosun list` shows it
        return outcome, diff

    def _outcome(self, task: P.TaskMsg, status: str, **kw: Any) -> P.Outcome:
        return P.Outcome(task_id=task.task_id, agent=self.cfg.name, revision=0, status=status, **kw)

    def _cancel_local(self, run: Running) -> None:
        if not run.local_run:
            return
        from bosun.engine.teardown import request_cancel
        from bosun.store.db import open_store

        try:
            request_cancel(open_store(), run.local_run)
        except Exception:  # noqa: BLE001 - the hub or the engine failed; the agent keeps serving
            pass

    async def heartbeat(self, run: Running) -> None:
        period = self.cfg.timing.heartbeat
        while True:
            await asyncio.sleep(period)
            try:
                await run.msg.in_progress()
                await run.lease.renew()
                if not run.cancel.is_set() and await leases.cancel_requested(self.infra["cancels"], run.task.task_id):
                    run.cancel.set()
                if run.cancel.is_set():
                    await asyncio.to_thread(self._cancel_local, run)
            except leases.LeaseLost:
                run.lost = True
                run.cancel.set()
                await asyncio.to_thread(self._cancel_local, run)
                return
            except Exception as exc:  # noqa: BLE001 - the hub is away: keep the worker going, try again next beat
                log(f"{run.task.task_id}: heartbeat failed ({type(exc).__name__})")

    async def publish(self, run: Running, outcome: P.Outcome, diff: bytes) -> None:
        task_id = run.task.task_id
        for attempt in range(60):  # through a hub restart: the result must not be lost to a blip
            try:
                if diff and outcome.patch is None:
                    name = f"patch-{task_id}-{run.lease.revision}"
                    await self.infra["blobs"].put(name, diff)
                    outcome.patch, outcome.patch_sha256 = name, hashlib.sha256(diff).hexdigest()
                recorded = await leases.finish(run.lease, self.infra["done"], outcome)
                if recorded:
                    await self.js.publish(P.result_subject(task_id), outcome.encode(),
                                          headers={"Nats-Msg-Id": f"{task_id}:{outcome.agent}:{outcome.revision}"})
                    self.done_count += 1
                    log(f"{task_id}: result {outcome.status} published (token {outcome.revision})")
                else:
                    log(f"{task_id}: a result was already recorded; this one is dropped")
                await run.msg.ack()
                return
            except leases.LeaseLost:
                log(f"{task_id}: lease lost before the result was recorded; dropped")
                return
            except Exception as exc:  # noqa: BLE001 - the hub or the engine failed; the agent keeps serving
                log(f"{task_id}: publishing the result failed ({type(exc).__name__}: {exc}); retrying")
                await asyncio.sleep(min(0.5 * (attempt + 1), 5.0))

    async def _hand_back(self, run: Running) -> None:
        """SIGTERM drain ran out of time: free the lease and let another agent take the task now."""
        try:
            await self.infra["leases"].delete(run.task.task_id, last=run.lease.revision)
        except Exception:  # noqa: BLE001 - the hub or the engine failed; the agent keeps serving
            pass  # expired or taken already: the TTL frees it
        try:
            await run.msg.nak()
        except Exception:  # noqa: BLE001 - the hub or the engine failed; the agent keeps serving
            pass
        log(f"{run.task.task_id}: handed back to the pool")


def serve(cfg: AgentConfig) -> int:
    asyncio.run(Agent(cfg).serve())
    return 0


def supervise(argv: list[str], max_backoff: float = 60.0) -> int:
    """Run ``argv`` (the agent without --supervise) and restart it when it dies, with exponential
    backoff (1 s doubling to ``max_backoff``; reset after a minute of healthy running). SIGTERM is
    passed on and ends supervision once the agent has drained. A stop is checked before every restart:
    one that comes while waiting to restart ends the supervisor there, and one that comes while an
    agent starts is passed on to it."""
    import subprocess

    # Plain values, set by the handler: a lock taken in a signal handler can deadlock the main thread.
    stopping: dict[str, Any] = {"sig": None, "p": None}

    def forward(sig: int, _frame: Any) -> None:
        stopping["sig"] = sig
        child = stopping["p"]
        if child is not None and child.poll() is None:
            child.send_signal(sig)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    delay = 1.0
    while True:
        began = time.monotonic()
        child = stopping["p"] = subprocess.Popen(argv)
        if stopping["sig"] is not None and child.poll() is None:
            child.send_signal(stopping["sig"])  # the stop came while it started: it drains and exits
        code = child.wait()
        if stopping["sig"] is not None:
            return code
        if time.monotonic() - began > 60:
            delay = 1.0
        log(f"agent exited with {code}; restarting in {delay:.0f} s")
        if _stopped_within(delay, stopping):
            log("stopped while waiting to restart the agent")
            return 0
        delay = min(delay * 2, max_backoff)


def _stopped_within(seconds: float, stopping: dict[str, Any]) -> bool:
    """Wait ``seconds`` unless a stop comes first (time.sleep goes on sleeping after a signal's handler
    has run, so the wait is cut in short sleeps that look at the stop)."""
    deadline = time.monotonic() + seconds
    while stopping["sig"] is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(left, 0.05))
    return True
