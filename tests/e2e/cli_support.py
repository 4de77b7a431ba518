"""Locating the real worker CLIs for end-to-end tests.

`make test` installs Node 22 and the pinned CLIs with scripts/install-worker-clis.sh and exports
BOSUN_CLI_BIN (a directory of shims that run each CLI under Node 22). When a CLI is missing the test is
skipped with a reason, except in CI (BOSUN_REQUIRE_CLIS=1), where it fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def cli_binary(name: str) -> str:
    bin_dir = os.environ.get("BOSUN_CLI_BIN")
    if bin_dir:
        shim = Path(bin_dir) / name
        if shim.is_file() and os.access(shim, os.X_OK):
            return str(shim)
    # Fall back to the newest shim directory in the default cache.
    cache = Path.home() / ".cache" / "bosun" / "clis"
    for shim in sorted(cache.glob(f"cli-*/shims/{name}"), key=lambda p: p.stat().st_mtime, reverse=True):
        if (shim.parent.parent / ".complete").exists():
            return str(shim)
    msg = f"worker CLI {name!r} is not installed (run scripts/install-worker-clis.sh)"
    if os.environ.get("BOSUN_REQUIRE_CLIS") == "1":
        pytest.fail(msg)
    pytest.skip(msg)
