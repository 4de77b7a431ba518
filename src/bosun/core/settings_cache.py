"""Validated settings kept on disk, so the verbs that only show them skip pydantic.

Validating the user config and ``bosun.toml`` imports pydantic and bosun's settings models, ~200 ms
of a command whose own work takes a few. The verbs that only show settings (``workers``, ``models``,
``pool status``) read them from here as plain data; when they find nothing current, they validate
the config (``load_settings(repo, keep=True)``) and store what was validated here.

An entry is used only under the key it was written with, and the key covers everything the settings
are made from: the exact bytes of every config file ``load_settings`` reads (or their absence), the
``BOSUN_*`` variables it reads, bosun's version, and the size and modification time of the modules
that define the settings and of pydantic's ``version.py``. Any change of any of them is a miss; a miss validates the
config the ordinary way, so a broken config fails with the same error as ever. Settings given on
the command line (``overrides``) are never stored; no other command writes here (a command refused
for bad input leaves bosun's home as it was).

One entry per pair of config files (their absolute paths name it), under bosun's home, where the
rest of its records are: a worker's sandbox cannot write there. Nothing here imports pydantic.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from bosun.core.errors import BadInput
from bosun.core.lean_imports import sha256
from bosun.core.version import VERSION

TYPE_CHECKING = False  # typing's would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

# The BOSUN_* variables that settings read, and the key each sets (see config.load_settings).
ENV_KEYS = (("BOSUN_PROFILE", "default_profile"), ("BOSUN_MAX_CONCURRENT_RUNS", "max_concurrent_runs"))
# The modules whose code decides what a config validates to: an edit of one is a miss. So is another
# pydantic (its version.py, found without importing it: that import is what the cache spares).
_DEFINING_MODULES = ("config.py", "worktree_config.py", "settings_cache.py")
_VALIDATOR_STAMP = ("pydantic", "version.py")
FORMAT = 1


def env_layer() -> dict[str, Any]:
    """The settings the environment sets (the layer above bosun.toml)."""
    return {key: os.environ[var] for var, key in ENV_KEYS if os.environ.get(var)}


def read_config(path: Path) -> bytes | None:
    """A config file's bytes, None when it does not exist (an absent file is an empty layer)."""
    try:
        with path.open("rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def config_files(repo: Path | None) -> list[Path]:
    """The files ``load_settings(repo)`` reads, lowest precedence first."""
    from bosun.core.paths import user_config_path

    files = [user_config_path()]
    if repo is not None:
        files.append(repo / "bosun.toml")
    return files


def cache_key(contents: list[tuple[Path, bytes | None]], env: dict[str, Any]) -> str:
    """What the settings are made from, hashed: the files' bytes, the environment layer, the code."""
    here = str(Path(__file__).parent)
    code: list[list[Any] | None] = [_stamp(os.path.join(here, name)) for name in _DEFINING_MODULES]
    code.append(_validator_stamp())
    h = sha256(json.dumps([FORMAT, VERSION, code, env], sort_keys=True).encode())
    for path, data in contents:
        h.update(b"\0file\0" + os.fsencode(os.path.abspath(path)) + b"\0")
        h.update(b"absent" if data is None else b"bytes\0" + sha256(data).digest())
    return h.hexdigest()


def _validator_stamp() -> list[Any] | None:
    """pydantic's version.py where its import would find it (the first entry of sys.path holding it)."""
    for entry in sys.path:
        stamp = _stamp(os.path.join(entry or ".", *_VALIDATOR_STAMP))
        if stamp[1] is not None:
            return stamp
    return None


def _stamp(path: str) -> list[Any]:
    try:
        st = os.stat(path)
    except OSError:
        return [path, None, None]
    return [path, st.st_size, st.st_mtime_ns]


def _entry_path(files: list[Path]) -> Path:
    from bosun.core.paths import bosun_home

    name = sha256("\0".join(os.path.abspath(f) for f in files).encode()).hexdigest()[:32]
    return bosun_home() / "settings-cache" / f"{name}.json"


def store(contents: list[tuple[Path, bytes | None]], env: dict[str, Any], settings: dict[str, Any]) -> None:
    """Keep ``settings`` (validated from exactly ``contents`` and ``env``) for the read-only verbs.

    Best effort: a home that cannot be written only means the next read validates again."""
    from bosun.core.fileio import write_bytes_atomic

    key = cache_key(contents, env)
    path = _entry_path([p for p, _ in contents])
    if _read_entry(path, key) is not None:
        return  # another process stored the same a moment ago
    try:
        write_bytes_atomic(path, json.dumps({"key": key, "settings": settings}).encode())
    except OSError:
        pass


def _read_entry(path: Path, key: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("settings"), dict):
        return None
    settings: dict[str, Any] = doc["settings"]
    return settings


def cached_settings(repo: Path | None) -> SettingsView | None:
    """The settings ``load_settings(repo)`` would give, if they were validated from the same inputs."""
    files = config_files(repo)
    try:
        contents = [(p, read_config(p)) for p in files]
    except OSError:
        return None  # unreadable: the full path reports it
    env = env_layer()
    doc = _read_entry(_entry_path(files), cache_key(contents, env))
    if doc is None:
        return None
    try:
        return SettingsView(doc)
    except (KeyError, TypeError, AttributeError):
        return None  # not what this code writes (edited by hand): validate again


class PricesView:
    """A profile's prices as validated (``Prices``)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self._doc = doc
        self.input: float = doc["input"]
        self.cached_input: float = doc["cached_input"]
        self.output: float = doc["output"]

    def model_dump(self) -> dict[str, Any]:
        return dict(self._doc)


class ProfileView:
    """One profile as validated (``config.Profile``): the fields the read-only verbs show."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.name: str = doc["name"]
        self.adapter: str = doc["adapter"]
        self.model: str | None = doc["model"]
        self.command: list[str] = doc["command"]
        self.base_url: str | None = doc["base_url"]
        self.api: str | None = doc["api"]
        self.api_key_env: str | None = doc["api_key_env"]
        self.env: list[str] = doc["env"]
        self.binary: str | None = doc["binary"]
        self.prices = PricesView(doc["prices"])
        self.effort: str | None = doc["effort"]
        self.fallbacks: list[str] = doc["fallbacks"]
        self.escalate_to: str | None = doc.get("escalate_to")
        self.tier: str = doc["tier"]
        self.strengths: list[str] = doc["strengths"]

    def key_env_names(self) -> list[str]:  # as config.Profile.key_env_names
        names = list(self.env)
        if self.api_key_env:
            names.append(self.api_key_env)
        return names


class PoolView:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.size: int = doc["size"]


class SettingsView:
    """Validated settings read back from the cache: what ``workers``, ``models`` and ``pool status`` use."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.default_profile: str | None = doc["default_profile"]
        self.profiles = {name: ProfileView(p) for name, p in doc["profiles"].items()}
        self.pool = PoolView(doc["pool"])

    def profile(self, name: str | None) -> ProfileView:  # as config.Settings.profile
        try:
            return self.profiles[name]  # type: ignore[index]  # None is an unknown profile like any other
        except KeyError:
            raise unknown_profile(name, self.profiles) from None


def unknown_profile(name: str | None, known: Iterable[str]) -> BadInput:
    """The error of a profile name the settings do not define (both kinds of settings raise it)."""
    known = sorted(known)
    listed = ", ".join(known) or "none defined"
    close = closest(name, known)
    return BadInput(
        f"unknown profile {name!r} (known: {listed})",
        (f"did you mean {close!r}? " if close else "") + "define it under [profiles.NAME] in bosun.toml or your "
        "user config",
        code="UNKNOWN_PROFILE",
    )


def closest(name: str | None, known: Iterable[str]) -> str | None:
    """The known name ``name`` was most likely meant to be (``cheapp`` -> ``cheap``), for a did-you-mean."""
    import difflib

    if not name:
        return None
    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return found[0] if found else None
