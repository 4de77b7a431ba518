"""A `command` worker for the warm-pool tests. Usage: poolworker.py MODE (cwd = the worktree).

Every mode fixes the bug and leaves one file of its own, ``work-<token>.txt`` (a token no other
worker has): a worktree handed to two runs at once, or reset under a live run, shows as two such
files or a missing one. ``hang`` then waits to be killed; ``poison`` writes into a set-up output through its link.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main(mode: str) -> None:
    sys.stdin.read()
    token = os.urandom(6).hex()
    others = sorted(p.name for p in Path(".").glob("work-*.txt"))
    Path(f"work-{token}.txt").write_text(f"{token} found={others}\n")
    calc = Path("src/calc.py")
    calc.write_text(calc.read_text().replace("return a - b  # bug", "return a + b"))
    print(json.dumps({"type": "usage", "input_tokens": 10, "output_tokens": 5, "cached_input_tokens": 0}))
    if mode == "hang":
        time.sleep(120)
    if mode == "poison":  # through the link to a set-up output (refused by the sandbox; here it is off)
        Path("deps/lib.txt").write_text("poisoned")
    time.sleep(0.3)
    if sorted(p.name for p in Path(".").glob("work-*.txt")) != [f"work-{token}.txt"]:
        print(json.dumps({"type": "error", "message": "another worker shares this worktree"}))
        sys.exit(3)
    print(f"wrote {token}")


if __name__ == "__main__":
    main(sys.argv[1])
