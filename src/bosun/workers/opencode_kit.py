"""What OpenCode and its fork Kilo share: configuration, stream parser, worker base.

bosun never reads or writes the user's OpenCode (or Kilo) configuration. Everything the CLI needs
arrives in ``OPENCODE_CONFIG_CONTENT`` (``KILO_CONFIG_CONTENT``): one provider (``bosun``) pointing at the
profile's endpoint, with the key taken from the profile's key variable through the CLI's ``{env:VAR}``
substitution (the key never appears in a file or on argv), and one agent (``bosun``) whose permission
rules encode what the run's mode allows. The rules are evaluated "last matching rule wins", so every set
starts with ``"*": "deny"`` and ends with the deny rules for the shell. HOME is the run's own directory,
so sessions, logs and caches stay in the run directory.

The prompt goes on stdin (``run`` reads stdin when it is not a terminal). Events come from
``--format json``: ``step_start`` (one per model turn), ``text``, ``tool_use``, ``step_finish`` (usage of
that step) and ``error``.

Both CLIs retry provider errors silently; the worker stops them through ``opencode_logwatch``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from bosun.workers.base import (
    ErrorClass,
    Usage,
    WorkerContext,
    WorkerResult,
    as_count,
    as_dict,
    ev_message,
    ev_session,
    ev_tool_call,
    ev_tool_result,
    ev_usage,
)
from bosun.workers.classify import classify_http, parse_retry_after
from bosun.workers.cli_base import note_error
from bosun.workers.cli_cache import profile_cache, tidy
from bosun.workers.cli_worker import CliWorker, either
from bosun.workers.jsonlines import JsonLinesParser
from bosun.workers.opencode_logwatch import LogWatch, finish_after_watch, log_dir
from bosun.workers.policy import SHELL_DENY, SHELL_TEXT_RULES

if TYPE_CHECKING:
    from bosun.core.config import Profile

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
                "models": {model_id: {"name": model_id, "tool_call": True, "limit": limit,
                                      # the AI SDK sends it as the request's reasoning effort
                                      **({"options": {"reasoningEffort": profile.effort}} if profile.effort else {})}},
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


class OpenCodeParser(JsonLinesParser):
    """Maps ``opencode run --format json`` lines (and Kilo's) to normalized events."""

    watch: LogWatch | None = None  # the provider-error watch of the run, when the worker set one

    def on_object(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
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
            cls = classify_http(status, f"{name} {text}")
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
# the worker base


class OpenCodeFamilyWorker(CliWorker):
    """OpenCode's frame: argv, config in the environment, the parser, the log watch, what is unenforced.

    A subclass sets ``name``, ``spec``, ``env_prefix`` (the CLI's variable prefix) and ``log_name`` (its
    directory under ``~/.local/share``), and may adjust ``config`` and ``extra_env``.
    """

    env_prefix: ClassVar[str] = "OPENCODE"
    log_name: ClassVar[str] = "opencode"
    # Whether ``run`` starts a server of its own on loopback and talks to it (Kilo does): it then gets
    # the port the sandbox lets it connect to, instead of a random one it could not reach.
    serves_itself: ClassVar[bool] = False

    def config(self, ctx: WorkerContext) -> dict[str, Any]:
        allowed = ctx.allowed
        return build_opencode_config(ctx.profile, not allowed.edit, allow_commands=allowed.commands)

    def extra_env(self) -> dict[str, str]:
        return {}

    def serves_on_loopback(self, profile: Profile) -> bool:
        """Whether its runs need a port of their own (``WorkerContext.own_port``)."""
        return self.serves_itself

    def build_argv(self, ctx: WorkerContext, binary: str) -> list[str]:
        prof = ctx.profile
        argv = [binary, "run", "--format", "json", "--pure", "--agent", AGENT_NAME]
        model = opencode_model(prof)
        if model:
            argv += ["-m", model]
        if ctx.resume_session:
            argv += ["--session", ctx.resume_session]
        else:
            argv += ["--title", f"bosun {ctx.run_id}"]  # also saves the title-generation request
        if self.serves_itself and ctx.own_port:
            argv += ["--port", str(ctx.own_port)]
        argv += list(prof.extra_args)
        return argv

    def build_env(self, ctx: WorkerContext) -> dict[str, str]:
        env = opencode_env(ctx.env, self.config(ctx), prefix=self.env_prefix)
        env.update(self.extra_env())
        # The CLI's global config dir only ever receives its own plugin-dependency install (bosun's
        # config arrives in the environment) and its cache dir holds downloads: both are the
        # profile's, kept across runs, so the install happens once rather than at every start.
        cache = profile_cache(ctx.profile)
        config_home, cache_home = cache / "config", cache / "cache"
        tidy(config_home / self.log_name)
        for directory in (config_home, cache_home):
            directory.mkdir(parents=True, exist_ok=True)
        env.update(XDG_CONFIG_HOME=str(config_home), XDG_CACHE_HOME=str(cache_home))
        return env

    def cache_dirs(self, profile: Profile) -> list[Path]:
        return [profile_cache(profile)]

    def make_parser(self, ctx: WorkerContext) -> OpenCodeParser:
        return OpenCodeParser()

    def stop_condition(self, ctx: WorkerContext, env: dict[str, str], parser: JsonLinesParser) -> Callable[[], bool]:
        watch = LogWatch(log_dir(env, self.log_name))
        assert isinstance(parser, OpenCodeParser)
        parser.watch = watch
        return either(watch.check, ctx.should_stop)

    def after_run(self, ctx: WorkerContext, parser: JsonLinesParser, result: WorkerResult) -> WorkerResult:
        assert isinstance(parser, OpenCodeParser) and parser.watch is not None
        return finish_after_watch(ctx, result, parser.watch, cli=self.spec.label)

    def problems(self, profile: Profile) -> list[str]:
        # The spec's describe already asks for a model when there is none.
        return [p for p in profile_problems(profile) if not p.startswith("set model")]


def profile_problems(profile: Profile) -> list[str]:
    problems = []
    if not profile.model:
        problems.append("set model = ... (with base_url: the model id at that endpoint; without: \"provider/model\")")
    elif not profile.base_url and "/" not in profile.model:
        problems.append("without base_url, model must name one of the CLI's own providers: \"provider/model\"")
    return problems


# Reasoning effort: with a profile endpoint it travels in the config bosun writes (the model's
# ``reasoningEffort`` option); with the CLI's own providers it is a ``--variant``.
def variant_args(level: str, profile: Profile) -> list[str]:
    return [] if profile.base_url else ["--variant", level]


UNENFORCED_WHEN_EDITING = [SHELL_TEXT_RULES]
CANNOT_ENFORCE = [
    "shell deny rules match command text: wrappers (bash -c, env, xargs, interpreters) get past them; "
    "bosun's git guard still refuses history changes and the gates still check the diff",
    "the shell is not a filesystem sandbox: in code mode a command can read or write outside the worktree",
]

