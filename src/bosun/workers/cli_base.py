"""Shared machinery for adapters that drive an external CLI.

An adapter supplies the argv, the env and a ``StreamParser``; ``run_cli`` runs the process through
``bosun.proc``, feeds every stdout line to the parser, forwards the events, counts steps, and turns
exit code, parser state and stderr into a ``WorkerResult`` with a classified failure.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from bosun import proc
from bosun.workers.base import (
    ErrorClass,
    Usage,
    WorkerContext,
    WorkerResult,
    ev_command,
    ev_contained,
    ev_error,
)
from bosun.workers.classify import classify_failure, classify_text, parse_retry_after


@dataclass
class ParseState:
    """What a parser learned from the stream so far."""

    session_id: str | None = None
    final_text: str | None = None
    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    errors: list[str] = field(default_factory=list)
    # Error reports whose weight the CLI's own outcome decides: they explain a failure, and are only
    # warnings when the CLI goes on to finish (Codex's "Model metadata for ... not found" event).
    warnings: list[str] = field(default_factory=list)
    error_class: ErrorClass | None = None
    retry_after_s: float | None = None
    finished_ok: bool | None = None  # a terminal success/failure event, when the CLI emits one


class StreamParser(Protocol):
    state: ParseState

    def feed(self, line: str) -> list[dict[str, Any]]: ...


def run_cli(
    ctx: WorkerContext,
    argv: Sequence[str],
    env: dict[str, str],
    parser: StreamParser,
    stdin_data: bytes | None = None,
    stdin_pipe: Callable[[IO[bytes]], None] | None = None,
) -> WorkerResult:
    steps_exceeded = [False]

    def on_line(line: str) -> None:
        for ev in parser.feed(line):
            ctx.emit(ev)
        if ctx.max_steps and parser.state.steps > ctx.max_steps:
            steps_exceeded[0] = True

    def should_stop() -> bool:
        if steps_exceeded[0]:
            return True
        return bool(ctx.should_stop and ctx.should_stop())

    from bosun.sandbox import SandboxFailed

    leaked = key_on_argv(ctx, argv)
    if leaked:
        # Every process on the machine can read another's argv (/proc/PID/cmdline, ps).
        msg = (f"the value of {leaked} would be on the worker's command line, readable by every process "
               "on this machine; pass keys through the profile's api_key_env only")
        ctx.emit(ev_error(msg, ErrorClass.permanent))
        return WorkerResult(status="failed", error_class=ErrorClass.permanent, error_message=msg)
    ctx.emit(ev_command(list(argv)))  # the record of what ran, as `delegate --dry-run` showed it
    env = {**env, proc.TOKEN_VAR: proc.new_token()}
    try:
        res = proc.run_supervised(
            argv,
            cwd=ctx.worktree,
            env=env,
            stdin_data=stdin_data,
            timeout_s=ctx.timeout_s,
            idle_timeout_s=ctx.idle_timeout_s,
            on_line=on_line,
            on_start=ctx.on_start,
            should_stop=should_stop,
            confine=ctx.confine,
            stdin_pipe=stdin_pipe,
        )
    except FileNotFoundError:
        msg = f"worker program not found: {argv[0]}"
        ctx.emit(ev_error(msg, ErrorClass.permanent))
        return WorkerResult(status="failed", error_class=ErrorClass.permanent, error_message=msg)
    except SandboxFailed as exc:
        ctx.emit(ev_error(exc.message, ErrorClass.permanent))
        return WorkerResult(status="failed", error_class=ErrorClass.permanent, error_message=exc.message)
    finally:
        # A second net behind process containment: anything still carrying the worker's token.
        proc.reap_strays(env[proc.TOKEN_VAR])
    if res.contained:
        ctx.emit(ev_contained(res.contained))
    result = finish_result(ctx, parser.state, res, steps_exceeded[0])
    result.process = {"started_at": round(res.started_at, 4), "exited_at": round(res.exited_at, 4),
                      "wall_s": round(res.process_s, 4)}
    return result


def key_on_argv(ctx: WorkerContext, argv: Sequence[str]) -> str | None:
    """The name of a profile key variable whose value appears in ``argv``, if any."""
    for name in ctx.profile.key_env_names():
        value = ctx.env.get(name) or ""
        if len(value) >= 8 and any(value in arg for arg in argv):
            return name
    return None


def finish_result(
    ctx: WorkerContext, st: ParseState, res: proc.SupervisedResult, steps_exceeded: bool = False
) -> WorkerResult:
    stderr_tail = res.stderr.tail_text(4000)
    result = WorkerResult(
        status="ok",
        exit_code=res.exit_code,
        session_id=st.session_id,
        final_text=st.final_text,
        usage=st.usage,
        steps=st.steps,
        stderr_tail=stderr_tail,
    )
    if res.timed_out or res.idle_timed_out:
        what = "idle timeout" if res.idle_timed_out else "timeout"
        limit = ctx.idle_timeout_s if res.idle_timed_out else ctx.timeout_s
        result.status = "timeout"
        result.error_class = ErrorClass.timeout
        result.error_message = f"worker hit the {what} ({limit:g}s) and was killed with its process group"
        ctx.emit(ev_error(result.error_message, ErrorClass.timeout))
        return result
    if steps_exceeded:
        result.status = "failed"
        result.error_class = ErrorClass.permanent
        result.error_message = f"worker exceeded the step cap ({ctx.max_steps}) and was stopped"
        ctx.emit(ev_error(result.error_message, ErrorClass.permanent))
        return result
    if res.cancelled:
        result.status = "cancelled"
        result.error_message = "cancelled"
        return result
    # A CLI's own terminal verdict (a completed turn, a success result) outranks error events seen
    # before it: those were reported and then recovered from, or were never fatal. Without a verdict,
    # every error report counts.
    failed = res.exit_code != 0 or st.finished_ok is False or (st.finished_ok is None and bool(st.error_class or st.warnings))
    if not failed:
        return result
    reported = st.errors or st.warnings
    text = "\n".join(reported) + "\n" + stderr_tail
    result.status = "failed"
    result.error_class = st.error_class or classify_failure(text, res.exit_code)
    result.retry_after_s = st.retry_after_s or parse_retry_after(text)
    first = next((e for e in reversed(st.warnings) if e.strip()), "") if not st.errors else ""
    first = next((e for e in st.errors if e.strip()), "") or first or _last_line(stderr_tail)
    result.error_message = (first or f"worker exited with code {res.exit_code}")[:1000]
    if not st.errors:
        ctx.emit(ev_error(result.error_message, result.error_class, retry_after_s=result.retry_after_s))
    return result


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def note_error(st: ParseState, message: str, error_class: ErrorClass | None = None) -> dict[str, Any]:
    """Record an error seen in the stream on the parser state and return its event."""
    st.errors.append(message)
    cls = error_class or classify_text(message)
    if cls and (st.error_class is None or st.error_class == ErrorClass.permanent):
        st.error_class = cls
    ra = parse_retry_after(message)
    if ra:
        st.retry_after_s = ra
    return ev_error(message, cls, retry_after_s=ra)


def note_warning(st: ParseState, message: str) -> dict[str, Any]:
    """Record an error report that is fatal only if the CLI does not finish; return a warning event."""
    from bosun.workers.base import ev_warning

    st.warnings.append(message)
    return ev_warning(message)


def resolve_binary(profile_binary: str | None, default_name: str) -> str | None:
    """The CLI to run: the profile's ``binary`` (a path or a name on PATH), else ``default_name`` on
    PATH, else the pinned CLIs ``scripts/install-worker-clis.sh`` installed (``make test`` does)."""
    import shutil
    from pathlib import Path

    name = expand_setting_path(profile_binary or default_name)
    if "$" in name:
        return None  # a variable that is not set: describe() says which
    if "/" in name:
        return name if Path(name).exists() else None
    return shutil.which(name) or installed_cli(name)


def expand_setting_path(value: str) -> str:
    """A path from bosun.toml as a shell would read it: ``~`` is the home directory and ``$VAR`` or
    ``${VAR}`` the variable's value (an unset variable is left as written, so it is reported)."""
    import os

    return os.path.expandvars(os.path.expanduser(value))


def unset_variable(value: str | None) -> str:
    """`` ($VAR is not set)`` when expanding ``value`` left a variable unexpanded, else ``""``."""
    import re

    left = re.search(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", expand_setting_path(value or ""))
    return f" (${left.group(1)} is not set)" if left else ""


def installed_cli(name: str) -> str | None:
    """The newest complete shim for ``name`` under ``$BOSUN_CLI_CACHE`` (default ~/.cache/bosun/clis)."""
    import os
    from pathlib import Path

    cache = Path(os.environ.get("BOSUN_CLI_CACHE") or Path.home() / ".cache" / "bosun" / "clis")
    try:
        shims = [p for p in cache.glob(f"cli-*/shims/{name}") if (p.parent.parent / ".complete").exists()]
    except OSError:
        return None
    if not shims:
        return None
    return str(max(shims, key=lambda p: p.stat().st_mtime))


def cli_version(binary: str, args: tuple[str, ...] = ("--version",), timeout: float = 20.0) -> str | None:
    """First version-looking token the CLI prints, or None when it cannot be run.

    Starting a Node CLI costs most of a second, and every pre-flight check asks: the answer is cached
    per binary (its resolved path, size and modification time) in bosun's cache directory.
    """
    import re

    from bosun.proc import run_quick

    key = _version_key(binary, args)
    cached = _version_cache().get(key) if key else None
    if cached:
        return str(cached)
    try:
        res = run_quick([binary, *args], timeout=timeout)
    except (OSError, subprocess.SubprocessError, ValueError):  # a broken CLI is reported by doctor, not raised
        return None
    m = re.search(r"\d+\.\d+\.\d+[\w.-]*", res.stdout + res.stderr)
    version = m.group(0) if m else None
    if version and key:
        _save_version(key, version)
    return version


def _version_key(binary: str, args: tuple[str, ...]) -> str | None:
    import os

    try:
        real = os.path.realpath(binary)
        st = os.stat(real)
    except OSError:
        return None
    return f"{real}|{st.st_size}|{st.st_mtime_ns}|{' '.join(args)}"


def _version_file() -> Any:
    from bosun.core.paths import cache_dir

    return cache_dir() / "cli-versions.json"


def _version_cache() -> dict[str, Any]:
    import json

    try:
        data = json.loads(_version_file().read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    versions = data.get("versions") if isinstance(data, dict) else None
    return versions if isinstance(versions, dict) else {}  # an older layout is rebuilt on the next check


def _save_version(key: str, version: str) -> None:
    import json

    from bosun.core.fileio import write_text_atomic

    data = _version_cache()
    data[key] = version
    try:
        path = _version_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps({"format_version": 1, "versions": data}, indent=0))
    except OSError:
        pass  # a read-only cache only costs the next check a CLI start


def version_tuple(v: str | None) -> tuple[int, ...]:
    import re

    if not v:
        return ()
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])
