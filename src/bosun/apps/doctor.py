"""`bosun doctor` and `bosun workers`: is the set-up usable, and what can each worker enforce?

What they find; :mod:`bosun.cli.views` prints it.
"""

from __future__ import annotations

import os
from pathlib import Path

from bosun.core.errors import BosunError

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the read-only verbs avoid
if TYPE_CHECKING:
    from typing import Any

    from bosun.core.config import Profile, Settings
    from bosun.core.settings_cache import ProfileView, SettingsView


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
    from bosun.workers.endpoint import probe

    problem = probe(base_url, timeout_s=5.0)
    return [problem] if problem else []


def gather(repo: Path, only: str | None, probe: bool) -> dict[str, Any]:
    import shutil

    from bosun.core.adapters import ADAPTERS
    from bosun.core.config import load_settings

    report: dict[str, Any] = {"git": shutil.which("git"), "config_error": None, "profiles": [], "adapters": []}
    try:
        settings = load_settings(repo)
    except BosunError as exc:
        report["config_error"] = {"message": exc.message, "hint": exc.hint}
        report["sandbox"] = sandbox_report(None)
        return report
    report["sandbox"] = sandbox_report(settings)
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


def sandbox_report(settings: Settings | None) -> dict[str, Any]:
    """What this machine enforces around workers, property by property (``sandbox/held.py``), and
    whether the ``sandbox`` setting is met."""
    from bosun.sandbox import probe
    from bosun.sandbox.held import held, missing

    support = probe()
    setting = settings.sandbox if settings is not None else None
    found = held(support, reads=settings.sandbox_reads if settings else "worktree",
                 network=settings.network if settings else "provider-only")
    report: dict[str, Any] = {**support.to_dict(), "setting": setting, "held": found}
    if settings is not None:
        from bosun.isolation.confinement import verify_report

        report["verify"] = verify_report(settings, support)
    report["enforced"] = support.mechanism != "none" and setting != "off"
    report["missing"] = missing(found) if setting != "off" else []
    report["ok"] = not (setting == "required" and report["missing"])
    return report


def _check_adapter(name: str) -> dict[str, Any]:
    from bosun.core.config import Profile
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
        "problems": list(info.problems),
    }


def _version_ok(version: str | None, minimum: str | None) -> bool | None:
    from bosun.workers.cli_base import version_tuple

    if not version or not minimum:
        return None
    return version_tuple(version) >= version_tuple(minimum)


def healthy(report: dict[str, Any]) -> bool:
    """git found, the config loads, every profile usable, and the sandbox setting met."""
    return bool(report["git"] and not report["config_error"] and all(p["usable"] for p in report["profiles"])
                and report["sandbox"]["ok"])


def worker_rows(repo: Path, settings: Settings | SettingsView | None = None) -> list[dict[str, Any]]:
    """Each configured profile with its cooldown, recent success rate and track record (``bosun workers --json``);
    ``settings``: those of ``repo`` when the caller has them."""
    from bosun.store.db import open_store

    if settings is None:
        from bosun.core.config import load_settings

        settings = load_settings(repo)
    from bosun.engine.track_record import track_records

    store = open_store()
    cooling = store.cooldowns()
    rows = []
    profiles: dict[str, Profile | ProfileView] = dict(settings.profiles)
    records = track_records(store, profiles)
    for name, prof in sorted(profiles.items()):
        stats = store.profile_stats(name)
        cd = cooling.get(name)
        rows.append({
            "profile": name, "adapter": prof.adapter, "model": prof.model, "tier": prof.tier,
            "strengths": prof.strengths, "fallbacks": prof.fallbacks,
            "cooldown_until": cd["until"] if cd else None, "cooldown_reason": cd["reason"] if cd else None,
            "recent_attempts": stats["attempts"], "success_rate": stats["success_rate"],
            "default": name == settings.default_profile,
            "record": records[name],  # derived from the runs in the store (engine/track_record.py)
        })
    return rows
