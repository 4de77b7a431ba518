"""Per-profile caches a CLI keeps across runs (plugin installs, downloaded tools, model catalogs).

Every run gets a brand-new HOME, so a cache kept there is always empty: OpenCode, for one, installs
``@opencode-ai/plugin`` from the npm registry at every start. A profile's cache lives instead under
bosun's cache directory (``cli/<adapter>-<profile>``) and is reused run after run, separate from the
per-run HOME that keeps sessions, logs and state. It never holds configuration or keys: bosun hands a
CLI its configuration in the environment, and before each run :func:`tidy` removes whatever is not a
dependency install, so nothing one worker leaves there (a plugin file, a config file) is loaded by the
next. With the sandbox the cache is writable by the worker, since the CLI must write its installs.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from bosun.core import paths

if TYPE_CHECKING:
    from bosun.core.config import Profile

# What a package manager leaves in a directory it installs into; anything else is removed.
DEPENDENCY_FILES = frozenset({"node_modules", "package.json", "package-lock.json", "bun.lock", "bun.lockb",
                              ".gitignore"})


def profile_cache(profile: Profile) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", profile.name or "default")
    return paths.cache_dir() / "cli" / f"{profile.adapter}-{slug}"


def tidy(directory: Path) -> list[str]:
    """Remove every entry of ``directory`` that is not a dependency install; the names removed."""
    removed: list[str] = []
    if not directory.is_dir():
        return removed
    for entry in directory.iterdir():
        if entry.name in DEPENDENCY_FILES and not entry.is_symlink():
            continue
        removed.append(entry.name)
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    return removed
