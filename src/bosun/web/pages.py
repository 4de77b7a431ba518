"""The dashboard's pages, rendered from the store and the run records. Reads only; the two actions
live in ``bosun.web.app`` and go through the engine."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bosun.core.fileio import read_json
from bosun.core.paths import run_dir
from bosun.core.states import shown_state
from bosun.engine.history import refresh
from bosun.engine.verdict import of_run
from bosun.store.db import Store
from bosun.store.history import RunFilter, distinct_values, list_runs
from bosun.store.run import Run, RunData
from bosun.web.highlight import highlight_diff
from bosun.web.html import (
    ago,
    duration,
    e,
    layout,
    money,
    pretty_json,
    query,
    select,
    stamp,
    state_badge,
    tokens,
)
from bosun.web.svg import bar_chart, plan_graph
from bosun.web.verdicts import approve_form, badge, section

PAGE_SIZE = 50
EVENTS_SHOWN = 400
DISCARDABLE = ("prepared", "working", "worked", "verified", "rejected", "approved", "failed", "blocked",
               "interrupted", "cancelled")


# -- runs -----------------------------------------------------------------------------------------


def run_filter(params: dict[str, str]) -> RunFilter:
    return RunFilter(text=params.get("q", "").strip(), state=params.get("state", ""), profile=params.get("profile", ""),
                     repo=params.get("repo", ""), caller=params.get("caller", ""), plan_id=params.get("plan", ""))


def runs_page(store: Store, params: dict[str, str]) -> str:
    flt = run_filter(params)
    table = runs_table(store, params)
    selects = "".join([
        select("state", distinct_values(store, "state"), flt.state, "state"),
        select("profile", distinct_values(store, "profile"), flt.profile, "profile"),
        select("caller", distinct_values(store, "caller"), flt.caller, "caller"),
        select("repo", distinct_values(store, "repo"), flt.repo, "repo"),
    ])
    form = (
        '<form id="filters" class="filters" action="/" method="get" hx-get="/fragments/runs" hx-target="#runs" '
        'hx-swap="outerHTML" hx-trigger="input changed delay:250ms from:input, change">'
        f'<input type="search" name="q" value="{e(flt.text)}" placeholder="search title, prompt, paths, gates, errors" '
        f'aria-label="search">{selects}<noscript><button>filter</button></noscript></form>'
    )
    return layout("Runs", f"<h1>Runs</h1>{form}{table}", active="runs", live="runs")


def runs_table(store: Store, params: dict[str, str]) -> str:
    refresh(store)
    flt = run_filter(params)
    page = max(1, _int(params.get("page"), 1))
    rows = list_runs(store, flt, limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE)
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    base = {k: params.get(k, "") for k in ("q", "state", "profile", "caller", "repo", "plan")}
    src = "/fragments/runs?" + query({**base, "page": page if page > 1 else ""})
    body = []
    for r in rows:
        f = r.get("facts") or {}
        shown = shown_state(r["state"], r.get("merged_commit"))
        gates = f"{f.get('gates_total', 0) - f.get('gates_failed', 0)}/{f.get('gates_total', 0)}" if f.get("gates_total") else "-"
        proven = '<span class="ok">yes</span>' if f.get("proven") else '<span class="muted">no</span>'
        tok = (f.get("input_tokens") or 0) + (f.get("output_tokens") or 0)
        live = (r.get("data") or {}).get("live_usage") or {}
        if not tok and live:
            tok = int(live.get("input_tokens") or 0) + int(live.get("output_tokens") or 0)
        dur = f.get("duration_s")
        if dur is None and r["state"] in ("prepared", "working", "worked"):
            dur = time.time() - r["created_at"]
        snip = f'<div class="snip">{e(r["_snippet"])}</div>' if r.get("_snippet") else ""
        body.append(
            f'<tr data-run="{e(r["id"])}" data-state="{e(shown)}"><td>{state_badge(shown)}</td>'
            f'<td>{badge(of_run(Run.from_row(r)))}</td>'
            f'<td><a href="/runs/{e(r["id"])}">{e(r["title"])}</a>{snip}<div class="muted small">{e(r["id"])}</div></td>'
            f'<td>{e(r["profile"] or "-")}<div class="muted small">{e(f.get("adapter") or "")}</div></td>'
            f'<td>{e(f.get("caller") or "-")}</td>'
            f'<td class="num">{duration(dur)}</td><td class="num">{tokens(tok)}</td>'
            f'<td class="num">{money(f.get("worker_cost_usd")) if f else "-"}</td><td>{proven}</td><td>{gates}</td>'
            f'<td class="muted">{ago(r["created_at"])}</td></tr>'
        )
    nav = []
    if page > 1:
        nav.append(f'<a href="/?{query({**base, "page": page - 1})}" rel="prev">newer</a>')
    nav.append(f'<span class="muted">page {page}</span>')
    if more:
        nav.append(f'<a href="/?{query({**base, "page": page + 1})}" rel="next">older</a>')
    empty = "" if rows else '<tr><td colspan="11" class="muted">no runs match</td></tr>'
    return (
        f'<div id="runs" hx-get="{e(src)}" hx-trigger="bosun:runs from:body" hx-swap="outerHTML">'
        '<table class="runs"><thead><tr><th>state</th><th>verdict</th><th>title</th><th>profile / CLI</th><th>caller</th><th>duration</th>'
        '<th>tokens</th><th>cost</th><th>proven</th><th>gates</th><th>started</th></tr></thead>'
        f'<tbody>{"".join(body)}{empty}</tbody></table><p class="pager">{" ".join(nav)}</p></div>'
    )


# -- one run --------------------------------------------------------------------------------------


def run_page(store: Store, run_id: str) -> str | None:
    run = store.get_run(run_id)
    if run is None:
        return None
    # The action result lives outside the live fragment, which is swapped again when the run changes.
    return layout(run.title, f'<p class="crumbs"><a href="/">runs</a> / {e(run_id)}</p>'
                  '<div id="action-result" role="status"></div>' + run_body(store, run),
                  active="runs", live=f"run:{run_id}")


def run_body(store: Store, run: Run) -> str:
    from bosun.engine.results import current_error
    from bosun.engine.verdict import decide

    rid = run.id
    rdir = run_dir(rid)
    data = run.data
    task = (read_json(rdir / "task.json", {}) or {}).get("task") or {}
    gates_doc = read_json(rdir / "gates.json", {}) or {}
    verdict = decide(run, task, gates_doc.get("gates", []), read_json(rdir / "verification.json", None))
    err = current_error(run)
    shown = shown_state(run.state, run.merged_commit)
    head = (
        f'<h1>{e(run.title)} {state_badge(shown)}</h1>' + section(verdict) +
        f'<p class="meta">profile <b>{e(run.profile or "-")}</b> ({e(run.profile_reason or "")}) · '
        f'repo {e(run.repo)} · branch {e(run.source_branch)} @ {e(run.base[:12])} · '
        f'worktree branch {e(run.branch)} · started {stamp(run.created_at)} UTC</p>'
    )
    head += _undo_notice(store, data)
    if err:
        head += (f'<div class="error"><b>{e(err.get("code"))}</b>: {e(err.get("message"))}'
                 + (f'<div class="muted">{e(err.get("hint"))}</div>' if err.get("hint") else "") + "</div>")
    sections = [
        head,
        _actions(run, verdict),
        _section("Gates", _gates(gates_doc), open_=True),
        _section("Diff", _diff(rdir, run), open_=True),
        _section("Verification", _verification(rdir), open_=True),
        _section("Timeline", _timeline(rid)),
        _section("Receipt", _receipt(rdir, data)),
        _section("Contract", f"<pre>{pretty_json(task)}</pre>"),
        _section("Transitions", _transitions(store, rid)),
    ]
    return (f'<div id="run" hx-get="/fragments/runs/{e(rid)}" hx-trigger="bosun:run from:body" hx-swap="outerHTML" '
            f'data-state="{e(shown)}" data-verdict="{e(verdict["outcome"] if verdict else "")}">'
            + "".join(sections) + "</div>")


def _undo_notice(store: Store, data: RunData) -> str:
    """Reverted (by which commit, or which revert run), the run it reverts, the branches it was applied to."""
    notes = []
    rev, of = data.reverted or {}, data.revert_of or {}
    if rev.get("commit"):
        notes.append(f'reverted on {e(rev["branch"])} by commit <code>{e(rev["commit"][:12])}</code>')
    elif rev.get("run"):
        other = store.get_run(rev["run"])
        merged = f', merged as <code>{e(other.merged_commit[:12])}</code>' if other and other.merged_commit else ""
        notes.append(f'reverted by run <a href="/runs/{e(rev["run"])}">{e(rev["run"])}</a>{merged}')
    if of.get("run"):
        notes.append(f'reverts run <a href="/runs/{e(of["run"])}">{e(of["run"])}</a>')
    notes += [f'applied to {e(a["branch"])} as <code>{e(a["commit"][:12])}</code>' for a in data.applied or []]
    return "".join(f'<p class="warn" data-undo>{n}</p>' for n in notes)


def _section(title: str, body: str, open_: bool = False) -> str:
    slug = title.lower()
    return f'<details class="sec" id="sec-{slug}"{" open" if open_ else ""}><summary>{e(title)}</summary>{body}</details>'


def _actions(run: Run, verdict: dict[str, Any] | None) -> str:
    rid = e(run.id)
    approve = approve_form(run.id, run.state, verdict)
    buttons = [approve] if approve else []
    if run.state in DISCARDABLE:
        buttons.append(f'<form method="post" action="/runs/{rid}/discard" hx-post="/runs/{rid}/discard" '
                       f'hx-target="#action-result" hx-swap="innerHTML" hx-confirm="Discard this run? Its worktree '
                       f'and branch are removed; the diff stays in the run directory.">'
                       f'<button class="discard">discard</button></form>')
    return f'<div class="actions">{"".join(buttons)}</div>' if buttons else ""


def _gates(doc: dict[str, Any]) -> str:
    gates = doc.get("gates") or []
    if not gates:
        return '<p class="muted">no gates checked yet</p>'
    rows = []
    for g in gates:
        mark = ('<span class="warn">waived</span>' if g.get("waived") else
                '<span class="ok">ok</span>' if g.get("ok") else '<span class="bad">FAILED</span>')
        why = f'<div class="muted small">waived: {e(g.get("waiver_reason"))}</div>' if g.get("waived") else ""
        rows.append(f'<tr class="gate" data-gate="{e(g["code"])}"><td>{mark}</td><td><code>{e(g["code"])}</code></td>'
                    f'<td>{e(g.get("detail", ""))}{why}</td></tr>')
    digest = doc.get("diff_sha256")
    return (f'<table class="gates"><tbody>{"".join(rows)}</tbody></table>'
            + (f'<p class="muted small">diff sha256 {e(digest)}</p>' if digest else ""))


def _diff(rdir: Path, run: Run) -> str:
    for name, note in (("diff.patch", "as verified"), ("final.patch", "saved before the worktree was removed")):
        path = rdir / name
        if path.exists():
            text = path.read_text("utf-8", "replace")
            if not text:
                return '<p class="muted">the worker changed nothing</p>'
            return f'<p class="muted small">{e(note)}</p><pre class="diff">{highlight_diff(text)}</pre>'
    if run.state in ("prepared", "working"):
        return '<p class="muted">the diff is recorded when the worker finishes</p>'
    return '<p class="muted">no diff recorded (`bosun verify` records it)</p>'


def _verification(rdir: Path) -> str:
    parts = []
    for name, title in (("verification.json", "in the worktree (before integration)"),
                        ("reverification.json", "on the merged result (after integration)")):
        doc = read_json(rdir / name, None)
        if doc is None:
            continue
        passed = doc.get("passed")
        verdict = ('<span class="ok">passed</span>' if passed else '<span class="muted">nothing ran</span>'
                   if passed is None else '<span class="bad">failed</span>')
        cmds = []
        for c in doc.get("commands", []):
            ok = c.get("exit_code") == 0 and not c.get("timed_out")
            argv = " ".join(str(a) for a in (c.get("argv") or []))
            cmds.append(f'<div class="cmd"><div><span class="{"ok" if ok else "bad"}">{"PASS" if ok else "FAIL"}</span> '
                        f'<code>{e(argv)}</code> exit {e(c.get("exit_code"))} in {e(c.get("duration_s"))}s</div>'
                        f'<pre class="out">{e((c.get("output_tail") or "")[-6000:])}</pre></div>')
        parts.append(f"<h3>{e(title)}: {verdict}</h3>{''.join(cmds)}")
    return "".join(parts) or '<p class="muted">not verified yet</p>'


def _timeline(run_id: str) -> str:
    path = run_dir(run_id) / "events.jsonl"
    try:
        lines = path.read_text("utf-8", "replace").splitlines()
    except OSError:
        return '<p class="muted">no worker events yet</p>'
    skipped = max(0, len(lines) - EVENTS_SHOWN)
    items = []
    for line in lines[skipped:]:
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = ev.get("type", "?")
        when = time.strftime("%H:%M:%S", time.gmtime(ev.get("ts") or 0))
        if kind == "message":
            body = f'<span class="role">{e(ev.get("role"))}</span> {e(ev.get("text"))}'
        elif kind == "tool_call":
            arg = ev.get("input")
            body = f'<b>{e(ev.get("tool"))}</b> <code>{e(json.dumps(arg) if not isinstance(arg, str) else arg)}</code>'
        elif kind == "tool_result":
            status = "denied" if ev.get("denied") else "ok" if ev.get("ok") else "failed"
            out = ev.get("output")
            body = f'<b>{e(ev.get("tool"))}</b> {status}' + (f'<pre class="out">{e(str(out)[:2000])}</pre>' if out else "")
        elif kind == "usage":
            cost = f', ${ev["cost_usd"]:.4f}' if isinstance(ev.get("cost_usd"), int | float) else ""
            body = f'{e(ev.get("input_tokens"))} in, {e(ev.get("output_tokens"))} out{cost}'
        elif kind == "error":
            body = f'<span class="bad">{e(ev.get("error_class") or "error")}</span> {e(ev.get("message"))}'
        else:
            body = e(json.dumps({k: v for k, v in ev.items() if k not in ("seq", "ts", "type")}))
        items.append(f'<li class="ev ev-{e(kind)}"><span class="t">{when}</span><span class="k">{e(kind)}</span>'
                     f'<span class="b">{body}</span></li>')
    note = f'<p class="muted small">{skipped} earlier events not shown (events.jsonl has all)</p>' if skipped else ""
    return note + f'<ol class="timeline">{"".join(items)}</ol>' if items else '<p class="muted">no worker events yet</p>'


def _receipt(rdir: Path, data: RunData) -> str:
    metrics = read_json(rdir / "metrics.json", None)
    usage = data.usage or data.live_usage
    if metrics is None and not usage:
        return '<p class="muted">no receipt yet (written when the run is reported)</p>'
    rows = []
    if metrics:
        w, p = metrics.get("worker") or {}, metrics.get("parent") or {}
        u = w.get("usage") or {}
        rows += [
            ("worker tokens", f'{u.get("input_tokens", 0)} in ({u.get("cached_input_tokens", 0)} cached), '
                              f'{u.get("output_tokens", 0)} out'),
            ("worker cost", money(w.get("cost_usd"))),
            ("parent would have spent (est.)", f'{p.get("parent_direct_tokens")} tokens, {money(p.get("parent_direct_cost_usd"))}'),
            ("parent reads from bosun", f'{p.get("parent_actual_tokens")} tokens (compression {p.get("compression")}x)'),
            ("saving after worker cost", money(p.get("saving_usd"))),
            ("duration", duration(metrics.get("duration_s"))),
        ]
    elif usage:
        rows.append(("worker tokens so far", f'{usage.get("input_tokens", 0)} in, {usage.get("output_tokens", 0)} out'))
    measured = data.parent_measured
    if measured is not None:
        rows.append(("parent tokens (measured)", json.dumps(measured)))
    return '<table class="kv">' + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows) + "</table>"


def _transitions(store: Store, run_id: str) -> str:
    rows = "".join(
        f'<tr><td>{stamp(t["at"])}</td><td>{e(t["from_state"] or "-")} → {e(t["to_state"])}</td>'
        f'<td class="muted">pid {e(t["pid"])}</td><td>{e(t["reason"])}</td></tr>'
        for t in store.transitions(run_id)
    )
    return f'<table class="transitions"><tbody>{rows}</tbody></table>'


# -- plans ----------------------------------------------------------------------------------------


def plans_page(store: Store) -> str:
    from bosun.store.plans import PlanStore

    plans = PlanStore(store).list_plans(limit=200)
    rows = "".join(
        f'<tr><td>{state_badge(p["state"])}</td><td><a href="/plans/{e(p["id"])}">{e(p["title"])}</a>'
        f'<div class="muted small">{e(p["id"])}</div></td><td>{e(p["integration_branch"])}</td>'
        f'<td class="muted">{ago(p["created_at"])}</td></tr>'
        for p in plans
    ) or '<tr><td colspan="4" class="muted">no plans yet (`bosun plan run plan.yaml`)</td></tr>'
    return layout("Plans", '<h1>Plans</h1><table class="runs"><thead><tr><th>state</th><th>title</th>'
                  f'<th>integration branch</th><th>started</th></tr></thead><tbody>{rows}</tbody></table>',
                  active="plans", live="runs")


def plan_page(store: Store, plan_id: str) -> str | None:
    body = plan_body(store, plan_id)
    if body is None:
        return None
    return layout("Plan " + plan_id, f'<p class="crumbs"><a href="/plans">plans</a> / {e(plan_id)}</p>{body}',
                  active="plans", live=f"plan:{plan_id}")


def plan_body(store: Store, plan_id: str) -> str | None:
    from bosun.store.plans import PlanStore

    ps = PlanStore(store)
    plan = ps.get_plan(plan_id)
    if plan is None:
        return None
    tasks = ps.tasks(plan_id)
    depends = {str(t.get("id")): [str(d) for d in (t.get("depends") or [])]
               for t in (plan["document"].get("tasks") or []) if isinstance(t, dict)}
    waves: dict[int, list[str]] = {}
    for t in tasks:
        waves.setdefault(int(t["wave"]), []).append(f'{t["task_id"]} ({t["state"]})')
    wave_list = "".join(f"<li>wave {w}: {e(', '.join(names))}</li>" for w, names in sorted(waves.items()))
    err = (plan.get("data") or {}).get("error")
    return (
        f'<div id="plan" hx-get="/fragments/plans/{e(plan_id)}" hx-trigger="bosun:plan from:body" hx-swap="outerHTML">'
        f'<h1>{e(plan["title"])} {state_badge(plan["state"])}</h1>'
        f'<p class="meta">integration branch <b>{e(plan["integration_branch"])}</b> · source {e(plan["source_branch"])} · '
        f'current wave {e(plan["current_wave"])} · repo {e(plan["repo"])}</p>'
        + (f'<div class="error">{e(err.get("message") if isinstance(err, dict) else err)}</div>' if err else "")
        + f'<div class="dag-wrap">{plan_graph(tasks, depends)}</div><h2>Waves</h2><ul>{wave_list}</ul>'
        + f'<p><a href="/?plan={e(plan_id)}">this plan\'s runs</a></p></div>'
    )


# -- workers --------------------------------------------------------------------------------------


def workers_page(store: Store, repo: Path, doctor: dict[str, Any] | None) -> str:
    from bosun.core.config import load_settings
    from bosun.core.errors import BosunError
    from bosun.store.history import facts_since

    try:
        settings = load_settings(repo)
        problem = ""
    except BosunError as exc:
        settings, problem = None, exc.message
    cooling = store.cooldowns()
    week = facts_since(store, time.time() - 7 * 86400)
    rows = []
    adapters = {a["adapter"]: a for a in (doctor or {}).get("adapters", [])}
    for name, prof in sorted((settings.profiles if settings else {}).items()):
        stats = store.profile_stats(name)
        cd = cooling.get(name)
        mine = [f for f in week if f["profile"] == name]
        cost = sum(f["worker_cost_usd"] for f in mine)
        a = adapters.get(prof.adapter)
        if doctor is None:
            cli = '<span class="muted">checking…</span>'
        elif prof.adapter in ("native", "command"):
            cli = "built in"
        elif a and a.get("binary"):
            cli = f'{e(a.get("version") or "?")}' + ("" if a.get("version_ok") is not False else
                                                       f' <span class="bad">(needs {e(a.get("min_version"))})</span>')
        else:
            cli = '<span class="bad">not installed</span>'
        rate = "-" if stats["success_rate"] is None else f'{stats["success_rate"]:.0%} of {stats["attempts"]}'
        cool = (f'<span class="warn">until {stamp(cd["until"])}</span><div class="muted small">{e(cd["reason"][:120])}</div>'
                if cd else "-")
        rows.append(
            f'<tr data-profile="{e(name)}"><td><b>{e(name)}</b>{" (default)" if settings and name == settings.default_profile else ""}</td>'
            f'<td>{e(prof.adapter)}</td><td>{e(prof.model or "-")}</td><td>{e(prof.tier)}</td><td>{cli}</td>'
            f'<td>{cool}</td><td>{rate}</td><td class="num">{len(mine)}</td><td class="num">{money(cost)}</td></tr>'
        )
    table = ('<table class="runs"><thead><tr><th>profile</th><th>adapter</th><th>model</th><th>tier</th><th>CLI</th>'
             '<th>cooldown</th><th>recent success</th><th>runs (7d)</th><th>cost (7d)</th></tr></thead>'
             f'<tbody>{"".join(rows) or "<tr><td colspan=9 class=muted>no profiles configured</td></tr>"}</tbody></table>')
    note = f'<div class="error">{e(problem)}</div>' if problem else ""
    return layout("Workers", f"<h1>Workers</h1><p class=\"meta\">profiles of {e(repo)}</p>{note}{table}",
                  active="workers", live="runs")


# -- savings --------------------------------------------------------------------------------------


def savings_page(store: Store, params: dict[str, str]) -> str:
    from bosun.apps.savings_report import report
    from bosun.engine.history import parse_date

    since_text = params.get("since", "30d")
    try:
        since = parse_date(since_text) if since_text else None
    except Exception:  # noqa: BLE001 - a bad date in the URL shows everything rather than an error page
        since, since_text = None, ""
    rep = report(store, since=since)
    t = rep["totals"]
    cards = [
        ("parent tokens saved (est.)", tokens(t["parent_estimated_saved_tokens"])),
        ("parent tokens measured", tokens(t["parent_measured_tokens"]) if t["parent_measured_tokens"] is not None else "-"),
        ("compression", f'{t["compression"]}x' if t["compression"] else "-"),
        ("worker cost", money(t["worker_cost_usd"])),
        ("saved after worker cost", money(t["saving_usd"])),
        ("time saved by parallel runs", duration(t["time_saved_by_parallelism_s"])),
        ("runs (proven)", f'{t["runs"]} ({t["proven"]})'),
    ]
    card_html = "".join(f'<div class="card"><div class="v">{e(v)}</div><div class="l">{e(k)}</div></div>' for k, v in cards)
    days = rep["per_day"]
    weeks = rep["per_week"]
    profiles = rep["by_profile"]
    charts = [
        bar_chart("per day: worker cost and saving (USD)", [d["day"][5:] for d in days],
                  [("worker cost", "s-cost", [d["worker_cost_usd"] for d in days]),
                   ("saving", "s-save", [max(0.0, d["saving_usd"]) for d in days])], unit="$"),
        bar_chart("per week: parent tokens saved (est.) and worker tokens", [w["week"].split("-")[-1] for w in weeks],
                  [("parent tokens saved", "s-save", [max(0, w["parent_estimated_saved_tokens"]) for w in weeks]),
                   ("worker tokens", "s-cost", [w["worker_tokens"] for w in weeks])]),
        bar_chart("by profile: worker cost and saving (USD)", [p["profile"] for p in profiles],
                  [("worker cost", "s-cost", [p["worker_cost_usd"] for p in profiles]),
                   ("saving", "s-save", [max(0.0, p["saving_usd"]) for p in profiles])], unit="$"),
    ]
    spans = "".join(f'<a href="/savings?since={s}" class="{"on" if s == since_text else ""}">{label}</a>'
                    for s, label in (("7d", "7 days"), ("30d", "30 days"), ("", "all time")))
    body = (
        f'<h1>Savings</h1><p class="spans">{spans} · <a href="/savings/card.svg?{query({"since": since_text})}">'
        'shareable card (SVG)</a></p>'
        f'<div class="cards">{card_html}</div>' + "".join(f'<div class="chart-box">{c}</div>' for c in charts)
        + f'<details class="sec"><summary>How these are computed</summary><pre>{e(rep["definitions"])}</pre></details>'
    )
    return layout("Savings", body, active="savings", live="runs")


def _int(value: str | None, default: int) -> int:
    try:
        return int(value or default)
    except ValueError:
        return default
