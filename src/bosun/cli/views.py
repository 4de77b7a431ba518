"""Text views of what doctor, workers, models and the plan verbs return (``--json`` never comes here)."""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the read-only verbs avoid
if TYPE_CHECKING:
    from typing import Any


def print_doctor(report: dict[str, Any]) -> None:
    """`bosun doctor`: git, config, sandbox, each adapter and each profile."""
    out = sys.stdout.write
    out(f"git: {report['git'] or 'NOT FOUND (bosun needs git)'}\n")
    if report["config_error"]:
        out(f"config: ERROR {report['config_error']['message']}\n  hint: {report['config_error']['hint']}\n")
    out(describe_sandbox(report["sandbox"]))
    out("adapters:\n")
    used = {p["adapter"] for p in report["profiles"]}
    for a in report["adapters"]:
        if not a.get("available"):
            out(f"  {a['adapter']:<9} not available in this build\n")
            continue
        if a.get("cli_found") is None:
            out(f"  {a['adapter']:<9} built in\n")
        elif a["cli_found"]:
            warn = "" if a.get("version_ok") is not False else f"  (older than the minimum {a['min_version']})"
            out(f"  {a['adapter']:<9} {a['binary']} {a.get('version') or '?'}{warn}\n")
        elif a.get("min_version"):
            out(f"  {a['adapter']:<9} CLI not found (supported from {a['min_version']})\n")
            continue  # what a CLI that is not installed cannot enforce is noise
        elif a["adapter"] not in used:  # no CLI of its own (remote: a NATS pool), and no profile needs it
            out(f"  {a['adapter']:<9} not used: no profile uses it\n")
            continue
        else:  # no CLI of its own to find, and a profile uses it: say what it needs
            need = (a.get("problems") or ["not set up"])[0]
            out(f"  {a['adapter']:<9} not set up: {need}\n")
            continue
        for rule in a.get("cannot_enforce", []):
            out(f"            cannot enforce: {rule}\n")
    if not report["profiles"] and not report["config_error"]:
        out("profiles: none configured; add [profiles.NAME] to bosun.toml (see README)\n")
    for p in report["profiles"]:
        out(f"profile {p['profile']} ({p['adapter']}{', ' + p['model'] if p.get('model') else ''}): "
            f"{'usable' if p['usable'] else 'NOT usable'}\n")
        for prob in p.get("problems", []):
            out(f"  problem: {prob}\n")
        if p.get("binary"):
            ver = f" {p['version']}" if p.get("version") else ""
            out(f"  cli: {p['binary']}{ver}" + (f" (min {p['min_version']})" if p.get("min_version") else "") + "\n")
    for warning in (report.get("skills") or {}).get("warnings", []):
        out(f"skill: warning: {warning}\n")


def describe_sandbox(sb: dict[str, Any]) -> str:
    mechanism = {"namespaces": f"bubblewrap namespaces + Landlock ABI {sb['abi']}",
                 "landlock": f"Landlock ABI {sb['abi']} alone (no user namespaces or no bwrap)",
                 "none": "none: the kernel has no Landlock and bwrap cannot run here"}[sb["mechanism"]]
    if sb["mechanism"] != "none" and not sb["enforced"]:
        return f"sandbox ({sb['setting']}): off by setting (this machine could enforce {mechanism})\n"
    lines = [f"sandbox ({sb['setting'] or 'auto'}): {mechanism}"]
    lines += [f"  {name.replace('_', ' ')}: {text}" for name, text in sb.get("held", {}).items()]
    if sb.get("verify", {}).get("network"):
        lines.append(f"  verify commands' network: {sb['verify']['network']}")
    if not sb["ok"]:
        lines.append("  problem: sandbox = \"required\" and this machine cannot enforce " + "; ".join(sb["missing"]))
    return "\n".join(lines) + "\n"


def print_workers(rows: list[dict[str, Any]]) -> None:
    """`bosun workers`: one line a profile."""
    if rows:
        sys.stdout.write(f"{'PROFILE':<14} {'ADAPTER':<9} {'TIER':<9} {'STRENGTHS':<16} RECENT SUCCESS\n")
    for r in rows:
        note = ""
        if r["cooldown_until"]:
            note = f"  cooldown {int(r['cooldown_until'] - time.time())}s ({r['cooldown_reason'][:60]})"
        rate = "-" if r["success_rate"] is None else f"{r['success_rate']:.0%} of {r['recent_attempts']}"
        out = f"{r['profile']:<14} {r['adapter']:<9} {r['tier']:<9} {','.join(r['strengths']) or '-':<16} {rate}{note}"
        sys.stdout.write(out + ("  (default)" if r["default"] else "") + "\n")
        if r.get("record"):
            from bosun.engine.track_record import record_line

            sys.stdout.write(f"  record: {record_line(r['record'])}\n")
    if not rows:
        sys.stdout.write("no profiles configured\n")


def print_catalog(doc: dict[str, Any]) -> None:
    """`bosun models`: each profile's catalog."""
    out = sys.stdout.write
    if not doc["profiles"]:
        out("no profiles configured; add [profiles.NAME] to bosun.toml\n")
    for e in doc["profiles"]:
        p = e["prices"]
        price = f"${p['input']}/{p['cached_input']}/{p['output']} per M in/cached/out" if any(p.values()) else "no prices set"
        out(f"profile {e['profile']} ({e['adapter']}): model {e['model'] or '-'}, {price}\n")
        efforts = ", ".join(e["efforts"]) or "none (this CLI has no effort setting)"
        out(f"  effort {e['effort'] or 'the CLI default'}; levels: {efforts}\n")
        if e.get("record"):
            from bosun.engine.track_record import record_line

            out(f"  record: {record_line(e['record'])}\n")
        if e["effort_note"]:
            out(f"  note: {e['effort_note']}\n")
        if e["models"] is None:
            out(f"  {e['error']}\n")
            continue
        where = f"{e['source']}" + (" (cached)" if e["cached"] else "")
        out(f"  {len(e['models'])} model(s) from {where}\n")
        if e["listed"] is False:
            out(f"  note: {e['model']} is not in this catalog; check the model name\n")
        for m in e["models"][:200]:
            out(f"    {m}{'  <- this profile' if m == e['model'] else ''}\n")


NEXT_STEP = {
    "paused": "next: fix the plan (e.g. add depends) and `bosun plan continue {id} --plan fixed.yaml`, "
              "or `bosun plan continue {id}` once the cause is gone; `bosun plan abort {id}` gives up",
    "failed": "next: `bosun plan status {id}` explains it; `bosun plan continue {id} [--plan fixed.yaml]` retries, "
              "`bosun plan abort {id}` removes its branches and worktrees",
    "cancelled": "next: `bosun plan continue {id}` runs it again, `bosun plan abort {id}` removes its branches",
    "running": "next: `bosun plan watch {id}` follows it (if its process died: `bosun plan resume {id}`)",
}


def print_plan(r: dict[str, Any]) -> None:
    """Every plan verb without --json: the plan, its waves and tasks, and what to do next."""
    out = sys.stdout.write
    out(f"plan {r['id']}  [{r['state']}]  {r['title']}\n")
    src = f"{r['source_branch']} @ {r['source_head'][:12]}"
    if r["snapshot"]:
        src += f" (+ uncommitted work, snapshot {r['checkpoint'][:12]})"
    out(f"  source       {src}\n")
    ih = r["integration_head"][:12] if r["integration_head"] else "deleted"
    out(f"  integration  {r['integration_branch']} @ {ih}\n")
    if r["merged_commit"]:
        out(f"  landed       {r['merged_commit'][:12]} on {r['source_branch']}\n")
    if r["waves"]:
        out(f"  wave         {r['current_wave'] or '-'} of {len(r['waves'])}\n")
    by_id = {t["id"]: t for t in r["tasks"]}
    for n, wave in enumerate(r["waves"], start=1):
        out(f"wave {n}:\n")
        for tid in wave:
            t = by_id[tid]
            bits = [f"  {tid:<16} {t['state']:<9}"]
            if t["run_id"]:
                bits.append(f"run {t['run_id']} ({t['run_state']}, {t['profile']})")
            if t["attempts"]:
                bits.append(f"attempt {t['attempts']}")
            if t["merged_commit"]:
                bits.append(f"merged {t['merged_commit'][:12]}")
            out("  ".join(bits) + "\n")
            if t["conflict"]:
                out(f"    conflict in: {', '.join(t['conflict'].get('files') or [])}\n")
            if t.get("review"):
                out(f"    verdict: {t['review'].get('verdict_line')}: a person must decide "
                    f"(`bosun approve {t['review'].get('run')}`)\n")
                for reason in t["review"].get("reasons") or []:
                    out(f"      - {reason['code']}: {reason['sentence']}\n")
            if t["error"]:
                out(f"    error: {t['error'].get('message')}\n")
            for f in t["failures"][-3:] if t["state"] != "merged" else []:
                out(f"    attempt failed: run {f.get('run')} ({f.get('profile')}): {f.get('message')}\n")
    if r["error"]:
        out(f"error: {r['error'].get('code')}: {r['error'].get('message')}\n")
        if r["error"].get("hint"):
            out(f"  hint: {r['error']['hint']}\n")
        if r["error"].get("output"):
            out(f"  output (the end):\n{indented_tail(r['error']['output'])}\n")
    if r["state"] == "running" and not r["driver_alive"]:
        out(f"its process is gone: `bosun plan resume {r['id']}` continues it\n")
    elif r["state"] == "paused" and (r.get("error") or {}).get("code") == "NEEDS_REVIEW":
        out(f"next: read the reasons above; `bosun approve RUN` for each waiting task, then "
            f"`bosun plan continue {r['id']}`\n")
    elif r["state"] in NEXT_STEP:
        out(NEXT_STEP[r["state"]].format(id=r["id"]) + "\n")


def indented_tail(text: str, lines: int = 20) -> str:
    """The last ``lines`` lines of a command's output, indented under the line that names it."""
    return "\n".join("    " + ln for ln in text.rstrip("\n").splitlines()[-lines:])
