"""Whether one verify command passed: the one definition every reader of a verification uses.

A command passed when it exited 0, was not killed for its time, its runner's per-test report does
not contradict its exit code (``report_disagrees``), and the runner guard saw nothing of the tree's
code tamper with the test runner (``runner_tampered``). Anything less is a failure, whatever the
exit code says: the exit code is the one part of a run the code under test controls outright.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def command_passed(cmd: Mapping[str, Any]) -> bool:
    return (cmd.get("exit_code") == 0 and not cmd.get("timed_out") and not cmd.get("report_disagrees")
            and not cmd.get("runner_tampered"))
