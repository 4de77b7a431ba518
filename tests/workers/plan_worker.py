"""A scripted worker for plan tests: a real process through the `command` adapter.

Usage:
  plan_worker.py ok        follow the @-instructions in the task's prompt (read from BOSUN_TASK_FILE)
  plan_worker.py broken    fail at once, like a model that errors out (for rotation tests)
  plan_worker.py check PATH [TEXT]   a verify command: PATH exists (and contains TEXT)

Instructions, one per prompt line (anything else is ignored):
  @require PATH            fail unless PATH exists (a dependent reading what its parent wrote)
  @write PATH TEXT...      write TEXT and a newline to PATH (directories are created)
  @derive OUT IN...        write to OUT a line "<id> after <first line of IN>" per input
  @sleep SECONDS           sleep
  @marker                  create the file `written` in the worker's HOME (inside the run directory)
  @fill PATH               write PATH until the filesystem it is on is full
  @fail                    exit 1 after the steps above
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def _prompt() -> str:
    task_file = os.environ.get("BOSUN_TASK_FILE")
    if task_file:
        return json.loads(Path(task_file).read_text())["task"]["prompt"]
    return sys.stdin.read()


def _write(path: str, text: str) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def mode_ok() -> int:
    sys.stdin.read()
    for raw in _prompt().splitlines():
        parts = raw.strip().split()
        if not parts or not parts[0].startswith("@"):
            continue
        op, args = parts[0][1:], parts[1:]
        if op == "require":
            if not Path(args[0]).exists():
                print(json.dumps({"type": "error", "message": f"required file {args[0]} is missing"}))
                return 1
        elif op == "write":
            _write(args[0], " ".join(args[1:]) + "\n")
            print(json.dumps({"type": "tool_call", "tool": "write", "input": {"path": args[0]}}))
        elif op == "derive":
            out, ins = args[0], args[1:]
            lines = [f"{Path(out).stem} after {Path(i).read_text().splitlines()[0]}" for i in ins]
            _write(out, "\n".join(lines) + "\n")
        elif op == "sleep":
            time.sleep(float(args[0]))
        elif op == "fill":
            _fill(args[0])
        elif op == "marker":
            Path(os.environ["HOME"], "written").write_text(str(time.time()))
        elif op == "fail":
            print(json.dumps({"type": "error", "message": "the task told me to fail"}))
            return 1
    print(json.dumps({"type": "usage", "input_tokens": 100, "output_tokens": 10, "cached_input_tokens": 0}))
    print("done")
    return 0


def _fill(path: str) -> None:
    """A worker that writes a huge file: the disk it is on ends up full (bosun's state with it)."""
    chunk = b"\0" * (1 << 16)
    with open(path, "wb") as fh:
        try:
            while True:
                fh.write(chunk)
                fh.flush()
        except OSError:
            pass
        try:
            while True:  # the last few bytes the big writes could not take
                fh.write(b"\0")
                fh.flush()
        except OSError:
            pass


def mode_broken() -> int:
    sys.stdin.read()
    sys.stderr.write("fatal: the model returned garbage\n")
    return 1


def mode_check() -> int:
    path = Path(sys.argv[2])
    if not path.is_file():
        print(f"missing {path}")
        return 1
    if len(sys.argv) > 3 and sys.argv[3] not in path.read_text():
        print(f"{path} lacks {sys.argv[3]!r}: {path.read_text()!r}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(globals()["mode_" + sys.argv[1]]())
