"""`bosun doctor` and `bosun workers`: is the set-up usable, and what can each worker enforce?"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bosun.errors import EXIT_ERROR, EXIT_OK, BosunError


def _check_profile(settings: Any, name: str, probe: bool) -> dict[str, Any]:
    from bosun.workers.registry import get_worker

    prof = settings.profile(name)
    entry: dict[str, Any] = {"profile": name, "adapter": prof.adapter, "model": prof.model, "tier": prof.tier}
    try:
        info = get_worker(prof.adapter).describe(prof)
    except BosunError as exc:
        entry.update(usable=False, problems=[exc.message])
        return entry
    problems = list(info.problems)
    if prof.api_key_env and not os.environ.get(prof.api_key_env):
        problems.append(f"{prof.api_key_env} is not set (the profile's api_key_env)")
    for fb in prof.fallbacks:
        if fb not in settings.profiles:
            problems.append(f"fallback {fb!r} is not a defined profile")
    if probe and prof.base_url:
        problems.extend(_probe(prof.base_url))
    entry.update(
        usable=not problems,
        problems=problems,
        binary=info.binary,
        version=info.version,
        min_version=info.min_version,
        enforces=info.enforces,
        cannot_enforce=info.cannot_enforce,
    )
    return entry


def _probe(base_url: str) -> list[str]:
    import httpx

    try:
        res = httpx.get(base_url.rstrip("/") + "/models", timeout=5.0)
    except httpx.HTTPError as exc:
        return [f"endpoint {base_url} unreachable: {exc}"]
    if res.status_code >= 500:
        return [f"endpoint {base_url} answered HTTP {res.status_code}"]
    return []


def gather(repo: Path, only: str | None, probe: bool) -> dict[str, Any]:
    from bosun.config import load_settings
    from bosun.workers.registry import ADAPTERS

    report: dict[str, Any] = {"git": shutil.which("git"), "config_error": None, "profiles": [], "adapters": []}
    try:
        settings = load_settings(repo)
    except BosunError as exc:
        report["config_error"] = {"message": exc.message, "hint": exc.hint}
        report["sandbox"] = sandbox_report(None)
        return report
    report["sandbox"] = sandbox_report(settings.sandbox)
    names = [only] if only else sorted(settings.profiles)
    if only:
        settings.profile(only)  # unknown profile: a clear error
    from concurrent.futures import ThreadPoolExecutor

    # Version checks start each CLI once (Node start-up): do them side by side.
    with ThreadPoolExecutor(max_workers=4) as pool:
        profiles = pool.map(lambda n: _check_profile(settings, n, probe), names)
        adapters = pool.map(_check_adapter, sorted(ADAPTERS))
        report["profiles"] = list(profiles)
        report["adapters"] = list(adapters)
    from bosun.skills.install import installed, warnings

    report["skills"] = {"installed": installed(repo), "warnings": warnings(repo)}
    return report


def sandbox_report(setting: str | None) -> dict[str, Any]:
    """What this machine enforces around workers, and whether the ``sandbox`` setting is met."""
    from bosun.sandbox import probe

    support = probe()
    report: dict[str, Any] = {**support.to_dict(), "setting": setting}
    report["enforced"] = support.mechanism != "none" and setting != "off"
    report["ok"] = not (setting == "required" and support.mechanism == "none")
    return report


def _describe_sandbox(sb: dict[str, Any]) -> str:
    if sb["mechanism"] == "none":
        what = "NOT enforced: the kernel has no Landlock, workers can write wherever your user can"
    elif not sb["enforced"]:
        what = f"off by setting (this kernel could enforce Landlock ABI {sb['abi']})"
    else:
        what = (f"Landlock ABI {sb['abi']}: workers write only in their worktree, HOME and TMPDIR; "
                f"network rules: {'available' if sb['network'] != 'not enforced' else 'not enforced'}")
    containment = ("every process a worker starts is killed when its step ends (child subreaper)"
                   if sb["containment"] == "subreaper" else "not enforced")
    need = "" if sb["ok"] else "\n  problem: sandbox = \"required\" and this kernel cannot enforce it"
    return f"sandbox ({sb['setting'] or 'auto'}): {what}\nprocess containment: {containment}{need}\n"


def _check_adapter(name: str) -> dict[str, Any]:
    from bosun.config import Profile
    from bosun.workers.registry import get_worker

    try:
        info = get_worker(name).describe(Profile(name=f"({name})", adapter=name))  # type: ignore[arg-type]
    except BosunError as exc:
        return {"adapter": name, "available": False, "problems": [exc.message]}
    needs_cli = name not in ("command", "native", "acp")  # acp: the agent is per profile
    return {
        "adapter": name,
        "available": True,
        "cli_found": bool(info.binary) if needs_cli else None,
        "binary": info.binary,
        "version": info.version,
        "min_version": info.min_version,
        "version_ok": _version_ok(info.version, info.min_version),
        "enforces": info.enforces,
        "cannot_enforce": info.cannot_enforce,
    }


def _version_ok(version: str | None, minimum: str | None) -> bool | None:
    from bosun.workers.cli_base import version_tuple

    if not version or not minimum:
        return None
    return version_tuple(version) >= version_tuple(minimum)


def run_doctor(repo: Path, only: str | None, probe: bool, as_json: bool) -> int:
    report = gather(repo, only, probe)
    ok = (report["git"] and not report["config_error"] and all(p["usable"] for p in report["profiles"])
          and report["sandbox"]["ok"])
    if as_json:
        import json

        sys.stdout.write(json.dumps({**report, "ok": bool(ok)}) + "\n")
        return EXIT_OK if ok else EXIT_ERROR
    out = sys.stdout.write
    out(f"git: {report['git'] or 'NOT FOUND (bosun needs git)'}\n")
    if report["config_error"]:
        out(f"config: ERROR {report['config_error']['message']}\n  hint: {report['config_error']['hint']}\n")
    out(_describe_sandbox(report["sandbox"]))
    out("adapters:\n")
    for a in report["adapters"]:
        if not a.get("available"):
            out(f"  {a['adapter']:<9} not available in this build\n")
            continue
        if a.get("cli_found") is None:
            out(f"  {a['adapter']:<9} built in\n")
        elif a["cli_found"]:
            warn = "" if a.get("version_ok") is not False else f"  (older than the minimum {a['min_version']})"
            out(f"  {a['adapter']:<9} {a['binary']} {a.get('version') or '?'}{warn}\n")
        else:
            out(f"  {a['adapter']:<9} CLI not found (supported from {a.get('min_version') or '?'})\n")
            continue  # what a CLI that is not installed cannot enforce is noise
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
    return EXIT_OK if ok else EXIT_ERROR


def worker_rows(repo: Path) -> list[dict[str, Any]]:
    """Each configured profile with its cooldown and recent success rate (``bosun workers --json``)."""
    from bosun.config import load_settings
    from bosun.store.db import open_store

    settings = load_settings(repo)
    store = open_store()
    cooling = store.cooldowns()
    rows = []
    for name, prof in sorted(settings.profiles.items()):
        stats = store.profile_stats(name)
        cd = cooling.get(name)
        rows.append({
            "profile": name, "adapter": prof.adapter, "model": prof.model, "tier": prof.tier,
            "strengths": prof.strengths, "fallbacks": prof.fallbacks,
            "cooldown_until": cd["until"] if cd else None, "cooldown_reason": cd["reason"] if cd else None,
            "recent_attempts": stats["attempts"], "success_rate": stats["success_rate"],
            "default": name == settings.default_profile,
        })
    return rows


def list_workers(repo: Path, as_json: bool) -> int:
    rows = worker_rows(repo)
    if as_json:
        import json

        sys.stdout.write(json.dumps({"workers": rows}) + "\n")
        return EXIT_OK
    if rows:
        sys.stdout.write(f"{'PROFILE':<14} {'ADAPTER':<9} {'TIER':<9} {'STRENGTHS':<16} RECENT SUCCESS\n")
    for r in rows:
        note = ""
        if r["cooldown_until"]:
            note = f"  cooldown {int(r['cooldown_until'] - time.time())}s ({r['cooldown_reason'][:60]})"
        rate = "-" if r["success_rate"] is None else f"{r['success_rate']:.0%} of {r['recent_attempts']}"
        out = f"{r['profile']:<14} {r['adapter']:<9} {r['tier']:<9} {','.join(r['strengths']) or '-':<16} {rate}{note}"
        sys.stdout.write(out + ("  (default)" if r["default"] else "") + "\n")
    if not rows:
        sys.stdout.write("no profiles configured\n")
    return EXIT_OK
