"""A `command` worker for the worktree set-up tests. Usage: envworker.py MODE (cwd = the worktree).

``record``: fixes the bug and writes what it sees of its environment to ``facts.json``.
``hostile``: the same, then tries to change the verify environment through everything set-up put
in place: writes through the linked ``node_modules``, edits its ``.env`` copy, replaces the linked
``.venv`` with a directory of its own and rewrites a set-up output.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def attempt(label: str, action, facts: dict) -> None:
    try:
        action()
        facts[label] = "written"
    except OSError as exc:
        facts[label] = f"refused: {type(exc).__name__}"


def main(mode: str) -> None:
    sys.stdin.read()
    calc = Path("src/calc.py")
    calc.write_text(calc.read_text().replace("return a - b  # bug", "return a + b"))
    facts = {
        "port": os.environ.get("BOSUN_PORT"),
        "port_range": os.environ.get("BOSUN_PORT_RANGE"),
        "setup_secret": os.environ.get("SETUP_SECRET"),
        "node_modules": Path("node_modules/pkg/index.js").read_text() if Path("node_modules/pkg/index.js").exists() else None,
        "env_file": Path(".env").read_text() if Path(".env").exists() else None,
        "venv_marker": Path(".venv/marker").exists(),
        "setup_output": Path("build/out.txt").read_text() if Path("build/out.txt").exists() else None,
    }
    if mode == "slow_record":
        time.sleep(1.5)
    if mode == "hostile":
        attempt("through_link", lambda: Path("node_modules/pkg/index.js").write_text("module.exports = 'evil';\n"), facts)
        attempt("new_in_link", lambda: Path("node_modules/pkg/evil.js").write_text("evil\n"), facts)
        attempt("through_output", lambda: Path("build/out.txt").write_text("evil\n"), facts)
        Path(".env").write_text("TOKEN=evil\n")

        def replace_venv() -> None:
            os.unlink(".venv")
            os.mkdir(".venv")
            Path(".venv/evil.pth").write_text("import os\n")

        attempt("replace_link", replace_venv, facts)
    Path("facts.json").write_text(json.dumps(facts))
    print(json.dumps({"type": "usage", "input_tokens": 10, "output_tokens": 5, "cached_input_tokens": 0}))
    print("done")


if __name__ == "__main__":
    main(sys.argv[1])
