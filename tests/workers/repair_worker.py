"""Scripted workers for repair rounds and the escalation ladder, run as real processes through the
`command` adapter. Usage: repair_worker.py MODE; the worktree is the current directory, the prompt on
stdin. Each prints what it saw, so a test reads from the run's events what each turn was given.

- ``learner``: a wrong fix first (``a * b``); fixes add() only when the prompt names the failing test
  and shows its assertion output (a repair round's evidence).
- ``never``: the same wrong fix every turn.
- ``cheater``: makes the failing test pass by weakening it; would fix the code if shown the evidence.
- ``turncoat``: the wrong fix first; shown the evidence, it weakens the failing test instead.
- ``quitter``: the wrong fix first; shown the evidence, it crashes (exit 1) without a change.
- ``strong``: fixes add() at once, and says whether the task came with another worker's refusal.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

CALC = Path("src/calc.py")
WRONG = "return a * b"


def usage(inp: int, out: int) -> None:
    print(json.dumps({"type": "usage", "input_tokens": inp, "output_tokens": out, "cached_input_tokens": 0}))


def set_add(body: str) -> None:
    text = CALC.read_text()
    for old in ("return a - b  # bug", WRONG):
        text = text.replace(old, body)
    CALC.write_text(text)


def shown_the_failure(prompt: str) -> bool:
    return "tests/test_calc.py::test_add" in prompt and "assert 6 == 5" in prompt


def main() -> None:
    mode = sys.argv[1]
    prompt = sys.stdin.read()
    resumed = os.environ.get("BOSUN_RESUME_SESSION") or "none"
    has_task = "# Task: " in prompt
    print(f"turn: resumed={resumed} task={'yes' if has_task else 'no'} evidence={'yes' if shown_the_failure(prompt) else 'no'}")
    if resumed == "none":
        print(json.dumps({"type": "session", "session_id": f"sess-{mode}"}))
    if mode == "learner" and shown_the_failure(prompt):
        hidden = [w for w in ("test_hidden", "acceptance-only-42", "test_secret_acceptance") if w in prompt]
        print(f"hidden named: {hidden or 'none'}; hidden counted: {'hidden acceptance test' in prompt}")
        set_add("return a + b")
        usage(400, 20)
    elif mode in ("learner", "never"):
        set_add(WRONG)
        usage(1000, 50)
    elif mode == "cheater":
        if shown_the_failure(prompt):
            set_add("return a + b")
        else:
            test = Path("tests/test_calc.py")
            test.write_text(test.read_text().replace("assert add(2, 3) == 5", "assert True"))
        usage(900, 40)
    elif mode == "turncoat":
        if shown_the_failure(prompt):
            test = Path("tests/test_calc.py")
            test.write_text(test.read_text().replace("assert add(2, 3) == 5", "assert True"))
        else:
            set_add(WRONG)
        usage(1000, 50)
    elif mode == "quitter":
        if shown_the_failure(prompt):
            print("giving up", file=sys.stderr)
            sys.exit(1)
        set_add(WRONG)
        usage(1000, 50)
    elif mode == "strong":
        print("escalated: " + ("yes" if "Another worker tried this task" in prompt else "no"))
        set_add("return a + b")
        usage(2000, 100)
    print("done")


if __name__ == "__main__":
    main()
