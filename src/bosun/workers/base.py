"""The worker protocol and the normalized event model every adapter produces.

An adapter turns a profile and a task into a process (or, for ``native``, an in-process agent loop)
and turns whatever that process prints into normalized events, appended to ``events.jsonl``:

========== ==============================================================================
type       fields
========== ==============================================================================
message    role ("assistant" | "user" | "system"), text
tool_call  tool, input (dict or str, truncated), call_id
tool_result tool, ok (bool), output (truncated), call_id, denied (bool: a permission refusal)
usage      input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, cost_usd (per step,
           i.e. a delta; the run's usage is the sum of these)
error      error_class (see ErrorClass), message, retryable, retry_after_s
warning    message (something the CLI reported that did not stop the run, e.g. an unknown model
           name it runs with fallback settings)
session    session_id
========== ==============================================================================

bosun adds events of its own that no worker stream can produce: ``sandbox`` (what the kernel
enforces for the attempt: mechanism, abi, network, containment, writable), ``command`` (argv: the
worker's command line as started) and ``contained`` (count, killed: the processes the worker left
behind, killed when its step ended).

Every event also carries ``ts`` (unix seconds) and ``seq``. Parsers are pure: ``parse_line`` maps one
line of the CLI's output to zero or more events, so they can be tested on recorded streams.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bosun.core.config import Profile
    from bosun.core.contract import TaskContract
    from bosun.sandbox import Confinement

EVENT_TYPES = ("message", "tool_call", "tool_result", "usage", "error", "warning", "session")
TRUNCATE_CHARS = 4000


class ErrorClass(str, Enum):
    auth = "auth"
    rate_limited = "rate_limited"
    quota = "quota"
    model_unavailable = "model_unavailable"
    transient = "transient"
    timeout = "timeout"
    permanent = "permanent"
    budget_exceeded = "budget_exceeded"  # bosun stopped the worker at a spending cap


# Failures that say nothing about the task: another profile may succeed (fallback chains).
FALLBACK_CLASSES = frozenset(
    {ErrorClass.rate_limited, ErrorClass.quota, ErrorClass.model_unavailable, ErrorClass.transient}
)


@dataclass
class Usage:
    input_tokens: int = 0
    cached_input_tokens: int = 0  # a subset of input_tokens
    output_tokens: int = 0
    reasoning_tokens: int = 0  # a subset of output_tokens
    cost_usd: float | None = None  # as reported by the CLI (often priced from its own table)

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.cached_input_tokens += other.cached_input_tokens
        self.output_tokens += other.output_tokens
        self.reasoning_tokens += other.reasoning_tokens
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["total_tokens"] = self.total_tokens
        return d

    @classmethod
    def from_event(cls, ev: dict[str, Any]) -> Usage:
        return cls(
            input_tokens=int(ev.get("input_tokens") or 0),
            cached_input_tokens=int(ev.get("cached_input_tokens") or 0),
            output_tokens=int(ev.get("output_tokens") or 0),
            reasoning_tokens=int(ev.get("reasoning_tokens") or 0),
            cost_usd=ev.get("cost_usd"),
        )


def subset_usage(input_tokens: Any, cached: Any, output_tokens: Any, reasoning: Any) -> Usage:
    """Usage from raw counts where cached is a subset of input and reasoning a subset of output."""
    inp, out = as_count(input_tokens), as_count(output_tokens)
    return Usage(input_tokens=inp, cached_input_tokens=min(as_count(cached), inp), output_tokens=out,
                 reasoning_tokens=min(as_count(reasoning), out))


def truncate(value: Any, limit: int = TRUNCATE_CHARS) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"... [{len(value) - limit} chars cut]"
    if isinstance(value, dict | list):
        text = json.dumps(value, default=str)
        if len(text) <= limit:
            return value
        return text[:limit] + f"... [{len(text) - limit} chars cut]"
    return value


# Event constructors keep field names identical across adapters.
def ev_message(text: str, role: str = "assistant") -> dict[str, Any]:
    return {"type": "message", "role": role, "text": truncate(text, 20000)}


def ev_tool_call(tool: str, input: Any = None, call_id: str | None = None) -> dict[str, Any]:
    return {"type": "tool_call", "tool": tool, "input": truncate(input), "call_id": call_id}


def ev_tool_result(
    tool: str | None, ok: bool, output: Any = None, call_id: str | None = None, denied: bool = False
) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool": tool,
        "ok": ok,
        "output": truncate(output),
        "call_id": call_id,
        "denied": denied,
    }


def ev_usage(usage: Usage) -> dict[str, Any]:
    return {"type": "usage", **asdict(usage)}


def ev_error(
    message: str,
    error_class: ErrorClass | str | None = None,
    retryable: bool | None = None,
    retry_after_s: float | None = None,
) -> dict[str, Any]:
    cls = ErrorClass(error_class) if error_class else None
    return {
        "type": "error",
        "error_class": cls.value if cls else None,
        "message": truncate(message, 2000),
        "retryable": retryable,
        "retry_after_s": retry_after_s,
    }


def ev_warning(message: str) -> dict[str, Any]:
    return {"type": "warning", "message": truncate(message, 2000)}


def ev_session(session_id: str) -> dict[str, Any]:
    return {"type": "session", "session_id": session_id}


# Events only bosun writes (a worker's stream can never produce them: parsers emit EVENT_TYPES).
def ev_contained(killed: list[dict[str, Any]]) -> dict[str, Any]:
    """Processes the worker left behind, stopped and killed when its step ended."""
    return {"type": "contained", "count": len(killed), "killed": killed[:50]}


def ev_sandbox(report: dict[str, Any]) -> dict[str, Any]:
    """What the kernel enforces for this attempt."""
    return {"type": "sandbox", **report}


def ev_command(argv: list[str]) -> dict[str, Any]:
    """The worker's command line as it was started (``delegate --dry-run`` shows the same one)."""
    return {"type": "command", "argv": list(argv)}


@dataclass(frozen=True)
class Permissions:
    """What the run's mode lets the worker do, decided by the engine (adapters never read the task mode).

    ``edit``: may change the worktree. ``shell``: may run commands at all. ``commands``: when ``edit`` is
    off, the only commands the shell may run (test mode: the task's verify commands, as shell text).
    ``mode``: the mode's name, for workers that are only told it (the ``command`` adapter's BOSUN_MODE).
    """

    edit: bool = True
    shell: bool = True
    commands: tuple[str, ...] = ()
    mode: str = "code"

    @classmethod
    def for_read_only(cls, read_only: bool) -> Permissions:
        return cls(edit=False, shell=False, mode="explore") if read_only else cls()


@dataclass
class WorkerContext:
    """Everything an adapter needs for one attempt. Built by the engine; adapters never read config."""

    run_id: str
    worktree: Path
    run_dir: Path
    home: Path  # the worker's own HOME, inside the run dir
    tmp: Path  # the worker's own TMPDIR
    task: TaskContract
    task_file: Path
    profile: Profile
    prompt: str  # the full prompt, rendered from the task (or the follow-up when resuming)
    env: dict[str, str]  # allowlisted env with HOME, TMPDIR, the git guard and the profile's key vars
    emit: Callable[[dict[str, Any]], None]
    timeout_s: float
    idle_timeout_s: float | None = None
    max_steps: int | None = None
    resume_session: str | None = None  # continue this worker session (revise loops)
    read_only: bool = False  # explore/review/test modes and self-review turns may not edit
    should_stop: Callable[[], bool] | None = None
    on_start: Callable[[int], None] | None = None
    # The kernel sandbox for the worker's process tree (None: not enforced on this run).
    confine: Confinement | None = None
    # A TCP port free on this machine that the sandbox lets the worker connect to (None: any port may be
    # reached): for a CLI that talks to a server of its own on loopback (OpenCode's and Kilo's --port).
    own_port: int | None = None
    # What the mode allows; None: derived from ``read_only`` (no shell in a read-only run).
    permissions: Permissions | None = None

    def __post_init__(self) -> None:
        if self.permissions is None:
            self.permissions = Permissions.for_read_only(self.read_only)

    @property
    def allowed(self) -> Permissions:
        """``permissions``, never None (set in ``__post_init__``)."""
        return self.permissions or Permissions.for_read_only(self.read_only)


@dataclass
class WorkerResult:
    """How an attempt ended. ``status`` is ok | failed | timeout | cancelled."""

    status: str
    exit_code: int | None = None
    error_class: ErrorClass | None = None
    error_message: str | None = None
    retry_after_s: float | None = None
    session_id: str | None = None
    final_text: str | None = None
    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    unenforced: list[str] = field(default_factory=list)  # safety rules this CLI could not enforce
    stderr_tail: str = ""
    # The CLI process's own window: {started_at, exited_at (wall clock), wall_s}; None without a process.
    process: dict[str, float] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "error_class": self.error_class.value if self.error_class else None,
            "error_message": self.error_message,
            "retry_after_s": self.retry_after_s,
            "session_id": self.session_id,
            "final_text": truncate(self.final_text or "", 4000) if self.final_text else None,
            "usage": self.usage.to_dict(),
            "steps": self.steps,
            "unenforced": self.unenforced,
            "process": self.process,
        }


class Worker(Protocol):
    """An adapter. Implementations live in ``bosun.workers.<name>`` and are found by the registry."""

    name: str

    def run(self, ctx: WorkerContext) -> WorkerResult: ...

    def describe(self, profile: Profile) -> WorkerInfo: ...


@dataclass
class WorkerInfo:
    """What ``bosun doctor`` reports for an adapter/profile."""

    binary: str | None = None  # resolved path, None when not needed (native) or missing
    version: str | None = None
    min_version: str | None = None
    problems: list[str] = field(default_factory=list)
    enforces: list[str] = field(default_factory=list)
    cannot_enforce: list[str] = field(default_factory=list)


def as_count(value: Any) -> int:
    """A token count from a CLI's JSON: missing, null, negative or junk counts as 0."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (CLIs omit or null out fields)."""
    return value if isinstance(value, dict) else {}


def now() -> float:
    return round(time.time(), 3)
