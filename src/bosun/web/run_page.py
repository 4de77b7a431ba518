"""The dashboard's page of one run: verdict, actions, gates, diff, verification, cross-review,
timeline, receipt, contract and transitions, rendered from the store and the run's records. Reads
only; the two actions live in ``bosun.web.app`` and go through the engine."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bosun.core.fileio import read_json
from bosun.core.outcomes import command_passed
from bosun.core.paths import run_dir
from bosun.core.states import shown_state
from bosun.engine import review_record as rr
from bosun.store.db import Store
from bosun.store.run import Run, RunData
from bosun.web.highlight import highlight_diff
from bosun.web.html import duration, e, layout, money, pretty_json, prose, stamp, state_badge
from bosun.web.verdicts import approve_form, section

EVENTS_SHOWN = 400
DISCARDABLE = ("prepared", "working", "worked", "verified", "rejected", "approved", "failed", "blocked",
               "interrupted", "cancelled")


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
    review = rr.read(rid)
    shown = shown_state(run.state, run.merged_commit, data.to_dict())
    head = (
        f'<h1>{e(run.title)} {state_badge(shown)}</h1>' + section(verdict) +
        f'<p class="meta">profile <b>{e(run.profile or "-")}</b> ({e(run.profile_reason or "")}) · '
        f'repo {e(run.repo)} · branch {e(run.source_branch)} @ {e(run.base[:12])} · '
        f'worktree branch {e(run.branch)} · started {stamp(run.created_at)} UTC</p>'
    )
    head += _landing_notice(run) + _undo_notice(store, data)
    if err:
        head += (f'<div class="error"><b>{e(err.get("code"))}</b>: {prose(err.get("message"))}'
                 + (f'<div class="muted">{prose(err.get("hint"))}</div>' if err.get("hint") else "") + "</div>")
    gates = gates_doc.get("gates") or []
    red = [g for g in gates if not g.get("ok") and not g.get("waived")]
    # What a person reads first: the change and what verified it. Green gates are a count until opened;
    # red ones are open, and the receipt (what it cost) is open too.
    gates_title = (f"Gates ({len(red)} failed of {len(gates)})" if red else
                   f"Gates ({len(gates)} green)" if gates else "Gates")
    sections = [
        head,
        _actions(run, verdict),
        _section("Diff", _diff(rdir, run), open_=True),
        _section("Verification", _verification(rdir), open_=True),
        _section(gates_title, _gates(gates_doc), open_=bool(red), slug="gates"),
        *([_section("Cross-review", cross_review(review), open_=True)] if review is not None else []),
        _section("Receipt", _receipt(rdir, data), open_=True),
        _section("Timeline", _timeline(rid)),
        _section("Contract", f"<pre>{pretty_json(task)}</pre>"),
        _section("Transitions", _transitions(store, rid)),
    ]
    return (f'<div id="run" hx-get="/fragments/runs/{e(rid)}" hx-trigger="bosun:run from:body" hx-swap="outerHTML" '
            f'data-state="{e(shown)}" data-verdict="{e(verdict["outcome"] if verdict else "")}">'
            + "".join(sections) + "</div>")


def _landing_notice(run: Run) -> str:
    """Where the change landed (the commit, in sight), or why its landing was refused, or what will
    stop it (the user's uncommitted edits in files it touches)."""
    from bosun.engine.results import landing_warnings

    data = run.data
    if run.merged_commit:
        where = "the plan's branch" if data.plan_id else e(run.source_branch)
        return f'<p class="ok" data-landed>landed on {where} as commit <code>{e(run.merged_commit[:12])}</code></p>'
    out = ""
    refused = data.landing_refused if run.state == "approved" else None
    if refused:
        out += (f'<div class="error" data-landing-refused><b>landing refused</b> ({e(refused.get("code"))}): '
                f'{prose(refused.get("message"))}<div class="muted">{prose(refused.get("hint"))}</div></div>')
    for w in landing_warnings(run):
        out += (f'<p class="warn" data-warning="{e(w["code"])}"><b>{e(w["code"])}</b>: {prose(w["message"])}'
                f'<br><span class="muted">{prose(w["hint"])}</span></p>')
    return out


def _undo_notice(store: Store, data: RunData) -> str:
    """Reverted (by which commit, or which revert run), the run it reverts, the branches it was applied to."""
    notes = []
    rev, of = data.reverted or {}, data.revert_of or {}
    if rev.get("commit") and not rev.get("run"):
        notes.append(f'reverted on {e(rev["branch"])} by commit <code>{e(rev["commit"][:12])}</code>')
    elif rev.get("run"):
        other = store.get_run(rev["run"])
        merged = f', merged as <code>{e(other.merged_commit[:12])}</code>' if other and other.merged_commit else ""
        notes.append(f'reverted by run <a href="/runs/{e(rev["run"])}">{e(rev["run"])}</a>{merged}')
    if of.get("run"):
        notes.append(f'reverts run <a href="/runs/{e(of["run"])}">{e(of["run"])}</a>')
    notes += [f'applied to {e(a["branch"])} as <code>{e(a["commit"][:12])}</code>' for a in data.applied or []]
    return "".join(f'<p class="warn" data-undo>{n}</p>' for n in notes)


def _section(title: str, body: str, open_: bool = False, slug: str = "") -> str:
    slug = slug or title.lower()
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
    for g in sorted(gates, key=lambda g: 2 if g.get("ok") else 1 if g.get("waived") else 0):  # red ones first
        mark = ('<span class="warn">waived</span>' if g.get("waived") else
                '<span class="ok">ok</span>' if g.get("ok") else '<span class="bad">FAILED</span>')
        why = f'<div class="muted small">waived: {e(g.get("waiver_reason"))}</div>' if g.get("waived") else ""
        rows.append(f'<tr class="gate" data-gate="{e(g["code"])}"><td>{mark}</td><td><code>{e(g["code"])}</code></td>'
                    f'<td>{prose(g.get("detail", ""))}{why}</td></tr>')
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
            ok = command_passed(c)
            argv = " ".join(str(a) for a in (c.get("argv") or []))
            cmds.append(f'<div class="cmd"><div><span class="{"ok" if ok else "bad"}">{"PASS" if ok else "FAIL"}</span> '
                        f'<code>{e(argv)}</code> exit {e(c.get("exit_code"))} in {e(c.get("duration_s"))}s</div>'
                        f'<pre class="out">{e((c.get("output_tail") or "")[-6000:])}</pre></div>')
        parts.append(f"<h3>{e(title)}: {verdict}</h3>{''.join(cmds)}")
    return "".join(parts) or '<p class="muted">not verified yet</p>'


def cross_review(doc: dict[str, Any]) -> str:
    """Each round (reviewer, status, cost, time), its findings with the line each cites (marked when
    the tree has no such line), and what the worker's revise turn changed."""
    n = len(rr.rounds(doc))
    head = (f'<p class="meta">{n} round{"" if n == 1 else "s"} by <b>{e(rr.profile(doc))}</b> · '
            f'{money(rr.cost(doc))} · {e(rr.revised_text(doc))}</p>')
    return head + "".join(_review_round(entry) for entry in rr.rounds(doc))


def _review_round(entry: dict[str, Any]) -> str:
    found = rr.findings(entry)
    status = str(entry.get("status") or "?")
    mark = "ok" if status == "clean" else "warn" if status == "findings" else "bad"
    title = (f'<h3 data-round="{e(entry.get("round"))}">round {e(entry.get("round"))}: {e(entry.get("profile"))} '
             f'({e(entry.get("adapter") or "?")}) <span class="{mark}">{e(status)}</span> · '
             f'{e(rr.severity_text(found))} · {money(entry.get("cost_usd"))} · {duration(entry.get("duration_s"))}</h3>')
    parts = [title]
    if entry.get("summary"):
        parts.append(f'<p>{e(entry["summary"])}</p>')
    if entry.get("error"):
        parts.append(f'<div class="error">{e(entry["error"])}</div>')
    if found:
        parts.append(f'<table class="findings"><tbody>{"".join(_finding(f) for f in found)}</tbody></table>')
    rev = entry.get("revised")
    if isinstance(rev, dict):
        parts.append(f'<p class="muted small" data-revised>the worker revised: diff {e(rr.short(rev.get("diff_sha256_before")))} → '
                     f'{e(rr.short(rev.get("diff_sha256_after")))}, {e(rev.get("files_changed"))} file(s), '
                     f'{money(rev.get("cost_usd"))}</p>')
    return "".join(parts)


def _finding(f: dict[str, Any]) -> str:
    where = f'<code>{e(rr.where(f))}</code>'
    if f.get("citation"):
        where = f'<span class="bad" data-citation="invalid">{where}</span><div class="muted small">{e(f["citation"])}</div>'
    fix = f'<div class="muted small">fix: {e(f["suggested_fix"])}</div>' if f.get("suggested_fix") else ""
    return (f'<tr class="finding" data-severity="{e(f.get("severity"))}"><td><b>{e(f.get("severity"))}</b></td>'
            f'<td>{where}</td><td>{e(f.get("claim"))}{fix}</td></tr>')


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
            ("worker cost", money(data.cost_usd if data.cost_usd is not None else w.get("cost_usd"))),
            *([("cross-review cost", f'{money(review.get("cost_usd"))} ({review.get("rounds")} round(s) by '
                                     f'{review.get("profile")}); worker side {money(metrics.get("worker_side_cost_usd"))}')]
              if isinstance(review := metrics.get("review"), dict) else []),
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
