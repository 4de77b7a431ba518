"""Settings and worker profiles.

Sources, lowest to highest precedence: built-in defaults < user config (``BOSUN_CONFIG`` or the
platform config dir, ``config.toml``) < the repo's ``bosun.toml`` < environment (``BOSUN_*``) < CLI
flags. Tables merge key by key; a profile defined in both files is merged field by field.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bosun.core import settings_cache
from bosun.core.adapters import unknown_adapter
from bosun.core.errors import BadInput
from bosun.core.review_config import ReviewConfig
from bosun.core.settings_cache import unknown_profile
from bosun.core.worktree_config import PoolConfig, WorktreeConfig

# Files that change how git reads the tree or what Python runs at start-up, before any test: always
# locked, and each judged by its own gate (GIT_RULES_CHANGED, PYTHON_STARTUP_CHANGED) rather than by
# LOCKED_PATH_CHANGED, so the verdict names what the worker did.
GIT_RULE_FILES = (".gitattributes", ".gitmodules", ".gitignore")
PYTHON_STARTUP_FILES = ("sitecustomize.py", "usercustomize.py", "*.pth")
HARNESS_LOCKED = GIT_RULE_FILES + PYTHON_STARTUP_FILES

# Paths a worker may never change, whatever the task says. Test-runner config inside shared files
# (pyproject's [tool.pytest*], setup.cfg's pytest section, package.json's execution keys) is guarded
# by content-aware gates rather than whole-file globs, so a worker can still add a dependency.
ALWAYS_LOCKED = (
    ".git/**",
    ".ci/**",
    ".github/workflows/**",
    ".gitlab-ci.yml",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "tox.toml",
    "noxfile.py",
    "conftest.py",
    "jest.config.*",
    "vitest.config.*",
    "vitest.workspace.*",
    ".mocharc*",
    "karma.conf.*",
    ".env*",
    "credentials*",
    "*.credentials",
    "secrets.*",
    "*.secret",
    "*.secrets",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    "bosun.toml",
    *HARNESS_LOCKED,
)
# Glob semantics (bosun.core.globs): a pattern without "/" matches a file's name at any depth; "**"
# spans directories; a pattern naming a directory covers everything below it; a leading "./" anchors
# a name at the root only.


class Prices(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(default=0.0, ge=0)
    cached_input: float = Field(default=0.0, ge=0)
    output: float = Field(default=0.0, ge=0)


# Parent-side defaults: Claude Sonnet-class list prices, USD per million tokens, as of 2026-11-01.
DEFAULT_PARENT_PRICES = Prices(input=3.0, cached_input=0.30, output=15.0)
PARENT_PRICES_DATE = "2026-11-01"


class Profile(BaseModel):
    """How to reach one worker: an adapter, a model, an endpoint, prices and limits."""

    model_config = ConfigDict(extra="forbid")
    name: str = ""
    adapter: str = Field(default="command", description="one of bosun.core.adapters.ADAPTERS (docs/workers.md)")
    model: str | None = None
    command: list[str] = Field(default_factory=list, description="argv of a `command` worker, or of an `acp` agent")
    base_url: str | None = None
    api: Literal["openai", "responses", "anthropic", "gemini"] | None = None
    api_key_env: str | None = Field(default=None, description="name of the env var holding the key")
    env: list[str] = Field(default_factory=list, description="extra env var names passed to the worker")
    binary: str | None = Field(default=None, description="path or name of the CLI binary")
    extra_args: list[str] = Field(default_factory=list)
    prices: Prices = Field(default_factory=Prices)
    timeout_s: float = Field(default=1800, gt=0)
    idle_timeout_s: float | None = Field(default=None, gt=0)
    max_steps: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = Field(
        default=None, description="reasoning effort; snapped to what the CLI and model accept")
    fallbacks: list[str] = Field(default_factory=list)
    escalate_to: str | None = Field(
        default=None, description="the profile a task goes to when this one's repair rounds end without a "
        "landable change (the next rung of the ladder)",
    )
    tier: Literal["cheap", "standard", "premium"] = "cheap"
    strengths: list[str] = Field(default_factory=list)
    self_review: bool = False

    @field_validator("adapter")
    @classmethod
    def _known_adapter(cls, v: str) -> str:
        problem = unknown_adapter(v)
        if problem:
            raise ValueError(problem)
        return v

    def key_env_names(self) -> list[str]:
        names = list(self.env)
        if self.api_key_env:
            names.append(self.api_key_env)
        return names


class Notify(BaseModel):
    """What to run when a run stops (verified, rejected, failed, cancelled, integrated ...)."""

    model_config = ConfigDict(extra="forbid")
    command: list[str] = Field(default_factory=list, description="argv run with the result JSON on stdin")
    bell: bool = False
    desktop: bool = False
    timeout_s: float = Field(default=30, gt=0)


class Budget(BaseModel):
    """Spending caps in USD (unset: no cap). Checked before a worker starts, enforced while it runs."""

    model_config = ConfigDict(extra="forbid")
    per_task_usd: float | None = Field(default=None, gt=0, description="most one run's worker may spend")
    per_plan_usd: float | None = Field(default=None, gt=0, description="most all runs of one plan may spend")
    daily_usd: float | None = Field(default=None, gt=0, description="this repo's runs, per UTC day")
    monthly_usd: float | None = Field(default=None, gt=0, description="this repo's runs, per UTC month")
    global_daily_usd: float | None = Field(default=None, gt=0, description="every repo's runs, per UTC day")
    global_monthly_usd: float | None = Field(default=None, gt=0, description="every repo's runs, per UTC month")
    warn_at: float = Field(default=0.8, gt=0, le=1, description="fraction of a cap that records a warning")


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    default_profile: str | None = None
    max_concurrent_runs: int = Field(default=4, ge=1, le=32)
    locked: list[str] = Field(default_factory=list, description="extra always-locked globs")
    reverify_on_integrate: bool = True
    cleanup_after_integrate: bool = True  # remove the worktree and branch once landed and reported
    baseline: Literal["auto", "off"] = Field(
        default="auto", description="run the verify commands on the start tree too, for the fail-to-pass proof"
    )
    self_review_min_diff_lines: int = Field(default=40, ge=0, description="skip self-review below this many changed lines")
    review: ReviewConfig | None = Field(default=None, description="cross-review of every code run (a task's review: "
                                        "replaces it)")
    repair: int = Field(default=1, ge=0, le=3, description="repair rounds per profile of a code run whose change is "
                        "refused for the work itself (a task's repair: replaces it)")
    parent_prices: Prices = Field(default_factory=lambda: DEFAULT_PARENT_PRICES.model_copy())
    profiles: dict[str, Profile] = Field(default_factory=dict)
    callers: dict[str, str] = Field(default_factory=dict)
    notify: Notify = Field(default_factory=Notify)
    sandbox: Literal["auto", "required", "off"] = Field(
        default="auto", description="kernel sandbox for workers and verify commands: on where the machine "
        "allows it, required (every property it promises enforced, or the worker does not start), or off"
    )
    sandbox_reads: Literal["all", "worktree"] = Field(
        default="worktree", description="what a sandboxed worker may read: not the user's repository outside "
        "its worktree (git metadata excepted), bosun's state or credential stores (worktree), or everything (all)"
    )
    sandbox_hide: list[str] = Field(
        default_factory=list, description="more paths no sandboxed process may read (~ expands), beside the "
        "credential stores bosun hides"
    )
    network: Literal["any", "provider-only"] = Field(
        default="provider-only", description="TCP connects a sandboxed worker may make: only to its provider's "
        "port(s) (and network_ports), or any; under provider-only verify commands get a loopback of their own"
    )
    network_ports: list[Annotated[int, Field(ge=1, le=65535)]] = Field(
        default_factory=list, description="more TCP ports a sandboxed worker may connect to under "
        "network = \"provider-only\""
    )
    budget: Budget = Field(default_factory=Budget)
    worktree: WorktreeConfig = Field(default_factory=WorktreeConfig)
    pool: PoolConfig = Field(default_factory=PoolConfig)
    remote: str | None = Field(
        default=None, description="NATS URL of a remote worker pool; defines the profile `remote` (docs/remote.md)"
    )

    @field_validator("profiles")
    @classmethod
    def _name_profiles(cls, v: dict[str, Profile]) -> dict[str, Profile]:
        for name, prof in v.items():
            prof.name = name
        for name in v:
            problem = ladder_problem(name, v)
            if problem:
                raise ValueError(problem)
        return v

    @model_validator(mode="after")
    def _remote_profile(self) -> Settings:
        # `remote = "nats://..."` is shorthand for a profile named "remote" on the pool "default".
        if self.remote and "remote" not in self.profiles:
            self.profiles["remote"] = Profile(name="remote", adapter="remote", base_url=self.remote, model="default")
        return self

    def locked_globs(self) -> list[str]:
        return list(ALWAYS_LOCKED) + list(self.locked)

    def profile(self, name: str | None) -> Profile:
        try:
            return self.profiles[name]  # type: ignore[index]  # None is an unknown profile like any other
        except KeyError:
            raise unknown_profile(name, self.profiles) from None


def ladder_problem(start: str, profiles: dict[str, Profile]) -> str | None:
    """What is wrong with the escalation ladder that starts at ``start``: a rung naming an unknown
    profile, or a ladder that comes back to a rung (it would climb forever)."""
    seen = [start]
    name = profiles[start].escalate_to
    while name is not None:
        if name not in profiles:
            known = ", ".join(sorted(profiles)) or "none"
            return f"profile {seen[-1]}: escalate_to = {name!r} names no profile (profiles: {known})"
        if name in seen:
            return "escalate_to makes a cycle: " + " -> ".join([*seen[seen.index(name):], name])
        seen.append(name)
        name = profiles[name].escalate_to
    return None


def ladder(settings: Settings, start: str) -> list[Profile]:
    """The rungs from ``start`` up: the profile, then each ``escalate_to`` in turn (checked acyclic at load)."""
    rungs = [settings.profile(start)]
    while rungs[-1].escalate_to:
        rungs.append(settings.profile(rungs[-1].escalate_to))
    return rungs


def _read_toml(path: Path, data: bytes | None) -> dict[str, Any]:
    """``data`` (the bytes of ``path``, None if it does not exist) parsed."""
    if data is None:
        return {}
    try:
        return tomllib.loads(data.decode())
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: invalid TOML: {exc}", "fix the syntax of that file", code="BAD_CONFIG") from None


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_settings(repo: Path | None = None, overrides: dict[str, Any] | None = None, *, keep: bool = False) -> Settings:
    """The settings of ``repo`` (None: the user config alone), validated; ``keep``: also store them in
    the settings cache, where the verbs that only show settings find them (bosun.core.settings_cache)."""
    # Each file is read once: the bytes parsed are the bytes the settings cache is keyed by.
    contents = [(path, settings_cache.read_config(path)) for path in settings_cache.config_files(repo)]
    layers = [(str(path), _read_toml(path, data)) for path, data in contents]
    env = settings_cache.env_layer()
    layers.append(("environment", env))
    layers.append(("command line", overrides or {}))
    merged: dict[str, Any] = {}
    for _, layer in layers:
        merged = _merge(merged, layer)
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        parts = [str(p) for p in err.get("loc", ())]
        loc = ".".join(parts)
        where = _locate(parts, layers) or "in " + ", ".join(src for src, layer in layers if layer)
        if err.get("type") == "extra_forbidden":
            msg = f"unknown config key {loc!r} ({where})"
            hint = "docs/configuration.md lists every key; check the spelling"
        else:
            text = str(err.get("msg", "")).removeprefix("Value error, ")  # our own validators' sentences
            msg = f"config {loc}: {text} ({where})"
            hint = "docs/configuration.md describes every key and its allowed values"
        raise BadInput(msg, hint, code="BAD_CONFIG") from None
    if keep and not overrides:
        settings_cache.store(contents, env, settings.model_dump(mode="json"))
    return settings


def _locate(parts: list[str], layers: list[tuple[str, dict[str, Any]]]) -> str | None:
    """``file:line`` of the offending key, searched in the highest-precedence file that sets it."""
    import re

    key = next((p for p in reversed(parts) if not p.isdigit()), None)
    if key is None:
        return None
    table = ".".join(parts[:-1]) if len(parts) > 1 else None
    for source, layer in reversed(layers):
        path = Path(source)
        if not layer or not path.is_file():
            continue
        current = None
        for no, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            header = re.match(r"\s*\[+\s*([^\]]+?)\s*\]+", line)
            if header:
                current = header.group(1).strip()
                continue
            if re.match(rf"\s*{re.escape(key)}\s*=", line) and (table is None or current == table or current is None):
                return f"{source}:{no}"
            if current == ".".join(parts) or (current and current.endswith("." + key)):
                return f"{source}:{no - 1 if no > 1 else no}"
    return None
