"""The ``opencode`` adapter: OpenCode (opencode-ai) as a worker.

bosun never reads or writes the user's OpenCode configuration. Everything OpenCode needs arrives in
``OPENCODE_CONFIG_CONTENT``: one provider (``bosun``) pointing at the profile's endpoint, with the key
taken from the profile's key variable through OpenCode's ``{env:VAR}`` substitution (the key never
appears in a file or on argv), and one agent (``bosun``) whose permission rules encode the task mode.
OpenCode's permission rules are evaluated "last matching rule wins", so every set starts with
``"*": "deny"`` and ends with the deny rules for the shell. HOME is the run's own directory, so
sessions, logs and caches stay in the run directory.

The prompt goes on stdin (``opencode run`` reads stdin when it is not a terminal). Events come from
``--format json``: ``step_start`` (one per model turn), ``text``, ``tool_use``, ``step_finish`` (usage of
that step) and ``error``. ``OpenCodeParser`` and ``build_opencode_config`` are shared with the Kilo
adapter (an OpenCode fork with the same event shape).

OpenCode retries rate limits and server errors itself, with backoff, up to five times (over a minute
without a Retry-After header) and prints nothing while it waits. The retries are visible only in its log
file (``$HOME/.local/share/opencode/log``); the adapter watches that log and stops the worker once the
provider has refused it ``PROVIDER_ERRORS_BEFORE_STOP`` times, so the failure is classified (rate_limited,
quota, transient...) and the fallback chain moves on in seconds.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.workers.base import (
    FALLBACK_CLASSES,
    ErrorClass,
    Usage,
    WorkerContext,
    WorkerInfo,
    WorkerResult,
    as_count,
    as_dict,
    ev_error,
    ev_message,
    ev_session,
    ev_tool_call,
    ev_tool_result,
    ev_usage,
)
from bosun.workers.classify import classify_text, parse_retry_after
from bosun.workers.cli_base import ParseState, cli_version, note_error, resolve_binary, run_cli, version_tuple
from bosun.workers.policy import SHELL_DENY, verify_commands

if TYPE_CHECKING:
    from bosun.config import Profile

MIN_VERSION = "1.18.0"
PROVIDER_ID = "bosun"
AGENT_NAME = "bosun"

# The provider packages bundled in the OpenCode binary, by profile.api.
AI_SDK_PACKAGES = {
    None: "@ai-sdk/openai-compatible",
    "openai": "@ai-sdk/openai-compatible",
    "responses": "@ai-sdk/openai",
    "anthropic": "@ai-sdk/anthropic",
    "gemini": "@ai-sdk/google",
}

# Read rules: files that usually hold secrets are refused even inside the worktree.
READ_RULES = {"*": "allow", "*.env": "deny", "*.env.*": "deny", "*.env.example": "allow", "*.env.sample": "allow"}

OPENCODE_ENV_FLAGS = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",  # no opencode.json, .opencode/ or AGENTS.md from the repo
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",  # no ~/.claude prompts or skills
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_EMBEDDED_WEB_UI": "1",
    "OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER": "1",
}

# Stop a worker whose provider refused it this many times (OpenCode keeps retrying, silently).
PROVIDER_ERRORS_BEFORE_STOP = 3
# OpenCode's own refusals (DeniedError, RejectedError): a filesystem "Permission denied" is a plain failure.
DENIED_RE = re.compile(r"specified a rule which prevents you from using|user rejected permission to use", re.I)


# ---------------------------------------------------------------------------------------------
# configuration


def shell_deny_patterns(commands: Iterable[str] = SHELL_DENY) -> dict[str, str]:
    rules: dict[str, str] = {}
    for cmd in commands:
        rules[f"{cmd} *"] = "deny"
        rules[f"*/{cmd} *"] = "deny"
    return rules


def permission_rules(read_only: bool, allow_commands: Sequence[str] = ()) -> dict[str, Any]:
    """OpenCode permission rules for one mode, in evaluation order (the last matching rule wins).

    Code mode: read, search, edit and the shell, minus ``SHELL_DENY``. Read-only modes: read and search;
    the shell only for ``allow_commands`` (e.g. the task's verify commands in test mode), still minus
    ``SHELL_DENY``. Everything else (web, subagents, skills, questions, paths outside the worktree) is
    denied; a rule OpenCode would "ask" about is auto-rejected by ``opencode run`` anyway.
    """
    bash: dict[str, str]
    if read_only:
        bash = {"*": "deny"}
        for cmd in allow_commands:
            cmd = " ".join(cmd.split())
            if cmd:
                bash[f"{cmd} *"] = "allow"
    else:
        bash = {"*": "allow"}
    bash.update(shell_deny_patterns())
    rules: dict[str, Any] = {
        "*": "deny",
        "read": dict(READ_RULES),
        "grep": "allow",
        "glob": "allow",
        "list": "allow",
        "todowrite": "allow",
        "edit": "deny" if read_only else "allow",
        "bash": bash if (not read_only or allow_commands) else "deny",
        "external_directory": {"*": "deny"},
    }
    return rules


def build_opencode_config(
    profile: Profile,
    mode_read_only: bool,
    *,
    allow_commands: Sequence[str] = (),
    provider_id: str = PROVIDER_ID,
    agent_name: str = AGENT_NAME,
    agent_prompt: str | None = None,
) -> dict[str, Any]:
    """The whole OpenCode (or Kilo) configuration for one attempt, as a JSON-able dict.

    With ``profile.base_url`` the config defines one provider, ``provider_id``, with the profile's model;
    its key is ``{env:API_KEY_ENV}`` (OpenCode substitutes it when it loads the config). Without a
    base_url, ``profile.model`` must name one of OpenCode's own providers ("provider/model").
    """
    perms = permission_rules(mode_read_only, allow_commands)
    cfg: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "snapshot": False,
        "formatter": False,
        "lsp": False,
        "mcp": {},
        "plugin": [],
        "instructions": [],
        "permission": perms,  # also binds OpenCode's own agents (subagents, compaction)
        "default_agent": agent_name,
        "agent": {
            agent_name: {
                "description": "bosun worker",
                "mode": "primary",
                "permission": perms,
                **({"prompt": agent_prompt} if agent_prompt else {}),
            },
        },
    }
    model = opencode_model(profile, provider_id)
    if model:
        cfg["model"] = model
        cfg["small_model"] = model
    if profile.base_url:
        options: dict[str, Any] = {"baseURL": profile.base_url}
        if profile.api_key_env:
            options["apiKey"] = "{env:" + profile.api_key_env + "}"
        model_id = profile.model or "default"
        limit: dict[str, int] = {"context": 128000, "output": 8192}
        if profile.max_tokens:
            limit["output"] = profile.max_tokens
        cfg["provider"] = {
            provider_id: {
                "npm": AI_SDK_PACKAGES.get(profile.api, AI_SDK_PACKAGES[None]),
                "name": f"bosun profile {profile.name}" if profile.name else "bosun",
                "options": options,
                "models": {model_id: {"name": model_id, "tool_call": True, "limit": limit}},
            }
        }
        cfg["enabled_providers"] = [provider_id]
    return cfg


def opencode_model(profile: Profile, provider_id: str = PROVIDER_ID) -> str | None:
    """The ``-m`` value: ``bosun/<model>`` for a profile endpoint, else the profile's own "provider/model"."""
    if profile.base_url:
        return f"{provider_id}/{profile.model or 'default'}"
    return profile.model


def opencode_env(base_env: dict[str, str], config: dict[str, Any], prefix: str = "OPENCODE") -> dict[str, str]:
    env = dict(base_env)
    for key, value in OPENCODE_ENV_FLAGS.items():
        env[prefix + key[len("OPENCODE"):]] = value
    env[f"{prefix}_CONFIG_CONTENT"] = json.dumps(config, separators=(",", ":"))
    return env


# ---------------------------------------------------------------------------------------------
# the stream


def opencode_usage(tokens: dict[str, Any], cost: Any = None) -> Usage:
    """OpenCode reports input without cache reads/writes and output without reasoning: add them back."""
    cache = tokens.get("cache") or {}
    read, write = as_count(cache.get("read")), as_count(cache.get("write"))
    reasoning = as_count(tokens.get("reasoning"))
    return Usage(
        input_tokens=as_count(tokens.get("input")) + read + write,
        cached_input_tokens=read,
        output_tokens=as_count(tokens.get("output")) + reasoning,
        reasoning_tokens=reasoning,
        cost_usd=float(cost) if isinstance(cost, int | float) and cost else None,
    )


def classify_api_error(status: int | None, text: str) -> ErrorClass:
    found = classify_text(text)
    if status in (401, 403):
        return found if found in (ErrorClass.auth, ErrorClass.quota) else ErrorClass.auth
    if status == 402:
        return ErrorClass.quota
    if status == 429:
        return found if found in (ErrorClass.quota, ErrorClass.rate_limited) else ErrorClass.rate_limited
    if status == 404 and found is None:
        return ErrorClass.model_unavailable
    if status is not None and status >= 500 and found is None:
        return ErrorClass.transient
    return found or ErrorClass.permanent


class OpenCodeParser:
    """Maps ``opencode run --format json`` lines (and Kilo's) to normalized events."""

    def __init__(self) -> None:
        self.state = ParseState()
        self.other: list[str] = []  # non-JSON lines, kept short, for error messages

    def feed(self, line: str) -> list[dict[str, Any]]:
        line = line.strip()
        if not line:
            return []
        try:
            obj = json.loads(line) if line.startswith("{") else None
        except json.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            self.other = (self.other + [line[:500]])[-20:]
            return []
        out: list[dict[str, Any]] = []
        sid = obj.get("sessionID")
        if sid and self.state.session_id is None:
            self.state.session_id = str(sid)
            out.append(ev_session(str(sid)))
        kind = obj.get("type")
        part = as_dict(obj.get("part"))
        if kind == "step_start":
            self.state.steps += 1
        elif kind == "text":
            text = str(part.get("text") or "")
            if text.strip():
                self.state.final_text = text
                out.append(ev_message(text))
        elif kind == "tool_use":
            out.extend(self._tool(part))
        elif kind == "step_finish":
            usage = opencode_usage(part.get("tokens") or {}, part.get("cost"))
            self.state.usage.add(usage)
            out.append(ev_usage(usage))
        elif kind == "error":
            out.append(self._error(obj.get("error") or {}))
        return out

    def _tool(self, part: dict[str, Any]) -> list[dict[str, Any]]:
        tool = str(part.get("tool") or "?")
        call_id = part.get("callID") or part.get("id")
        st = part.get("state") or {}
        status = st.get("status")
        events = [ev_tool_call(tool, st.get("input"), call_id)]
        if status == "completed":
            events.append(ev_tool_result(tool, True, st.get("output"), call_id))
        elif status == "error":
            err = str(st.get("error") or "tool failed")
            events.append(ev_tool_result(tool, False, err, call_id, denied=bool(DENIED_RE.search(err))))
        return events

    def _error(self, err: dict[str, Any]) -> dict[str, Any]:
        data = as_dict(err.get("data"))
        name = str(err.get("name") or "error")
        message = str(data.get("message") or err.get("message") or name)
        status = data.get("statusCode")
        status = int(status) if isinstance(status, int | float) else None
        body = str(data.get("responseBody") or "")
        text = " ".join(x for x in (str(status or ""), message, body[:1000]) if x)
        if name == "ProviderAuthError":
            cls = ErrorClass.auth
        elif name in ("MessageAbortedError",):
            cls = ErrorClass.permanent
        else:
            cls = classify_api_error(status, f"{name} {text}")
        headers = as_dict(data.get("responseHeaders"))
        shown = f"{name}: {message}" + (f" (HTTP {status})" if status else "")
        ev = note_error(self.state, shown, cls)
        retry = _retry_after(headers) or parse_retry_after(message)
        if retry:
            self.state.retry_after_s = retry
            ev["retry_after_s"] = retry
        ev["retryable"] = bool(data.get("isRetryable")) if "isRetryable" in data else None
        return ev


def _retry_after(headers: dict[str, Any]) -> float | None:
    low = {str(k).lower(): v for k, v in headers.items()}
    if "retry-after-ms" in low:
        try:
            return float(low["retry-after-ms"]) / 1000.0
        except (TypeError, ValueError):
            pass
    if "retry-after" in low:
        try:
            return float(low["retry-after"])
        except (TypeError, ValueError):
            return None
    return None


# ---------------------------------------------------------------------------------------------
# the provider-error watch (OpenCode's silent retries)


_STREAM_ERROR_RE = re.compile(r'message="?stream error"?.*?error\.error="((?:[^"\\]|\\.)*)"')
_TIMESTAMP_RE = re.compile(r"^timestamp=(\S+)")


class LogWatch:
    """Tails OpenCode's log files for provider errors it is retrying silently.

    ``check()`` is cheap enough to poll from ``should_stop`` (it reads at most every ``interval_s``).
    ``errors`` holds the error texts logged since ``since`` (unix time; default: now); ``tripped`` says
    the worker should be stopped. OpenCode starts a fresh log file on every run, so files are followed
    by inode and re-read from the start when they are replaced or shrink.
    """

    def __init__(
        self,
        log_dir: Path,
        limit: int = PROVIDER_ERRORS_BEFORE_STOP,
        interval_s: float = 0.25,
        since: float | None = None,
    ) -> None:
        self.log_dir = log_dir
        self.limit = limit
        self.interval_s = interval_s
        self.since = time.time() - 1.0 if since is None else since
        self.errors: list[str] = []
        self.pos: dict[Path, tuple[int, int]] = {}  # path -> (inode, offset read up to)
        self.partial: dict[Path, str] = {}
        self._last = 0.0
        self.tripped = False

    def _files(self) -> list[Path]:
        try:
            return sorted(self.log_dir.glob("*.log"))
        except OSError:
            return []

    def check(self, force: bool = False) -> bool:
        now = time.monotonic()
        if self.tripped or (not force and now - self._last < self.interval_s):
            return self.tripped
        self._last = now
        for path in self._files():
            try:
                st = path.stat()
                inode, start = self.pos.get(path, (st.st_ino, 0))
                if inode != st.st_ino or st.st_size < start:
                    start = 0
                    self.partial.pop(path, None)
                if st.st_size <= start:
                    self.pos[path] = (st.st_ino, start)
                    continue
                with path.open("rb") as fh:
                    fh.seek(start)
                    chunk = fh.read(min(st.st_size - start, 1 << 20))
            except OSError:
                continue
            self.pos[path] = (st.st_ino, start + len(chunk))
            text = self.partial.pop(path, "") + chunk.decode("utf-8", "replace")
            lines = text.split("\n")
            if not text.endswith("\n"):
                self.partial[path] = lines.pop()
            for ln in lines:
                self._line(ln)
        if len(self.errors) >= self.limit:
            cls = classify_text(self.errors[-1]) or ErrorClass.transient
            # Only provider trouble another profile might not have; auth and bad requests end on their own.
            self.tripped = cls in FALLBACK_CLASSES
        return self.tripped

    def _line(self, line: str) -> None:
        m = _STREAM_ERROR_RE.search(line)
        if not m:
            return
        ts = _TIMESTAMP_RE.match(line)
        if ts:
            try:
                if datetime.fromisoformat(ts.group(1).replace("Z", "+00:00")).timestamp() < self.since:
                    return  # an earlier run's line
            except ValueError:
                pass
        self.errors.append(m.group(1).replace('\\"', '"'))


def opencode_log_dir(env: dict[str, str]) -> Path:
    data = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")) / ".local" / "share")
    return Path(data) / "opencode" / "log"


def stop_on_provider_errors(
    ctx: WorkerContext, watch: LogWatch
) -> Callable[[], bool]:
    def should_stop() -> bool:
        if watch.check():
            return True
        return bool(ctx.should_stop and ctx.should_stop())

    return should_stop


def finish_after_watch(ctx: WorkerContext, result: WorkerResult, watch: LogWatch, cli: str = "OpenCode") -> WorkerResult:
    """Turn a stop by the log watch (reported as "cancelled" by run_cli) into a classified failure."""
    if not watch.tripped or result.status != "cancelled":
        return result
    last = watch.errors[-1]
    cls = classify_text(last) or ErrorClass.transient
    result.status = "failed"
    result.error_class = cls
    result.error_message = (
        f"provider error ({cls.value}), {len(watch.errors)} times; bosun stopped {cli} instead of waiting "
        f"for more retries: {last}"
    )[:1000]
    result.retry_after_s = parse_retry_after(last)
    ctx.emit(ev_error(result.error_message, cls, retryable=True, retry_after_s=result.retry_after_s))
    return result


# ---------------------------------------------------------------------------------------------
# the adapter


class OpenCodeWorker:
    name = "opencode"

    def argv(self, ctx: WorkerContext, binary: str) -> list[str]:
        prof = ctx.profile
        argv = [binary, "run", "--format", "json", "--pure", "--agent", AGENT_NAME]
        model = opencode_model(prof)
        if model:
            argv += ["-m", model]
        if ctx.resume_session:
            argv += ["--session", ctx.resume_session]
        else:
            argv += ["--title", f"bosun {ctx.run_id}"]  # also saves the title-generation request
        argv += list(prof.extra_args)
        return argv

    def run(self, ctx: WorkerContext) -> WorkerResult:
        binary = resolve_binary(ctx.profile.binary, "opencode")
        if not binary:
            msg = f"OpenCode not found ({ctx.profile.binary or 'opencode'} on PATH); install opencode-ai >= {MIN_VERSION}"
            ctx.emit(ev_error(msg, ErrorClass.permanent))
            return WorkerResult(status="failed", error_class=ErrorClass.permanent, error_message=msg)
        allow = verify_commands(ctx) if ctx.read_only and ctx.task.mode.value == "test" else []
        config = build_opencode_config(ctx.profile, ctx.read_only, allow_commands=allow)
        env = opencode_env(ctx.env, config)
        watch = LogWatch(opencode_log_dir(env))
        wrapped = _with_should_stop(ctx, stop_on_provider_errors(ctx, watch))
        parser = OpenCodeParser()
        result = run_cli(wrapped, self.argv(ctx, binary), env, parser, stdin_data=ctx.prompt.encode("utf-8"))
        result = finish_after_watch(ctx, result, watch)
        if not result.ok and not result.error_message and parser.other:
            result.error_message = parser.other[-1]
        result.unenforced = unenforced(ctx.read_only)
        return result

    def describe(self, profile: Profile) -> WorkerInfo:
        info = WorkerInfo(min_version=MIN_VERSION, enforces=list(ENFORCES), cannot_enforce=list(CANNOT_ENFORCE))
        info.binary = resolve_binary(profile.binary, "opencode")
        if not info.binary:
            info.problems.append(
                f"OpenCode not found: {profile.binary or 'opencode'} (npm install -g opencode-ai, or set binary = ...)"
            )
        else:
            info.version = cli_version(info.binary)
            if not info.version:
                info.problems.append(version_problem(info.binary))
            elif version_tuple(info.version) < version_tuple(MIN_VERSION):
                info.problems.append(f"OpenCode {info.version} is older than {MIN_VERSION}")
        info.problems.extend(profile_problems(profile))
        return info


def profile_problems(profile: Profile) -> list[str]:
    problems = []
    if not profile.model:
        problems.append("set model = ... (with base_url: the model id at that endpoint; without: \"provider/model\")")
    elif not profile.base_url and "/" not in profile.model:
        problems.append("without base_url, model must name one of the CLI's own providers: \"provider/model\"")
    return problems


def version_problem(binary: str) -> str:
    """Why ``BINARY --version`` did not answer, in one line (e.g. an npm launcher whose install script never ran)."""
    from bosun.proc import run_quick

    try:
        res = run_quick([binary, "--version"], timeout=20)
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return f"could not run `{binary} --version`: {exc}"
    text = " ".join((res.stderr or res.stdout or "").split())[:300]
    if "postinstall" in text:
        return (f"{binary} is npm's placeholder launcher (installed without install scripts): run the package's "
                "postinstall, or set binary = the platform binary (node_modules/opencode-linux-x64/bin/opencode)")
    return f"could not run `{binary} --version`" + (f": {text}" if text else "")


ENFORCES = [
    "own HOME and config (OPENCODE_CONFIG_CONTENT; user and project config ignored)",
    "read-only modes: edit and write tools removed, shell denied (test mode: only the verify commands)",
    "shell deny rules for git history/branch/remote commands, network tools, publishing and sudo",
    "no paths outside the worktree (external_directory denied), no .env reads",
    "no web fetch/search, subagents, skills, MCP or plugins",
    "git guard, env allowlist, timeouts (process group kill)",
]
CANNOT_ENFORCE = [
    "shell deny rules match command text: wrappers (bash -c, env, xargs, interpreters) get past them; "
    "bosun's git guard still refuses history changes and the gates still check the diff",
    "the shell is not a filesystem sandbox: in code mode a command can read or write outside the worktree",
]


def unenforced(read_only: bool) -> list[str]:
    if read_only:
        return []
    return ["shell deny rules are text patterns; a wrapped command (bash -c, python -c) is not matched"]


def _with_should_stop(ctx: WorkerContext, should_stop: Callable[[], bool]) -> WorkerContext:
    import dataclasses

    return dataclasses.replace(ctx, should_stop=should_stop)
