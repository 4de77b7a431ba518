"""The dashboard's pages, rendered from the store and the run records: the runs list, plans, workers
and savings (one run's page is ``bosun.web.run_page``). Reads only; the two actions live in
``bosun.web.app`` and go through the engine."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bosun.core.states import shown_commit, shown_state
from bosun.engine.history import refresh
from bosun.engine.verdict import of_run
from bosun.store.db import Store
from bosun.store.history import RunFilter, distinct_values, list_runs
from bosun.store.run import Run
from bosun.web.html import (
    ago,
    duration,
    e,
    layout,
    money,
    prose,
    query,
    select,
    stamp,
    state_badge,
    tokens,
)
from bosun.web.svg import bar_chart, plan_graph
from bosun.web.verdicts import badge

PAGE_SIZE = 50


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
        f'<input type="search" name="q" value="{e(flt.text)}" placeholder="search title, prompt, paths, gates, findings, errors" '
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
        shown = shown_state(r["state"], r.get("merged_commit"), r.get("data"))
        commit = shown_commit(r["state"], r.get("merged_commit"), r.get("data"))
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
            f'<tr data-run="{e(r["id"])}" data-state="{e(shown)}"><td>{state_badge(shown)}'
            + (f'<div class="muted small mono">{e(commit[:8])}</div>' if commit else "") + '</td>'
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
        '<table class="runs run-list"><thead><tr><th>state</th><th>verdict</th><th>title</th><th>profile / CLI</th><th>caller</th><th>duration</th>'
        '<th>tokens</th><th>cost</th><th>proven</th><th>gates</th><th>started</th></tr></thead>'
        f'<tbody>{"".join(body)}{empty}</tbody></table><p class="pager">{" ".join(nav)}</p></div>'
    )


# -- plans ----------------------------------------------------------------------------------------


def plans_page(store: Store) -> str:
    from bosun.store.plans import PlanStore

    plans = PlanStore(store).list_plans(limit=200)
    rows = "".join(
        f'<tr><td>{state_badge(p["state"])}</td><td><a href="/plans/{e(p["id"])}">{e(p["title"])}</a>'
        f'<div class="muted small">{e(p["id"])}</div></td><td>{_plan_result(p)}</td>'
        f'<td class="muted">{ago(p["created_at"])}</td></tr>'
        for p in plans
    ) or '<tr><td colspan="4" class="muted">no plans yet (<code>bosun plan run plan.yaml</code>)</td></tr>'
    return layout("Plans", '<h1>Plans</h1><table class="runs"><thead><tr><th>state</th><th>title</th>'
                  f'<th>result</th><th>started</th></tr></thead><tbody>{rows}</tbody></table>',
                  active="plans", live="runs")


def _plan_result(plan: dict[str, Any]) -> str:
    """Where a plan's work is: the commit it landed as (its integration branch is deleted then), or
    its integration branch."""
    if plan.get("merged_commit"):
        return (f'landed on {e(plan["source_branch"])} as <code data-landed>{e(plan["merged_commit"][:12])}</code>')
    return f'on <code>{e(plan["integration_branch"])}</code>'


def _plan_error(err: Any) -> str:
    """A plan's error: its message and hint, and the end of a failing check's output."""
    if not isinstance(err, dict):
        return f'<div class="error">{prose(err)}</div>'
    out = err.get("output")
    return (f'<div class="error"><b>{e(err.get("code"))}</b>: {prose(err.get("message"))}'
            + (f'<div class="muted">{prose(err.get("hint"))}</div>' if err.get("hint") else "")
            + (f'<pre class="out">{e(out)}</pre>' if out else "") + "</div>")


def _integration(plan: dict[str, Any]) -> str:
    """The integration branch as it stands: deleted once the plan landed (or was aborted)."""
    from bosun.plans.integration import branch_head

    try:
        head = branch_head(Path(plan["repo"]), plan["integration_branch"])
    except Exception:  # noqa: BLE001 - a repository gone since: say what the store knows
        head = None
    where = f'<b>{e(plan["integration_branch"])}</b>'
    return f"integration branch {where}" + (f" @ {e(head[:12])}" if head else " (deleted)")


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
        + (f'<p class="ok" data-landed>{_plan_result(plan)}</p>' if plan.get("merged_commit") else "")
        + f'<p class="meta">{_integration(plan)} · source {e(plan["source_branch"])} · '
        f'current wave {e(plan["current_wave"])} · repo {e(plan["repo"])}</p>'
        + (_plan_error(err) if err else "")
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
    from bosun.engine.track_record import record_line, track_records

    records = track_records(store, settings.profiles if settings else {})
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
            f'<td>{cool}</td><td>{rate}</td><td class="num">{len(mine)}</td><td class="num">{money(cost)}</td>'
            f'<td class="small">{e(record_line(records[name]))}</td></tr>'
        )
    table = ('<div class="wide"><table class="runs"><thead><tr><th>profile</th><th>adapter</th><th>model</th><th>tier</th><th>CLI</th>'
             '<th>cooldown</th><th>recent success</th><th>runs (7d)</th><th>cost (7d)</th><th>track record</th></tr></thead>'
             f'<tbody>{"".join(rows) or "<tr><td colspan=10 class=muted>no profiles configured</td></tr>"}</tbody></table></div>')
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
                   ("saving", "s-save", [d["saving_usd"] for d in days])], unit="$"),
        bar_chart("per week: parent tokens saved (est.) and worker tokens", [w["week"].split("-")[-1] for w in weeks],
                  [("parent tokens saved", "s-save", [max(0, w["parent_estimated_saved_tokens"]) for w in weeks]),
                   ("worker tokens", "s-cost", [w["worker_tokens"] for w in weeks])]),
        bar_chart("by profile: worker cost and saving (USD)", [p["profile"] for p in profiles],
                  [("worker cost", "s-cost", [p["worker_cost_usd"] for p in profiles]),
                   ("saving", "s-save", [p["saving_usd"] for p in profiles])], unit="$"),
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
