"""``CliWorker``: the one shape of every adapter that drives an external CLI.

A CLI module declares a ``CliSpec`` (label, binary, npm package, minimum version, what it enforces and
cannot) and a ``CliWorker`` subclass with three functions, ``build_argv``, ``build_env`` and
``make_parser``; the base owns ``run()`` and ``describe()``. Optional hooks: ``stop_condition`` (stop
the worker early, e.g. on provider errors the CLI retries silently), ``after_run`` (turn what the CLI
left behind into events or a better verdict), ``unenforced`` (safety rules this run could not
enforce) and ``problems`` (profile checks of its own for ``bosun doctor``).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from bosun.core.fileio import write_text_atomic
from bosun.workers.base import ErrorClass, Usage, WorkerContext, WorkerInfo, WorkerResult, ev_error
from bosun.workers.cli_base import cli_version, resolve_binary, run_cli, unset_variable, version_tuple
from bosun.workers.jsonlines import JsonLinesParser

if TYPE_CHECKING:
    from bosun.core.config import Profile


@dataclass
class CliSpec:
    """What bosun knows about one CLI before running it."""

    label: str  # "Codex"
    default_binary: str  # "codex"
    package: str  # "@openai/codex"
    min_version: str
    enforces: list[str] = field(default_factory=list)
    cannot_enforce: list[str] = field(default_factory=list)
    # What the CLI cannot enforce in a run that may edit (reported per attempt as ``unenforced``).
    unenforced_when_editing: list[str] = field(default_factory=list)
    needs_key: bool = True  # runs only with the profile's key (no interactive login)
    install_note: str = ""  # appended to the "not found" advice (e.g. a Node version it needs)
    old_note: str = ""  # appended to the "older than" problem
    # The argv that tells the CLI a reasoning effort level, one of its row's ``effort_levels`` in
    # bosun.core.adapters (None: the CLI has no such setting; the profile decides for CLIs that take it
    # from the config bosun writes).
    effort_args: Callable[[str, Profile], list[str]] | None = None


class CliWorker:
    """The ``Worker`` of a CLI adapter. Subclasses set ``name`` and ``spec`` and the three builders."""

    name: ClassVar[str]
    spec: ClassVar[CliSpec]

    # -- what a CLI module supplies ----------------------------------------------------------------
    def build_argv(self, ctx: WorkerContext, binary: str) -> list[str]:
        raise NotImplementedError

    def build_env(self, ctx: WorkerContext) -> dict[str, str]:
        raise NotImplementedError

    def make_parser(self, ctx: WorkerContext) -> JsonLinesParser:
        raise NotImplementedError

    # -- optional hooks -----------------------------------------------------------------------------
    def stop_condition(
        self, ctx: WorkerContext, env: dict[str, str], parser: JsonLinesParser
    ) -> Callable[[], bool] | None:
        """Replaces ``ctx.should_stop`` (so it must consult it: ``either(check, ctx.should_stop)``): polled
        while the worker runs, True stops it (reported as cancelled, then ``after_run``)."""
        return None

    def after_run(self, ctx: WorkerContext, parser: JsonLinesParser, result: WorkerResult) -> WorkerResult:
        return result

    def unenforced(self, ctx: WorkerContext) -> list[str]:
        return list(self.spec.unenforced_when_editing) if ctx.allowed.edit else []

    def problems(self, profile: Profile) -> list[str]:
        return []

    def cache_dirs(self, profile: Profile) -> list[Path]:
        """Directories the CLI keeps across runs of this profile (writable under the sandbox)."""
        return []

    def binary(self, profile: Profile) -> str | None:
        """The program to run: the profile's ``binary``, else the spec's on PATH or among the pinned CLIs."""
        return resolve_binary(profile.binary, self.spec.default_binary)

    def stdin(self, ctx: WorkerContext) -> bytes:
        return ctx.prompt.encode("utf-8")

    # -- the frame ----------------------------------------------------------------------------------
    def prepare(self, ctx: WorkerContext, binary: str) -> tuple[list[str], dict[str, str], bytes]:
        """argv, env and stdin of one run (``bosun delegate --dry-run`` shows them)."""
        env = self.build_env(ctx)  # first: it may write the configuration the argv points at
        return self.build_argv(ctx, binary), env, self.stdin(ctx)

    def run(self, ctx: WorkerContext) -> WorkerResult:
        started = command_line(self, ctx)
        if started is None:
            return missing_binary(ctx, self.spec)
        argv, env, stdin = started
        parser = self.make_parser(ctx)
        stop = self.stop_condition(ctx, env, parser)
        run_ctx = dataclasses.replace(ctx, should_stop=stop) if stop else ctx
        if parser.interactive:
            result = run_cli(run_ctx, argv, env, parser, stdin_pipe=parser.attach_stdin)
        else:
            result = run_cli(run_ctx, argv, env, parser, stdin_data=stdin)
        for ev in parser.finish():
            ctx.emit(ev)
        result.final_text = parser.state.final_text
        result = self.after_run(ctx, parser, result)
        if not result.ok and not result.error_message and parser.other:
            result.error_message = parser.other[-1]
        result.unenforced = self.unenforced(ctx)
        return result

    def describe(self, profile: Profile) -> WorkerInfo:
        return describe_cli(self.spec, profile, self.problems(profile))


def command_line(worker: object, ctx: WorkerContext, binary: str | None = None) -> tuple[list[str], dict[str, str], bytes] | None:
    """argv, env and stdin of the process ``worker`` starts for ``ctx``: a run starts it and
    ``bosun delegate --dry-run`` shows it, both from here. None when the worker starts no process of
    its own (native, remote) or its program is not found; ``binary`` stands in for a program that is
    not installed (the dry run still shows the command)."""
    prepare = getattr(worker, "prepare", None)
    find = getattr(worker, "binary", None)
    if prepare is None or find is None:
        return None
    program = find(ctx.profile) or binary
    if not program:
        return None
    argv, env, stdin = prepare(ctx, program)
    return list(argv), env, stdin


def either(first: Callable[[], bool], second: Callable[[], bool] | None) -> Callable[[], bool]:
    def should_stop() -> bool:
        return first() or bool(second and second())

    return should_stop


def describe_cli(spec: CliSpec, profile: Profile, extra_problems: Iterable[str] = ()) -> WorkerInfo:
    info = WorkerInfo(
        min_version=spec.min_version,
        enforces=list(spec.enforces),
        cannot_enforce=list(spec.cannot_enforce),
    )
    info.binary = resolve_binary(profile.binary, spec.default_binary)
    if not info.binary:
        info.problems.append(
            f"{spec.label} not found: {profile.binary or spec.default_binary}{unset_variable(profile.binary)} "
            f"(npm install -g {spec.package}@{spec.min_version}{spec.install_note}, "
            f"or set binary = \"/path/to/{spec.default_binary}\")"
        )
    else:
        info.version = cli_version(info.binary)
        if not info.version:
            info.problems.append(version_problem(info.binary))
        elif version_tuple(info.version) < version_tuple(spec.min_version):
            info.problems.append(f"{spec.label} {info.version} is older than {spec.min_version}{spec.old_note}")
    if not profile.model:
        info.problems.append("set model = ... (the model id at the profile's endpoint)")
    if spec.needs_key and not profile.api_key_env:
        info.problems.append(
            f"set api_key_env = \"...\": bosun runs {spec.label} with its own per-run configuration, "
            "so your interactive login is not used"
        )
    info.problems.extend(extra_problems)
    return info


def version_problem(binary: str) -> str:
    """Why ``BINARY --version`` did not answer, in one line (e.g. an npm launcher whose install script never ran)."""
    from bosun.proc import run_quick

    try:
        res = run_quick([binary, "--version"], timeout=20)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:  # reported by doctor, not raised
        return f"could not run `{binary} --version`: {exc}"
    text = " ".join((res.stderr or res.stdout or "").split())[:300]
    if "postinstall" in text:
        return (f"{binary} is npm's placeholder launcher (installed without install scripts): run the package's "
                "postinstall, or set binary = the platform binary (node_modules/opencode-linux-x64/bin/opencode)")
    return f"could not run `{binary} --version`" + (f": {text}" if text else "")


def missing_binary(ctx: WorkerContext, spec: CliSpec) -> WorkerResult:
    msg = (
        f"{spec.label} not found ({ctx.profile.binary or spec.default_binary}); "
        f"install {spec.package} >= {spec.min_version} or set binary = ... in the profile"
    )
    ctx.emit(ev_error(msg, ErrorClass.permanent))
    return WorkerResult(status="failed", error_class=ErrorClass.permanent, error_message=msg)


def profile_key(ctx: WorkerContext) -> str | None:
    """The value of the profile's key variable, from the worker env (never from bosun's own env)."""
    name = ctx.profile.api_key_env
    return ctx.env.get(name) if name else None


# ---------------------------------------------------------------------------------------------
# session usage totals (CLIs that report a resumed session's cumulative usage)

_USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")


def load_usage_total(path: Path, session_id: str | None) -> Usage | None:
    """The cumulative usage bosun already counted for ``session_id`` (CLIs that report session totals)."""
    if not session_id:
        return None
    try:
        saved = json.loads(path.read_text())["sessions"][session_id]
        return Usage(**{k: int(saved.get(k) or 0) for k in _USAGE_KEYS})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save_usage_total(path: Path, session_id: str | None, total: Usage) -> None:
    if not session_id:
        return
    try:
        saved = json.loads(path.read_text()).get("sessions")
        if not isinstance(saved, dict):
            saved = {}
    except (OSError, ValueError, AttributeError):
        saved = {}
    saved[session_id] = {k: getattr(total, k) for k in _USAGE_KEYS}
    try:
        write_text_atomic(path, json.dumps({"format_version": 1, "sessions": saved}))
    except OSError:
        pass  # the next resume counts the session's earlier usage again: an overcount, never a failure


def usage_copy(total: Usage) -> Usage:
    return Usage(**{k: getattr(total, k) for k in _USAGE_KEYS})
