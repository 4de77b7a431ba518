"""Scripted workers for the remote pool tests, run by agents through the `command` adapter.

Usage: remote_worker.py MODE. The current directory is the agent's worktree; the prompt is on stdin.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

FIX_OLD = "return a - b  # bug"


def edit(new: str) -> None:
    p = Path("src/calc.py")
    p.write_text(p.read_text().replace(FIX_OLD, new))


def main() -> None:
    mode = sys.argv[1]
    sys.stdin.read()
    print(json.dumps({"type": "tool_call", "tool": "edit", "input": {"path": "src/calc.py"}}), flush=True)
    if mode == "fix":
        edit("return a + b")
    elif mode == "slow_fix":  # long enough to be killed or cancelled mid-task
        time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 6)
        edit("return a + b")
    elif mode == "lie":  # a wrong change, reported as a success
        edit("return a * b")
        print("All tests pass. The fix is verified.")
    elif mode == "hang":
        edit("return a + b")
        time.sleep(3600)
    elif mode.startswith("file"):  # a plan task: its own new file
        Path("src", f"{mode}.py").write_text(f"NAME = {mode!r}\n")
    print(json.dumps({"type": "usage", "input_tokens": 100, "output_tokens": 10}), flush=True)
    print(f"done ({mode})")


if __name__ == "__main__":
    main()
