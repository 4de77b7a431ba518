"""The dashboard's ASGI application: routes, the live event stream, and the two actions.

A thin edge: pages read the store and the run records (``bosun.web.pages``); approve and discard
call the same engine functions as ``bosun approve`` and ``bosun discard``. Every request passes
``bosun.web.security.Guard`` first.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from bosun.core.errors import BosunError
from bosun.core.paths import check_run_id, run_dir
from bosun.store.db import Store, open_store
from bosun.web import pages, run_page
from bosun.web.html import e, layout, prose
from bosun.web.security import Guard, allowed_hosts

if TYPE_CHECKING:
    from bosun.engine.context import RunContext
    from bosun.store.run import Run

STATIC = Path(__file__).parent / "static"
POLL_S = 0.5
KEEPALIVE_S = 15.0


class Stores:
    """One store connection per thread (sqlite connections are not shared across threads)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self) -> Store:
        store = getattr(self._local, "store", None)
        if store is None:
            store = open_store()
            self._local.store = store
        return store


class Doctor:
    """CLI versions are slow to ask (one process each): gathered once in the background."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.result: dict[str, Any] | None = None
        self._started = False

    def start(self) -> None:
        if self._started:
            return
        self._started = True

        def work() -> None:
            from bosun.apps.doctor import gather

            try:
                self.result = gather(self.repo, None, False)
            except Exception:  # noqa: BLE001 - the workers page then says the CLIs are unknown
                self.result = {"adapters": []}

        threading.Thread(target=work, name="bosun-dash-doctor", daemon=True).start()


def create_app(token: str, port: int, repo: Path | None = None, stopping: threading.Event | None = None) -> Any:
    """The guarded app. Setting ``stopping`` ends the open event streams (the server is shutting down)."""
    stores = Stores()
    stopping = stopping or threading.Event()
    doctor = Doctor((repo or Path.cwd()).resolve())

    def params(request: Request) -> dict[str, str]:
        return dict(request.query_params)

    async def html(fn: Any, *args: Any) -> Response:
        body = await run_in_threadpool(fn, *args)
        if body is None:
            return HTMLResponse(layout("Not found", "<h1>Not found</h1>"), status_code=404)
        return HTMLResponse(body, headers={"cache-control": "no-store"})

    async def runs(request: Request) -> Response:
        return await html(lambda: pages.runs_page(stores.get(), params(request)))

    async def runs_fragment(request: Request) -> Response:
        resp = await html(lambda: pages.runs_table(stores.get(), params(request)))
        if request.headers.get("hx-trigger") == "filters":
            # A filter change: the address bar shows the page URL, not the fragment's.
            resp.headers["hx-replace-url"] = "/?" + request.url.query if request.url.query else "/"
        return resp

    async def run(request: Request) -> Response:
        rid = _run_id(request)
        if rid is None:
            return _not_found()
        return await html(run_page.run_page, stores.get(), rid)

    async def run_fragment(request: Request) -> Response:
        rid = _run_id(request)
        if rid is None:
            return _not_found()

        def body() -> str | None:
            store = stores.get()
            r = store.get_run(rid)
            return run_page.run_body(store, r) if r else None

        return await html(body)

    async def plans(request: Request) -> Response:
        return await html(lambda: pages.plans_page(stores.get()))

    async def plan(request: Request) -> Response:
        return await html(pages.plan_page, stores.get(), request.path_params["plan_id"])

    async def plan_fragment(request: Request) -> Response:
        return await html(pages.plan_body, stores.get(), request.path_params["plan_id"])

    async def workers(request: Request) -> Response:
        doctor.start()
        return await html(lambda: pages.workers_page(stores.get(), doctor.repo, doctor.result))

    async def savings(request: Request) -> Response:
        return await html(lambda: pages.savings_page(stores.get(), params(request)))

    async def card(request: Request) -> Response:
        from bosun.apps.savings_report import card_svg, report
        from bosun.engine.history import parse_date

        since_text = request.query_params.get("since", "")
        try:
            since = parse_date(since_text) if since_text else None
        except BosunError:
            since = None
        svg = await run_in_threadpool(lambda: card_svg(report(stores.get(), since=since)))
        return Response(svg, media_type="image/svg+xml")

    async def action(request: Request) -> Response:
        rid = _run_id(request)
        if rid is None:
            return _not_found()
        verb = request.path_params["verb"]
        from bosun.engine.context import RunContext
        from bosun.engine.lifecycle import approve
        from bosun.engine.teardown import discard

        if verb not in ("approve", "discard"):
            return _not_found()
        reviewed = _form_field(await request.body(), "reviewed")

        def call() -> Run:
            c = RunContext(stores.get())
            if verb == "discard":
                return discard(c, rid)
            return approve(c, rid, **_acknowledgment(c, rid, reviewed))

        try:
            result = await run_in_threadpool(call)
        except BosunError as err:
            body = (f'<div class="error"><b>{e(err.code)}</b>: {prose(err.message)}'
                    f'<div class="muted">{prose(err.hint)}</div></div>')
            return HTMLResponse(body, status_code=409 if err.exit_code != 2 else 400)
        body = f'<div class="done">{e(verb)}d: the run is now <b>{e(result.state)}</b></div>'
        if not request.headers.get("hx-request"):
            return Response(status_code=303, headers={"location": f"/runs/{rid}"})
        return HTMLResponse(body, headers={"hx-trigger": "bosun:run"})

    async def events(request: Request) -> Response:
        return StreamingResponse(_event_stream(request, stores, stopping), media_type="text/event-stream",
                                 headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    routes = [
        Route("/", runs),
        Route("/fragments/runs", runs_fragment),
        Route("/runs/{run_id}", run),
        Route("/fragments/runs/{run_id}", run_fragment),
        Route("/runs/{run_id}/{verb}", action, methods=["POST"]),
        Route("/plans", plans),
        Route("/plans/{plan_id}", plan),
        Route("/fragments/plans/{plan_id}", plan_fragment),
        Route("/workers", workers),
        Route("/savings", savings),
        Route("/savings/card.svg", card),
        Route("/events", events),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes)
    return Guard(app, token, allowed_hosts(port))


def _form_field(body: bytes, name: str) -> str:
    from urllib.parse import parse_qs

    values = parse_qs(body.decode("utf-8", "replace")).get(name) or [""]
    return values[0]


def _acknowledgment(c: RunContext, run_id: str, reviewed: str) -> dict[str, Any]:
    """The approve button is a person: it acknowledges a run's review reasons, but only those the run
    page showed them (the form's ``reviewed``); reasons the page did not show are refused, not assumed."""
    from bosun.core.errors import NeedsReview
    from bosun.engine.verdict import of_run
    from bosun.web.verdicts import acknowledgment

    verdict = of_run(c.store.require_run(run_id))
    ack, unseen = acknowledgment(verdict, reviewed)
    if unseen:
        raise NeedsReview(f"run {run_id} needs review, and this page did not show you every reason: "
                          + ", ".join(unseen), "reload the run page, read its reasons, then approve")
    return {"acknowledge": ack, "by": "person"} if ack else {}


def _run_id(request: Request) -> str | None:
    try:
        return check_run_id(request.path_params["run_id"])
    except BosunError:
        return None  # a malformed run id is answered 404, like an unknown one


def _not_found() -> Response:
    return PlainTextResponse("not found\n", status_code=404)


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, default=str)}\n\n".encode()


async def _event_stream(request: Request, stores: Stores, stopping: threading.Event) -> AsyncIterator[bytes]:
    """Server-sent events: ``runs`` when any run is added or changes, ``run`` when the followed run
    (``?run=ID``) changes or its worker writes an event, ``plan`` when the followed plan changes.
    ``?max=N`` ends the stream after N change events (for scripts and tests)."""
    from bosun.store.history import data_version
    from bosun.store.plans import PlanStore

    run_id = request.query_params.get("run") or ""
    plan_id = request.query_params.get("plan") or ""
    try:
        if run_id:
            check_run_id(run_id)
    except BosunError:
        run_id = ""
    try:
        limit = max(0, int(request.query_params.get("max") or 0))
    except ValueError:
        limit = 0
    sent = 0

    def snapshot() -> dict[str, Any]:
        store = stores.get()
        snap: dict[str, Any] = {"runs": list(data_version(store))}
        if run_id:
            r = store.get_run(run_id)
            events = run_dir(run_id) / "events.jsonl"
            size = events.stat().st_size if events.exists() else 0
            snap["run"] = [r.state if r else None, r.updated_at if r else None, size]
        if plan_id:
            snap["plan"] = [PlanStore(store).last_event_id(plan_id)]
        return snap

    last = await run_in_threadpool(snapshot)
    yield _sse("hello", {"following": {"run": run_id or None, "plan": plan_id or None}})
    idle = 0.0
    while not stopping.is_set():
        if await request.is_disconnected():
            return
        await asyncio.sleep(POLL_S)
        now = await run_in_threadpool(snapshot)
        changed = [k for k in now if now[k] != last.get(k)]
        last = now
        for key in changed:
            yield _sse(key, now[key])
            sent += 1
        if changed:
            idle = 0.0
        else:
            idle += POLL_S
            if idle >= KEEPALIVE_S:
                idle = 0.0
                yield b": keep-alive\n\n"
        if limit and sent >= limit:
            return
