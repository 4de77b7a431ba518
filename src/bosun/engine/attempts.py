"""Worker attempts: the sandboxed context for one attempt, and the fallback chain across profiles.

An attempt that fails as rate_limited, quota, model_unavailable or transient before the worker changed
any file moves on to the next profile in the chain; a rate-limited profile is put in cooldown. Auth
failures never fall back: they are set-up problems, and the run is ``blocked`` with a hint naming
the missing key or login.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun import proc
from bosun.core import effort, paths
from bosun.core.adapters import effort_levels
from bosun.core.config import Profile, Settings
from bosun.core.contract import Mode, TaskContract
from bosun.engine import locks, record
from bosun.engine.budget import meter_for as spend_meter
from bosun.engine.prompt import render_prompt
from bosun.isolation.run_env import run_env
from bosun.workers.base import (
    FALLBACK_CLASSES,
    ErrorClass,
    Permissions,
    Usage,
    WorkerContext,
    WorkerResult,
    ev_error,
    ev_message,
    ev_sandbox,
    ev_warning,
)
from bosun.workers.registry import effort_args

if TYPE_CHECKING:
    from bosun.engine.context import RunContext
    from bosun.store.db import Store
    from bosun.store.run import Run

DEFAULT_COOLDOWN_S = 15 * 60
MESSAGE_BUDGET_BYTES = 4_000_000


@dataclass
class Outcome:
    result: WorkerResult
    profile: str
    usage: Usage = field(default_factory=Usage)
    blocked: bool = False
    hint: str = ""
    attempts: list[dict[str, Any]] = field(default_factory=list)
    git_tampered: dict[str, Any] | None = None  # what the worker's turns changed in the user's git dir
    files_tampered: dict[str, Any] | None = None  # the modes, owners or flags of the user's files they changed


def fallback_chain(settings: Settings, first: Profile, cooling: set[str]) -> list[Profile]:
    """``first`` and its fallbacks (transitively), skipping profiles in cooldown. ``first`` itself is
    skipped only when it is cooling down and some fallback is not: a known rate limit is not worth
    another attempt, but with nothing else to try it is."""
    chain, seen = [first], {first.name}
    queue = list(first.fallbacks)
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        prof = settings.profile(name)
        if prof.name in cooling:
            continue
        chain.append(prof)
        queue.extend(prof.fallbacks)
    if first.name in cooling and len(chain) > 1:
        chain.pop(0)
    return chain


def worker_env(profile: Profile, home: Path, tmp: Path, guard_env: dict[str, str]) -> dict[str, str]:
    env = proc.allowlisted_env(
        extra_keys=profile.key_env_names(),
        overrides={"HOME": str(home), "TMPDIR": str(tmp), "TMP": str(tmp), "TEMP": str(tmp),
                   "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", "CI": "true"},
    )
    guard = dict(guard_env)
    bin_dir = guard.pop("BOSUN_GUARD_BIN", None)
    if bin_dir:
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", os.defpath)
    env.update(guard)
    return env


def mode_permissions(task: TaskContract) -> Permissions:
    """What the task's mode lets a worker do: adapters translate this, never the mode itself."""
    if task.mode == Mode.code:
        return Permissions(mode=task.mode.value)
    if task.mode == Mode.test:
        commands = tuple(" ".join(v.run) for v in task.verify)
        return Permissions(edit=False, shell=True, commands=commands, mode=task.mode.value)
    return Permissions(edit=False, shell=False, mode=task.mode.value)


def kernel_read_only(task: TaskContract) -> bool:
    """Modes that may not edit (explore, review: self-review turns too) get a worktree the kernel
    will not let them write. Test mode keeps it writable: test runners write caches and reports
    beside the code (a change shows in the diff)."""
    return task.mode in (Mode.explore, Mode.review)


def _worktree_changed(run: Run) -> bool:
    from bosun.engine.context import read_run_change

    diff = read_run_change(run).diff
    return bool(diff)


def loopback_port(worker: object, profile: Profile, limited: bool) -> int | None:
    """The port a CLI that serves itself on loopback gets when the sandbox limits its connects
    (workers/opencode_kit.py): one the sandbox lets it reach. The run and its dry run ask here."""
    from bosun.isolation import confinement

    serves = getattr(worker, "serves_on_loopback", lambda _p: False)
    return confinement.free_port() if limited and serves(profile) else None


def with_effort(profile: Profile, emit: Callable[[dict[str, Any]], None]) -> Profile:
    """The profile with its effort snapped to what its CLI and model accept and passed as argv; a
    snapped or ignored level is a warning event, so the record says what the worker really ran with."""
    choice = effort.choose(profile.adapter, effort_levels(profile.adapter), profile.model, profile.effort)
    if choice.warning:
        emit(ev_warning(choice.warning))
    if choice.level is None:
        return profile
    return profile.model_copy(update={"effort": choice.level,
                                      "extra_args": [*effort_args(profile.adapter, choice.level, profile),
                                                     *profile.extra_args]})


def _missing_key(profile: Profile) -> str | None:
    if profile.api_key_env and not os.environ.get(profile.api_key_env):
        return profile.api_key_env
    return None


def run_attempts(
    ctx: RunContext,
    settings: Settings,
    run: Run,
    task: TaskContract,
    resume: str | None = None,
    profile_name: str | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    prompt_override: str | None = None,
    fresh_session: bool = False,
    on_worker_start: Callable[[], None] | None = None,
) -> Outcome:
    """Run the worker, walking the fallback chain. ``prompt_override`` with ``fresh_session`` is a
    one-off turn on exactly this profile (self-review). ``on_worker_start`` is called once, when the
    first worker process has started (work that can overlap the worker starts then)."""
    from bosun.isolation.guard import install_guard
    from bosun.workers.registry import get_worker
    from bosun.workers.turn import merged_tampering, run_turn, tampering_message

    store = ctx.store
    run_id = run.id
    rdir = paths.run_dir(run_id)
    log = record.EventLog(rdir / record.EVENTS)

    budget = {"bytes": 0, "dropped": 0}
    meter = spend_meter(ctx, settings, run, task)  # spending caps, priced from the streamed usage

    def emit(ev: dict[str, Any]) -> None:
        # A chatty worker must not fill the disk: plain output beyond the budget is counted, not kept.
        # Structured events (tool calls, usage, errors, sessions) are always recorded.
        if ev.get("type") == "message":
            budget["bytes"] += len(str(ev.get("text", "")))
            if budget["bytes"] > MESSAGE_BUDGET_BYTES:
                budget["dropped"] += 1
                return
        full = log.append(ev)
        meter.observe(full)
        if on_event is not None:
            on_event(full)

    meter.emit = emit

    first = settings.profile(profile_name or run.profile)
    one_off = bool(prompt_override) and fresh_session  # a self- or cross-review turn, not the run's worker
    from bosun.core.redaction import register_key_names

    register_key_names([n for p in settings.profiles.values() if (n := p.api_key_env)])
    cooling = set(store.cooldowns())
    # A resumed session belongs to the profile that created it: no fallbacks across sessions.
    chain = [first] if resume or fresh_session else fallback_chain(settings, first, cooling)
    if chain[0].name != first.name:
        emit(ev_message(f"profile {first.name} is in cooldown ({store.cooldowns()[first.name]['reason'][:120]}); "
                        f"starting with {chain[0].name}", role="system"))
    from bosun.isolation import confinement
    from bosun.sandbox import SandboxFailed

    # Hidden tests live in the user's repository: a run with holdout files reads privately.
    holdout = bool(getattr(task, "holdout", None))
    private_reads = settings.sandbox_reads == "worktree" or holdout
    try:
        sandbox = confinement.plan(settings, private_reads=private_reads)
    except SandboxFailed as exc:
        emit(ev_error(exc.message, ErrorClass.permanent))
        store.merge_data(run_id, sandbox={"mechanism": "none", "required": True, "reason": exc.message})
        failed = WorkerResult(status="failed", error_class=ErrorClass.permanent, error_message=exc.message)
        return Outcome(result=failed, profile=first.name, blocked=True, hint=exc.hint)
    worker_git = _worker_git(run, rdir) if sandbox.confined and holdout and sandbox.support.namespaces else None
    run_ports = confinement.run_ports(run)
    guard_env = install_guard(rdir / "guard")
    total = Usage()
    outcome: Outcome | None = None
    tampered: dict[str, Any] | None = None
    files_tampered: dict[str, Any] | None = None
    task_file = rdir / record.TASK
    for index, profile in enumerate(chain):
        home, tmp = rdir / "home" / profile.name, rdir / "tmp"
        home.mkdir(parents=True, exist_ok=True)
        tmp.mkdir(parents=True, exist_ok=True)
        emit(ev_message(f"attempt {index + 1}: profile {profile.name} ({profile.adapter})", role="system"))
        worker = get_worker(profile.adapter)
        limited = sandbox.confined and settings.network == "provider-only"
        own_port = loopback_port(worker, profile, limited)
        ports = confinement.provider_ports(profile, settings, (*run_ports, own_port or 0)) if limited else None
        enforced = confinement.attempt_report(sandbox, settings, profile, holdout, ports)
        if not one_off:  # a review turn's confinement is in its events; the run's record is its worker's
            store.merge_data(run_id, sandbox={**enforced, "verify": confinement.verify_report(settings, sandbox.support)})
        emit(ev_sandbox(enforced))
        attempt_id = store.start_attempt(run_id, profile.name, profile.adapter)
        meter.start_attempt(profile)
        missing = _missing_key(profile)
        if missing:
            result = WorkerResult(
                status="failed", error_class=ErrorClass.auth, error_message=f"{missing} is not set"
            )
            emit(ev_error(result.error_message or "", ErrorClass.auth))
        else:
            profile = with_effort(profile, emit)
            wctx = WorkerContext(
                run_id=run_id,
                worktree=Path(run.worktree),
                run_dir=rdir,
                home=home,
                tmp=tmp,
                task=task,
                task_file=task_file,
                profile=profile,
                prompt=prompt_override or resume or render_prompt(task),
                env={**worker_env(profile, home, tmp, guard_env), **run_env(run)},
                emit=emit,
                timeout_s=task.timeout_s or profile.timeout_s,
                idle_timeout_s=profile.idle_timeout_s,
                max_steps=profile.max_steps,
                resume_session=run.session_id if resume and not fresh_session else None,
                read_only=task.mode != Mode.code,
                permissions=mode_permissions(task),
                should_stop=meter.or_else(_cancel_poller(store, run_id)),
                on_start=_on_start(store, run_id, on_worker_start),
                confine=confinement.worker_confinement(
                    run, settings, home, tmp, read_only=kernel_read_only(task), private_reads=private_reads,
                    connect_ports=ports, own_reads=(rdir / "guard", task_file), worker_git=worker_git, holdout=holdout,
                    caches=tuple(getattr(worker, "cache_dirs", lambda _p: [])(profile)))
                if sandbox.confined else None,
                own_port=own_port,
            )
            turn = run_turn(worker, wctx, Path(run.repo), watch_git=not one_off)
            if turn.git_tampered:
                log.append(ev_message(tampering_message(turn.git_tampered), role="system"))
                tampered = merged_tampering(tampered, turn.git_tampered)
            if turn.files_tampered:
                log.append(ev_message(tampering_message(turn.files_tampered, "the modes of your files"), role="system"))
                files_tampered = merged_tampering(files_tampered, turn.files_tampered)
            result = meter.settle(turn.result, run)
            _redact_result(result)
            current = store.get_run(run_id)
            if not result.ok and current is not None and current.data.cancel_requested:
                # `bosun cancel` killed the worker's group: that is a cancellation, not a failure.
                result.status, result.error_class, result.error_message = "cancelled", None, "cancelled"
        total.add(result.usage)
        store.finish_attempt(
            attempt_id,
            result.status,
            result.error_class.value if result.error_class else None,
            result.error_message,
            {"usage": result.usage.to_dict(), "session_id": result.session_id, "unenforced": result.unenforced},
        )
        locks.forget_worker(store, run_id)
        outcome = Outcome(result=result, profile=profile.name, usage=total, git_tampered=tampered,
                          files_tampered=files_tampered)
        if result.error_class == ErrorClass.auth:
            outcome.blocked = True
            outcome.hint = _auth_hint(profile, missing)
            break
        if result.error_class in (ErrorClass.rate_limited, ErrorClass.quota):
            wait = result.retry_after_s or DEFAULT_COOLDOWN_S
            store.set_cooldown(profile.name, time.time() + wait, f"{result.error_class.value}: {result.error_message}")
        if result.ok or result.status == "cancelled" or result.error_class not in FALLBACK_CLASSES:
            break
        if _worktree_changed(run):
            outcome.hint = "the worker changed files before failing, so bosun did not fall back to another profile"
            break
        if index + 1 < len(chain):
            emit(ev_message(f"{profile.name} failed ({result.error_class.value}); falling back", role="system"))
    assert outcome is not None
    if budget["dropped"]:
        log.append(ev_message(f"{budget['dropped']} further output lines were not recorded "
                              f"(over {MESSAGE_BUDGET_BYTES // 1_000_000} MB of plain output)", role="system"))
    if not outcome.hint and not outcome.result.ok:
        outcome.hint = _failure_hint(outcome.result, len(chain), profile)
    _clear_tmp(rdir / "tmp")
    return outcome


def _redact_result(result: WorkerResult) -> None:
    """The worker's own words are stored and shown: no key value or credential in them."""
    from bosun.core.redaction import redact_text

    for attr in ("error_message", "final_text", "stderr_tail"):
        value = getattr(result, attr)
        if value:
            setattr(result, attr, redact_text(value))


CANCEL_POLL_S = 0.25  # one indexed read of the run row: cheap enough to keep `bosun cancel` prompt


def _cancel_poller(store: Store, run_id: str) -> Callable[[], bool]:
    last = [0.0]

    def should_stop() -> bool:
        now = time.monotonic()
        if now - last[0] < CANCEL_POLL_S:
            return False
        last[0] = now
        run = store.get_run(run_id)
        return bool(run and run.data.cancel_requested)

    return should_stop


def _auth_hint(profile: Profile, missing: str | None) -> str:
    if missing:
        return f"export {missing}=... (the key for profile {profile.name}), then `bosun work` the run again"
    if profile.api_key_env:
        return f"the provider refused the key in {profile.api_key_env}; check it, then `bosun work` the run again"
    return f"log in to the {profile.adapter} CLI or configure its key (`bosun doctor --profile {profile.name}`)"


def _failure_hint(result: WorkerResult, chain_len: int, profile: Profile) -> str:
    from bosun.workers.endpoint import UNREACHABLE, unreachable_hint

    cls = result.error_class
    if profile.base_url and UNREACHABLE.search(result.error_message or ""):
        return unreachable_hint(profile.base_url)
    if cls == ErrorClass.timeout:
        return "raise timeout_s in the task or the profile, or make the task smaller"
    if cls in FALLBACK_CLASSES:
        extra = "" if chain_len > 1 else "; add fallbacks = [...] to the profile to try another worker"
        return f"the provider failed ({cls.value}){extra}"
    if cls == ErrorClass.model_unavailable:
        return "check the model name in the profile"
    return "see `bosun show` and events.jsonl for the worker's output"


def _worker_git(run: Run, rdir: Path) -> tuple[Path, Path]:
    """The holdout run's own repository (the start tree alone) and the pointer shown for its ``.git``."""
    from bosun.isolation.worker_git import worker_git

    return worker_git(Path(run.repo), rdir, Path(run.worktree), run.start_commit, run.branch)


def _clear_tmp(tmp: Path) -> None:
    shutil.rmtree(tmp, ignore_errors=True)


def _on_start(store: Store, run_id: str, once: Callable[[], None] | None) -> Callable[[int], None]:
    pending = [once] if once is not None else []

    def started(pid: int) -> None:
        locks.record_worker(store, run_id, pid)
        if pending:
            pending.pop()()

    return started
