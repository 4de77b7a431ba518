"""Driving Debian's chromium through Playwright, and a real `bosun dash` process to point it at.

No browser is downloaded: the tests use /usr/bin/chromium (`apt-get install chromium`). When it is
missing they are skipped with that reason, except in CI (BOSUN_REQUIRE_CLIS=1), where they fail.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]
TOKEN = "browser-test-token"


def require_chromium() -> None:
    problem = None
    if not Path(CHROMIUM).exists():
        problem = f"{CHROMIUM} is missing (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "the playwright package is not installed (pip install -e .[dev])"
    if problem:
        if os.environ.get("BOSUN_REQUIRE_CLIS") == "1":
            pytest.fail(problem)
        pytest.skip(problem)


@contextmanager
def browser_page(artifacts: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.console_errors = errors  # type: ignore[attr-defined]
            yield page
        finally:
            browser.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def dash_server(home: Path, repo: Path) -> Iterator[str]:
    """`bosun dash` as a real process on a free port; yields its base URL."""
    port = free_port()
    env = {**os.environ, "BOSUN_HOME": str(home), "BOSUN_DASH_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bosun", "dash", "--port", str(port), "--no-open", "--repo", str(repo)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                raise AssertionError("bosun dash exited: " + (proc.stdout.read() if proc.stdout else ""))
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
