"""`bosun models`: which models each profile's CLI or provider offers.

The catalog comes from the CLI's own listing where the profile relies on the CLI's providers
(``opencode models``, ``kilo models``: a profile without ``base_url``), otherwise from the provider's
model list (``GET {base_url}/models`` with the profile's key; Anthropic and Gemini endpoints in their
own shapes). Answers are cached for 30 minutes in bosun's cache directory. Offline, a refused key or
an endpoint without a listing means "no catalog" (with the reason), never a failure: the profile's
own model is still shown with the prices bosun knows.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from bosun.core.adapters import ADAPTERS, effort_levels
from bosun.core.effort import accepted, choose
from bosun.core.lean_imports import sha256

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the read-only verbs avoid
if TYPE_CHECKING:
    from typing import Any

    from bosun.core.config import Profile, Settings
    from bosun.core.settings_cache import ProfileView, SettingsView

CACHE_TTL_S = 30 * 60
FETCH_TIMEOUT_S = 8.0


def catalog(settings: Settings | SettingsView, only: str | None = None, refresh: bool = False) -> dict[str, Any]:
    from bosun.engine.track_record import track_records
    from bosun.store.db import open_store

    names = [only] if only else sorted(settings.profiles)
    profiles = [_entry(settings.profile(n), refresh) for n in names]
    records = track_records(open_store(), [e["profile"] for e in profiles])
    for e in profiles:
        e["record"] = records[e["profile"]]  # derived from the runs in the store (engine/track_record.py)
    return {"profiles": profiles, "cache_ttl_s": CACHE_TTL_S}


def _entry(profile: Profile | ProfileView, refresh: bool) -> dict[str, Any]:
    source, fetch = _source(profile)
    entry: dict[str, Any] = {
        "profile": profile.name, "adapter": profile.adapter, "model": profile.model, "source": source,
        "models": None, "listed": None, "cached": False, "fetched_at": None, "error": None,
        "prices": profile.prices.model_dump(),
        "efforts": list(accepted(effort_levels(profile.adapter), profile.model)),
    }
    # The level a run passes (snapped as an attempt snaps it), beside the one configured.
    chosen = choose(profile.adapter, effort_levels(profile.adapter), profile.model, profile.effort)
    entry.update(effort=chosen.level, effort_configured=profile.effort, effort_note=chosen.warning)
    if fetch is None:
        entry["error"] = "no catalog: this adapter has no model listing"
        return entry
    key = sha256(json.dumps([source, profile.api_key_env or ""]).encode()).hexdigest()[:24]
    cached = None if refresh else _read_cache(key)
    if cached is not None:
        entry.update(models=cached["models"], cached=True, fetched_at=cached["fetched_at"])
    else:
        try:
            models = sorted(set(fetch()))
        except CatalogUnavailable as exc:
            entry["error"] = f"no catalog: {exc}"
            return entry
        entry.update(models=models, fetched_at=time.time())
        _write_cache(key, models)
    if profile.model and entry["models"] is not None:
        entry["listed"] = profile.model in entry["models"]
    return entry


class CatalogUnavailable(Exception):
    """Why there is no catalog (offline, refused, no listing); shown, never raised to the user."""


def _source(profile: Profile | ProfileView) -> tuple[str | None, Any]:
    row = ADAPTERS[profile.adapter]
    listing = row.model_listing
    if listing and not profile.base_url:
        return f"{listing} models", lambda: _cli_listing(profile, listing)
    if profile.adapter == "command":
        return None, None
    base = profile.base_url or row.default_base_url
    if not base:
        return None, None
    return f"{base.rstrip('/')}/models", lambda: _provider_listing(profile, base)


def _provider_listing(profile: Profile | ProfileView, base: str) -> list[str]:
    import httpx

    key = os.environ.get(profile.api_key_env) if profile.api_key_env else None
    api = profile.api or ADAPTERS[profile.adapter].wire_api
    headers: dict[str, str] = {}
    url = base.rstrip("/")
    if api == "anthropic":
        url += "/v1/models" if not url.endswith("/v1") else "/models"
        if key:
            headers.update({"x-api-key": key, "anthropic-version": "2023-06-01"})
    elif api == "gemini":
        url += "/v1beta/models" if "/v1" not in url else "/models"
        if key:
            headers["x-goog-api-key"] = key
    else:
        url += "/models"
        if key:
            headers["Authorization"] = f"Bearer {key}"
    try:
        res = httpx.get(url, headers=headers, timeout=FETCH_TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise CatalogUnavailable(f"{url} unreachable ({type(exc).__name__})") from None
    if res.status_code != 200:
        raise CatalogUnavailable(f"{url} answered HTTP {res.status_code}")
    try:
        doc = res.json()
    except ValueError:
        raise CatalogUnavailable(f"{url} did not answer JSON") from None
    items = doc.get("data") if isinstance(doc, dict) and "data" in doc else (doc or {}).get("models", [])
    ids = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            name = item.get("id") or str(item.get("name") or "").removeprefix("models/")
            if name:
                ids.append(str(name))
    return ids


def _cli_listing(profile: Profile | ProfileView, cli: str) -> list[str]:
    """``opencode models`` / ``kilo models``, run with a throwaway HOME (the user's config is not read)."""
    import tempfile

    from bosun import proc
    from bosun.workers.cli_base import resolve_binary

    binary = resolve_binary(profile.binary, cli)
    if not binary:
        raise CatalogUnavailable(f"{cli} is not installed")
    with tempfile.TemporaryDirectory(prefix="bosun-models-") as home:
        env = proc.allowlisted_env(extra_keys=profile.key_env_names(), overrides={"HOME": home, "NO_COLOR": "1"})
        try:
            res = proc.run_quick([binary, "models"], env=env, timeout=120)  # a Node CLI on a busy machine
        except Exception as exc:  # noqa: BLE001 - a CLI that cannot list is "no catalog"
            raise CatalogUnavailable(f"`{binary} models` failed: {exc}") from None
    if res.returncode != 0:
        raise CatalogUnavailable(f"`{binary} models` exited {res.returncode}")
    return [ln.strip() for ln in res.stdout.splitlines() if ln.strip() and " " not in ln.strip()]


def _cache_file(key: str) -> Path:
    from bosun.core.paths import cache_dir

    return cache_dir() / "models" / f"{key}.json"


def _read_cache(key: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(_cache_file(key).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or time.time() - float(doc.get("fetched_at", 0)) > CACHE_TTL_S:
        return None
    return doc


def _write_cache(key: str, models: list[str]) -> None:
    from bosun.core.fileio import write_json_atomic

    path = _cache_file(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {"fetched_at": time.time(), "models": models})
    except OSError:
        pass  # no cache: the next call asks again
