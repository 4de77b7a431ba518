"""What bosun asks a person at a terminal, and how it reads the answer: the reasons a run needs review,
then `[y/N]` before `approve` acknowledges them. Only "y" or "yes" is a yes; Enter, anything else and
the end of input are a no (a person's no is never taken for a yes)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's would import typing on the CLI's path
if TYPE_CHECKING:
    from bosun.engine.context import RunContext


def print_review_reasons(ctx: RunContext, run_id: str) -> bool:
    """The reasons of a run that needs review, on stderr; False when it needs none."""
    from bosun.engine import verdict

    judged = verdict.of_run(ctx.store.require_run(run_id))
    if not judged or judged["outcome"] != verdict.NEEDS_REVIEW:
        return False
    sys.stderr.write(f"bosun: {run_id} needs review; approving it acknowledges:\n")
    for r in judged["reasons"]:
        sys.stderr.write(f"  {r['code']}: {r['sentence']}\n")
    return True


def said_yes() -> bool:
    """A person's answer at the terminal: only "y" or "yes" is a yes (Enter, "n", end of input: no)."""
    sys.stderr.write("approve it? (integrate lands it afterwards) [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, UnicodeDecodeError):
        answer = ""
    return answer.strip().lower() in ("y", "yes")
