"""The plan's own ``verify``: between waves, nothing regressed; after the last wave, everything passes.

A test-first plan commits every task's tests up front, so its ``verify`` (the whole suite) cannot pass
before its last wave: after wave 1, wave 2's tests still fail. So after every wave but the last the
plan verify is a regression check: every test that passed before the wave must still pass after it,
judged per test from the JUnit report bosun asks pytest for (a command's own ``junit`` file too), and
per command where a command writes no report (a command that passed must still pass). Tests that
failed before the wave and still fail are the later waves' to fix. After the last wave the plan's
``verify`` must pass, whole, exactly as written.

What a check compares against is the previous check's outcome, kept in the plan's data
(``verify_outcomes``: the integration head and, per command, whether it passed and the tests that
passed); before the first wave that needs one it is taken on the integration head as it stands
(``verify-wave-0.json``). Every check's record is ``verify-wave-<n>.json`` in the plan directory.

Between waves pytest is asked to go on past a test file it cannot import
(``--continue-on-collection-errors``): a test-first suite imports modules later waves write, and
without it one such file hides every other test's outcome. The last check runs the commands as given.

A failure's error carries the failing command's output (``output``) and the tests that regressed
(``tests``), so every surface that reports it can show them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.plans import model

if TYPE_CHECKING:
    from bosun.core.contract import VerifyCommand
    from bosun.plans.model import Plan
    from bosun.store.plans import PlanStore

OUTPUT_CHARS = 2000
CONTINUE_PAST_IMPORT_ERRORS = "--continue-on-collection-errors"


def between_waves(commands: list[VerifyCommand]) -> list[VerifyCommand]:
    """The plan's verify commands as the checks between waves run them: pytest goes on past a test
    file it cannot import yet."""
    from bosun.isolation.verify_commands import verify_env

    default = verify_env(Path("/nonexistent")).get("PYTEST_ADDOPTS", "")
    out = []
    for cmd in commands:
        addopts = cmd.env.get("PYTEST_ADDOPTS", default)
        out.append(cmd.model_copy(update={"env": {**cmd.env,
                                                  "PYTEST_ADDOPTS": f"{addopts} {CONTINUE_PAST_IMPORT_ERRORS}".strip()}}))
    return out


def outcomes(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per command of a verification result: whether it passed, and the tests that passed (None
    without a report)."""
    out = []
    for c in result.get("commands") or []:
        tests = c.get("tests")
        out.append({"argv": c.get("argv"), "passed": c.get("exit_code") == 0 and not c.get("timed_out"),
                    "tests": sorted(tests.get("passed") or []) if isinstance(tests, dict) else None})
    return out


def regressions(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str]:
    """What passed before and does not now: test ids where both runs wrote a report, else the
    command's argv as one line."""
    lost: list[str] = []
    for old, new in zip(before, after, strict=False):
        if old.get("tests") is not None and new.get("tests") is not None:
            still = set(new["tests"])
            lost += [t for t in old["tests"] if t not in still]
        elif old.get("passed") and not new.get("passed"):
            lost.append(" ".join(old.get("argv") or []))
    return lost


def failing_output(result: dict[str, Any], regressed: list[str] | None = None) -> dict[str, Any]:
    """The failing command of a result: its argv, exit code and the tail of its output. With
    ``regressed``, the command that lost them (a later command may fail as expected meanwhile)."""
    commands = result.get("commands") or []
    failing = [c for c in commands if c.get("exit_code") != 0 or c.get("timed_out")]
    if regressed:
        lost = set(regressed)
        failing = [c for c in failing if " ".join(c.get("argv") or []) in lost
                   or lost & set((c.get("tests") or {}).get("failed") or [])] or failing
    c = failing[0] if failing else {}
    return {"argv": c.get("argv") or [], "exit_code": c.get("exit_code"),
            "output": (c.get("output_tail") or "")[-OUTPUT_CHARS:]}


def counts(after: list[dict[str, Any]]) -> str:
    """How many tests pass now, in words, for the check's event ("12 tests pass")."""
    reported = [o for o in after if o.get("tests") is not None]
    if not reported:
        passed = sum(1 for o in after if o.get("passed"))
        return f"{passed} of {len(after)} command(s) pass"
    n = sum(len(o["tests"]) for o in reported)
    return f"{n} test{'s' if n != 1 else ''} pass"


class PlanChecks:
    """The plan verify of one driven plan: the outcome before a wave, the check after it."""

    def __init__(self, ps: PlanStore, plan_id: str, plan: Plan, repo: Path, pdir: Path, branch: str,
                 confine: Callable[[Path, Path], Any]) -> None:
        self.ps, self.plan_id, self.plan, self.repo, self.pdir = ps, plan_id, plan, repo, pdir
        self.branch, self.confine = branch, confine

    def _data(self) -> dict[str, Any]:
        return dict(self.ps.require_plan(self.plan_id)["data"] or {})

    def _run(self, head: str, n: int, between: bool) -> dict[str, Any]:
        from bosun.core.fileio import write_json_atomic
        from bosun.isolation.verify_commands import verify_commit

        commands = between_waves(self.plan.verify) if between else list(self.plan.verify)
        result = verify_commit(self.repo, head, commands, self.pdir, self.plan.title, confine_to=self.confine)
        write_json_atomic(self.pdir / f"verify-wave-{n}.json", result)
        if result["passed"]:
            self.ps.merge_plan_data(self.plan_id, verified_head=head)
        return result

    def before_wave(self, n: int, last: bool, head: str) -> None:
        """The outcome the check after wave ``n`` compares against, taken on ``head`` unless the check
        after the previous wave recorded it there. None is needed before the last wave."""
        if not self.plan.verify or last or (self._data().get("verify_outcomes") or {}).get("head") == head:
            return
        self.ps.event(self.plan_id, "verify", f"plan verify on {head[:12]} before wave {n}: what the check after "
                      "it compares against", state="started", wave=n)
        after = outcomes(self._run(head, n - 1, between=True))
        self.ps.merge_plan_data(self.plan_id, verify_outcomes={"head": head, "commands": after})
        self.ps.event(self.plan_id, "verify", f"before wave {n}: {counts(after)}", state="recorded", wave=n)

    def after_wave(self, n: int, last: bool, head: str, stop: Callable[..., None]) -> bool:
        """The check after wave ``n``; False when it stopped the plan."""
        if not self.plan.verify:
            return True
        data = self._data()
        before = data.get("verify_outcomes") or {}
        if data.get("verified_head") == head or (not last and before.get("head") == head):
            return True  # checked already: nothing merged since
        what = "plan verify" if last else "check that nothing regressed"
        self.ps.event(self.plan_id, "verify", f"{what} on {self.branch} at {head[:12]}", state="started", wave=n)
        result = self._run(head, n, between=not last)
        after = outcomes(result)
        if last:
            if not result["passed"]:
                self._failed(n, stop, "PLAN_VERIFY_FAILED", f"the plan verify failed after the last wave ({n})",
                             failing_output(result), [])
                return False
            self.ps.event(self.plan_id, "verify", f"plan verify passed on {head[:12]}", state="passed", wave=n)
            return True
        lost = regressions(before.get("commands") or [], after) if before else []
        if lost:
            shown = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
            self._failed(n, stop, "PLAN_VERIFY_REGRESSED",
                         f"wave {n} broke what passed before it: {shown}", failing_output(result, lost), lost)
            return False
        self.ps.merge_plan_data(self.plan_id, verify_outcomes={"head": head, "commands": after})
        still = "" if result["passed"] else "; the rest is for later waves (the plan verify must pass after the last)"
        self.ps.event(self.plan_id, "verify", f"nothing regressed after wave {n}: {counts(after)}{still}",
                      state="passed", wave=n)
        return True

    def _failed(self, n: int, stop: Callable[..., None], code: str, msg: str, failing: dict[str, Any],
                lost: list[str]) -> None:
        record = self.pdir / f"verify-wave-{n}.json"
        argv = " ".join(failing["argv"])
        said = f"{msg}: {argv} (exit {failing['exit_code']})" if argv else msg
        self.ps.event(self.plan_id, "verify", said, state="failed", wave=n, output_tail=failing["output"],
                      tests=lost)
        hint = (f"the output is below and in {record}; the integration branch {self.branch} holds the result: "
                f"fix it with a fixed plan and `bosun plan continue {self.plan_id} --plan fixed.yaml`")
        stop(model.FAILED, {"code": code, "message": said, "hint": hint, "output": failing["output"], "tests": lost},
             said)
