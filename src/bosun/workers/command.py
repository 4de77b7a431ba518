"""The ``command`` adapter: any program as a worker.

The program runs in the worktree with the prompt on stdin and ``BOSUN_TASK_FILE`` pointing at the
task JSON. Stdout lines that are JSON objects whose ``type`` is a normalized event type are recorded
as such; any other output becomes assistant messages.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

from bosun.core.config import Profile
from bosun.workers.base import (
    EVENT_TYPES,
    ErrorClass,
    Usage,
    WorkerContext,
    WorkerInfo,
    WorkerResult,
    ev_error,
    ev_message,
    truncate,
)
from bosun.workers.cli_base import ParseState, expand_setting_path, note_error, run_cli, unset_variable


class CommandParser:
    def __init__(self) -> None:
        self.state = ParseState()

    def feed(self, line: str) -> list[dict[str, Any]]:
        if not line.strip():
            return []
        obj: Any = None
        if line.lstrip().startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = None
        if not isinstance(obj, dict) or obj.get("type") not in EVENT_TYPES:
            self.state.final_text = line
            return [ev_message(line)]
        kind = obj["type"]
        ev = {k: truncate(v) for k, v in obj.items()}
        if kind == "usage":
            self.state.usage.add(Usage.from_event(obj))
            self.state.steps += 1
        elif kind == "session" and obj.get("session_id"):
            self.state.session_id = str(obj["session_id"])
        elif kind == "message" and obj.get("role", "assistant") == "assistant":
            self.state.final_text = str(obj.get("text", ""))
        elif kind == "error":
            cls = obj.get("error_class")
            try:
                err_cls = ErrorClass(cls) if cls else None
            except ValueError:
                err_cls = None
            return [note_error(self.state, str(obj.get("message", "")), err_cls)]
        return [ev]


READ_ONLY_UNENFORCED = ("read-only modes: a command worker is only told BOSUN_MODE; bosun discards whatever it "
                        "writes in explore, review and test runs, which are never landable")


class CommandWorker:
    """Not a ``CliWorker``: the program is the user's own (any argv), with no stream, version or flags to know."""

    name = "command"

    def binary(self, profile: Profile) -> str | None:
        return expand_setting_path(profile.command[0]) if profile.command else None

    def prepare(self, ctx: WorkerContext, binary: str) -> tuple[list[str], dict[str, str], bytes]:
        """argv, env and stdin of one run (through ``cli_worker.command_line``, as for every CLI)."""
        env = dict(ctx.env)
        env["BOSUN_TASK_FILE"] = str(ctx.task_file)
        env["BOSUN_RUN_ID"] = ctx.run_id
        env["BOSUN_MODE"] = ctx.allowed.mode
        if ctx.resume_session:
            env["BOSUN_RESUME_SESSION"] = ctx.resume_session
        return [binary, *ctx.profile.command[1:], *ctx.profile.extra_args], env, ctx.prompt.encode("utf-8")

    def run(self, ctx: WorkerContext) -> WorkerResult:
        from bosun.workers.cli_worker import command_line

        started = command_line(self, ctx)
        if started is None:
            msg = "profile has adapter = \"command\" but no `command = [...]`"
            ctx.emit(ev_error(msg, ErrorClass.permanent))
            return WorkerResult(status="failed", error_class=ErrorClass.permanent, error_message=msg)
        argv, env, stdin = started
        result = run_cli(ctx, argv, env, CommandParser(), stdin_data=stdin)
        if not ctx.allowed.edit:
            result.unenforced = [READ_ONLY_UNENFORCED]
        return result

    def describe(self, profile: Profile) -> WorkerInfo:
        info = WorkerInfo(
            enforces=["own HOME", "env allowlist", "git guard", "timeouts"],
            cannot_enforce=[READ_ONLY_UNENFORCED],
        )
        if not profile.command:
            info.problems.append("profile has adapter = \"command\" but no `command = [...]`")
            return info
        found = shutil.which(expand_setting_path(profile.command[0]))
        info.binary = found
        if not found:
            info.problems.append(f"program not found: {profile.command[0]}{unset_variable(profile.command[0])}")
        return info
