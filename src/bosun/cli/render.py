"""What the CLI writes: the one JSON object of ``--json``, errors and problems, exit codes by state,
and the human-readable text of a run."""

from __future__ import annotations

import json
import sys
import time

from bosun.core.errors import EXIT_ERROR, EXIT_NEEDS_REVIEW, EXIT_OK, EXIT_REJECTED
from bosun.core.quoting import quoted

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from bosun.core.errors import BosunError
    from bosun.store.db import Store
    from bosun.store.run import Run


def emit_json(obj: Any) -> None:
    """Print exactly one JSON object (credentials redacted): the whole stdout of a verb under --json."""
    from bosun.core.redaction import redact

    sys.stdout.write(json.dumps(redact(json.loads(json.dumps(obj, default=str)))) + "\n")
    sys.stdout.flush()


def exit_for_state(state: str, verdict: Mapping[str, Any] | None = None) -> int:
    """The exit code of a verb that ends with the run in ``state`` (README "Exit codes"): 7 while its
    verdict needs a person's review that nobody has given yet."""
    if state == "rejected":
        return EXIT_REJECTED
    if state in ("failed", "cancelled"):
        return EXIT_ERROR
    from bosun.engine.verdict import waits_for_a_person

    return EXIT_NEEDS_REVIEW if waits_for_a_person(verdict) else EXIT_OK


def print_error(err: BosunError, what: str = "") -> None:
    """An error on stderr with its hint; several problems each with its own (``what`` heads them)."""
    from bosun.core.redaction import redact_text

    problems = getattr(err, "problems", None)
    if problems and len(problems) > 1:
        print_problems(problems, what)
        return
    sys.stderr.write(f"bosun: error: {redact_text(err.message)}\n")
    if err.hint:
        sys.stderr.write(f"  hint: {redact_text(err.hint)}\n")


def print_problems(problems: list[Any], what: str = "") -> None:
    """Every problem with its own hint (a task, a plan, a pre-flight check: all of them at once)."""
    n = len(problems)
    sys.stderr.write(f"bosun: error: {what or 'found'} {n} problem{'s' if n != 1 else ''}:\n")
    for p in problems:
        sys.stderr.write(f"  {p.code}: {p.message}\n")
        if p.hint:
            sys.stderr.write(f"    hint: {p.hint}\n")


# -- runs as text ---------------------------------------------------------------------------------

_MARK = {True: "ok  ", False: "FAIL", None: "-   "}


def print_run(run: Run, store: Store | None = None) -> None:
    from bosun.engine.results import run_result

    r = run_result(run)
    out = sys.stdout.write
    out(f"run {r['id']}  [{shown_label(run)}]  {r['title']}\n")
    for line in [*verdict_lines(r), *cross_review_lines(r.get("cross_review"))]:
        out(line + "\n")
    out(f"  profile   {r['profile']}  ({r.get('profile_reason') or ''})\n")
    out(f"  source    {r['source_branch']} @ {r['base'][:12]}\n")
    if r["state"] == "cleaned":  # the worktree and its branch are gone; the record stays
        out(f"  worktree  removed (was {r['worktree']}, branch {r['branch']})\n")
    else:
        out(f"  worktree  {r['worktree']}  (branch {r['branch']})\n")
    sha, merged = r["diff_sha256"], r["merged_commit"]
    if sha:
        out(f"  diff      {r['files_changed']} file(s), sha256 {sha[:16]}…\n")
    if merged:
        out(f"  merged    {merged[:12]}\n")
        author_note = run.data.landing_author_note
        if author_note:
            out(f"  note      {author_note}\n")
    for line in undo_lines(r, store):
        out(line + "\n")
    v = r.get("verification")
    if v is not None:
        out(f"verification (run by bosun): {'passed' if v['passed'] else 'nothing checked' if v['passed'] is None else 'FAILED'}\n")
        for c in v["commands"]:
            ok = c["exit_code"] == 0
            out(f"  {_MARK[ok]} {' '.join(c['argv'])}  (exit {c['exit_code']}, {c['duration_s']}s)\n")
            if not ok and c.get("output_tail"):
                for line in c["output_tail"].strip().splitlines()[-8:]:
                    out(f"         {line}\n")
        if v.get("proof"):
            out(f"  proof: {v['proof']}\n")
    if r["gates"]:
        out("gates:\n")
        for g in r["gates"]:
            out(f"  {_MARK[g['ok']]} {g['code']:<20} {g['detail']}\n")
    u = r.get("usage")
    if u and not (u.get("input_tokens") or u.get("output_tokens")):
        out("tokens: not reported by the worker\n")
    elif u:
        cost = r.get("cost_usd")
        cost_s = f", ${cost:.4f}" if isinstance(cost, int | float) else ""
        out(f"tokens: {u.get('input_tokens', 0)} in ({u.get('cached_input_tokens', 0)} cached), "
            f"{u.get('output_tokens', 0)} out{cost_s}\n")
    s = r.get("savings")
    if s:
        out(f"parent: ~{s['parent_direct_tokens']} tokens to do it itself, {s['parent_actual_tokens']} to read "
            f"this result ({s['compression']}x); est. saving ${s['saving_usd']:.4f}\n")
    for rule in r.get("unenforced") or []:
        out(f"not enforced by this worker CLI: {rule}\n")
    e = r.get("error")
    if e:
        out(f"error: {e.get('code')}: {e.get('message')}\n")
        if e.get("hint"):
            out(f"  hint: {e['hint']}\n")
    final = r.get("final_message")
    if final:
        msg = final.strip().splitlines()
        out("worker said: " + quoted(msg[0] if msg else "", 200) + (" …" if len(msg) > 1 else "") + "\n")
    out(_next_step(r))


def print_confirmation(verb: str, run: Run) -> None:
    """What ``approve``, ``integrate`` and ``discard`` say on a terminal: what they did and what is
    next, in a line or two; ``bosun show`` has every gate (``--json`` the whole result)."""
    from bosun.core.paths import run_dir
    from bosun.engine.verdict import of_run, one_line

    rid = run.id
    if verb == "approve":
        ack = run.data.acknowledged
        said = f"approved {rid} ({one_line(of_run(run))}" + (f"; you acknowledged {', '.join(ack['codes'])})" if ack
                                                               else ")")
        nxt = f"next: bosun integrate {rid} lands it on {run.source_branch}"
    elif verb == "integrate":
        # Verified on the merged result: run again, or (an unmoved branch) the verified tree itself.
        how = " (verified on the merged result)" if run.data.reverified else ""
        gone = "; its worktree and branch are removed" if run.state == "cleaned" else ""
        said = f"landed {rid} on {run.source_branch} as commit {(run.merged_commit or '')[:12]}{how}{gone}"
        nxt = f"`bosun show {rid}` has the record; `bosun revert {rid}` undoes it"
    else:
        patch = run_dir(rid) / "final.patch"
        said = f"discarded {rid}" + (f"; its diff is kept in {patch}" if patch.is_file() else "")
        nxt = ""
    sys.stdout.write(said + "\n" + (nxt + "\n" if nxt else ""))


def undo_lines(r: Mapping[str, Any], store: Store | None) -> list[str]:
    """What happened to the run's change after it landed: reverted (by which commit, or by which
    revert run), the run this one reverts, and the branches it was applied to."""
    lines = []
    rev = r.get("reverted")
    if rev and rev.get("commit") and not rev.get("run"):
        lines.append(f"  reverted  on {rev['branch']} by commit {rev['commit'][:12]}")
    elif rev:
        other = store.get_run(rev["run"]) if store is not None else None
        landed = other.merged_commit if other is not None else None
        lines.append(f"  reverted  by run {rev['run']}, merged as {landed[:12]}" if landed else
                     f"  reverted  prepared as run {rev['run']} (not landed yet: bosun show {rev['run']})")
    of = r.get("revert_of")
    if of:
        lines.append(f"  reverts   run {of['run']} (commit {of['landing'][:12]})"
                     + (f"; conflicts marked in {', '.join(of['conflicts'][:5])}" if of.get("conflicts") else ""))
    lines.extend(f"  applied   to {a['branch']} as commit {a['commit'][:12]}"
                 + (" (re-verified)" if a.get("reverified") else "") for a in r.get("applied") or [])
    return lines


_REVIEW_WORDS = {
    "passed": "passed",
    "escalated": "ESCALATED",
    "unparseable": "UNPARSEABLE (no JSON report; not a pass)",
    "failed": "FAILED (the review turn did not finish; not a pass)",
    "skipped": "skipped (nothing was reviewed; not a pass)",
}


def verdict_lines(r: Mapping[str, Any]) -> list[str]:
    """What the parent must read first: the self-review's verdict, a read-only violation, and
    whether an answer's citations are backed."""
    lines = []
    v = r.get("verdict")
    if v:
        from bosun.engine.verdict import one_line

        lines.append(f"verdict: {one_line(v)}")
        lines.extend(f"  - {reason['code']}: {reason['sentence']}" for reason in v["reasons"][:12])
    refused = r.get("landing_refused")
    if refused:
        lines.append(f"landing refused: {refused['code']}: {refused['message']}")
    lines.extend(f"warning: {w['code']}: {w['message']}" for w in r.get("warnings") or [])
    review = r.get("review")
    if review:
        lines.append(f"self-review: {_REVIEW_WORDS.get(review['verdict'], review['verdict'])}"
                     + (f" - {review['summary']}" if review.get("summary") else ""))
        if review["verdict"] != "passed":
            lines.extend(f"  - {reason}" for reason in review.get("reasons", [])[:8])
    violation = r.get("read_only_violation")
    if violation:
        lines.append(f"read-only violation: the worker changed {violation.get('count')} file(s) "
                     f"({', '.join(violation.get('files', [])[:5])}); discarded, kept in {violation.get('patch')}; "
                     "this run can never be approved")
    cites = r.get("citations")
    if cites is not None:
        verified = r.get("answer_verified")
        if verified is None:
            lines.append("answer: cites no path:line; nothing could be checked")
        elif verified:
            lines.append(f"answer: verified - all {cites['checked']} citation(s) exist in the start tree")
        else:
            bad = cites["checked"] - cites["valid"]
            lines.append(f"answer: NOT verified - {bad} of {cites['checked']} citation(s) are not backed by the start tree")
            lines.extend(f"  - {c['cite']}: {c.get('problem')}" for c in cites.get("invalid", [])[:8])
    return lines


def cross_review_lines(doc: Mapping[str, Any] | None) -> list[str]:
    """The cross-review: rounds, reviewer and cost; what each earlier round sent back to the worker;
    the last round's findings, each with the problem of a citation the tree does not back."""
    if not doc or not doc.get("rounds"):
        return []
    from bosun.engine.review_record import where

    *earlier, last = doc["rounds"]
    n = len(doc["rounds"])
    stale = " (of an earlier diff: the run changed since it was reviewed)" if doc.get("of_current_diff") is False else ""
    lines = [f"cross-review: {n} round{'' if n == 1 else 's'} by {doc['profile']}, ${doc['cost_usd']:.4f}{stale}"]
    for entry in earlier:
        lines.append(f"  round {entry['round']}: {_round_words(entry)}" + (", the worker revised" if entry.get("revised") else ""))
    if last.get("findings"):
        lines.extend(f"  {f['severity']} {where(f)} {quoted(f['claim'], 300)}"
                     + (f" (citation not found: {f['citation']})" if f.get("citation") else "") for f in last["findings"])
    else:
        lines.append(f"  round {last['round']}: {_round_words(last)}")
    return lines


def _round_words(entry: Mapping[str, Any]) -> str:
    status, found = entry.get("status"), entry.get("findings") or []
    if status in ("findings", "clean"):
        return f"{len(found)} finding{'' if len(found) == 1 else 's'}" if found else "no findings"
    return f"{status}" + (f" ({entry['error']})" if entry.get("error") else "")


def _next_step(r: Mapping[str, Any]) -> str:
    from bosun.engine.verdict import waits_for_a_person

    blocked = r.get("landing_refused") or next(iter(r.get("warnings") or []), None)
    if blocked and r["state"] in ("verified", "approved") and blocked.get("hint"):
        return f"next: {blocked['hint']}\n"
    nxt = {
        "verified": (f"next: read the reasons and the diff (bosun diff {r['id']}); when you agree, bosun approve "
                     f"{r['id']} && bosun integrate {r['id']} lands it\n") if waits_for_a_person(r.get("verdict")) else
                    f"next: bosun diff {r['id']}; bosun approve {r['id']} && bosun integrate {r['id']}\n",
        "rejected": f"next: bosun work {r['id']} --resume \"fix ...\", or bosun discard {r['id']}\n",
        "approved": f"next: bosun integrate {r['id']}\n",
        "integrated": f"next: bosun cleanup {r['id']}\n",
        "prepared": f"next: bosun work {r['id']}\n",
        "worked": f"next: bosun verify {r['id']}\n",
        "interrupted": f"next: bosun recover {r['id']}\n",
    }
    return nxt.get(r["state"], "")


def print_list(runs: list[Run]) -> None:
    if not runs:
        sys.stdout.write("no runs yet; `bosun delegate task.yaml` starts one\n")
        return
    sys.stdout.write(f"{'RUN':<22}  {'STATE':<17} {'CREATED':<16}  {'PROFILE':<12} TITLE\n")
    for r in runs:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at))
        sys.stdout.write(f"{r.id:<22}  {shown_label(r):<17} {when}  {r.profile or '-':<12} {r.title[:60]}\n")


def shown_label(r: Run) -> str:
    """What the run is, as every surface says it: landed (its commit), reverted (the revert commit),
    discarded, landing refused... (the one rule: :func:`bosun.core.states.shown_state`)."""
    from bosun.core.states import shown_label as label

    return label(r.state, r.merged_commit, r.data.to_dict())


def print_events(run_id: str) -> None:
    from bosun.engine.record import read_events

    for ev in read_events(run_id):
        sys.stdout.write(describe_event(ev) + "\n")


def describe_event(ev: dict[str, Any]) -> str:
    t = ev.get("type")
    if t == "message":
        return f"[{ev.get('role', 'assistant')}] {str(ev.get('text', ''))[:300]}"
    if t == "tool_call":
        return f"-> {ev.get('tool')} {str(ev.get('input', ''))[:200]}"
    if t == "tool_result":
        status = "denied" if ev.get("denied") else "ok" if ev.get("ok") else "failed"
        return f"<- {ev.get('tool') or ''} {status} {str(ev.get('output', ''))[:160]}"
    if t == "usage":
        return f"   usage +{ev.get('input_tokens', 0)} in / +{ev.get('output_tokens', 0)} out"
    if t == "error":
        return f"!! {ev.get('error_class') or 'error'}: {ev.get('message')}"
    if t == "warning":
        return f"!  warning: {ev.get('message')}"
    if t == "session":
        return f"   session {ev.get('session_id')}"
    if t == "sandbox":
        parts = [f"{ev.get('mechanism') or 'none'}" + (f" (ABI {ev['abi']})" if ev.get("abi") else "")]
        parts += [f"{k} {ev[k]}" for k in ("network", "containment") if ev.get(k)]
        return "   sandbox: " + ", ".join(parts)
    if t == "contained":
        return f"   stopped {ev.get('count', 0)} process(es) the worker left running"
    if t == "command":
        import shlex

        return "   started: " + " ".join(shlex.quote(str(a)) for a in ev.get("argv") or [])[:300]
    # Any other event: its type and its plain fields, never a raw dict on a person's terminal.
    fields = ", ".join(f"{k} {v}" for k, v in ev.items() if k not in ("type", "seq", "ts") and isinstance(v, str | int | float))
    return f"   {t or 'event'}" + (f": {fields[:200]}" if fields else "")


def event_printer() -> Callable[[dict[str, Any]], None]:
    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    styles = {"message": "cyan", "tool_call": "yellow", "tool_result": "green", "error": "bold red", "usage": "dim",
              "warning": "yellow"}

    def on_event(ev: dict[str, Any]) -> None:
        console.print(describe_event(ev), style=styles.get(str(ev.get("type")), ""), markup=False)

    return on_event


def diffstat(diff_text: str) -> str:
    stats: dict[str, list[int]] = {}
    current = None
    for line in diff_text.splitlines():
        if line.startswith("diff --git "):
            current = line.split(" b/", 1)[-1]
            stats[current] = [0, 0]
        elif current and line.startswith("+") and not line.startswith("+++"):
            stats[current][0] += 1
        elif current and line.startswith("-") and not line.startswith("---"):
            stats[current][1] += 1
    lines = [f" {p} | +{a} -{d}" for p, (a, d) in stats.items()]
    lines.append(f" {len(stats)} file(s) changed")
    return "\n".join(lines) + "\n"


def print_check(out: dict[str, Any]) -> None:
    """`bosun check` and `delegate --dry-run`: what would happen, or every problem with its hint."""
    w = sys.stdout.write
    routing = out.get("routing")
    if out.get("title"):
        w(f"task: {out['title']}\n")
    if routing:
        w(f"profile: {routing['profile']} ({routing['reason']})\n")
    if out.get("base"):
        w(f"base: {out['base'][:12]} in {out['repo']}\n")
    review = out.get("review")
    if review:
        w(f"cross-review: {review['profile']}, up to {review['rounds']} round(s)"
          + (f", refusing open {review['block_on']} or worse" if review.get("block_on") else "") + "\n")
    repair = out.get("repair")
    if repair and (repair["rounds"] or len(repair["ladder"]) > 1):
        w(f"repair: up to {repair['rounds']} round(s) per profile for a change refused for the work"
          + (", then " + " -> ".join(repair["ladder"][1:]) if len(repair["ladder"]) > 1 else "") + "\n")
    worker = out.get("worker")
    if worker:
        w(f"worker: {worker['adapter']}" + (f", model {worker['model']}" if worker.get("model") else "") + "\n")
        if worker.get("argv"):
            import shlex

            w("  argv: " + " ".join(shlex.quote(a) for a in worker["argv"]) + "\n")
            w(f"  stdin: {worker['stdin']}\n")
        if worker.get("note"):
            w(f"  {worker['note']}\n")
    for warning in out.get("warnings") or []:
        w(f"warning: {warning['code']}: {warning['message']}\n")
        if warning.get("hint"):
            w(f"  hint: {warning['hint']}\n")
    if out["ok"]:
        w("dry run: nothing was created and nothing was run\n" if out.get("dry_run") else "task ok: it can run\n")
        return
    from bosun.core.errors import Problem

    print_problems([Problem(p["code"], p["message"], p["hint"]) for p in out["problems"]], "the task has")
