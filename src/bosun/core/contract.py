"""The task contract: what a parent hands a worker, validated with pydantic.

A contract is YAML or JSON. Unknown fields are rejected by name. ``verify`` commands are run by bosun
itself, never by the worker; a string is split like a POSIX shell would split it, but it is only run
through a shell when ``shell: true`` is set on it.
"""

from __future__ import annotations

import json
import shlex
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bosun.core.errors import BadInput, Problem, ProblemsFound
from bosun.core.review_config import ReviewConfig
from bosun.core.worktree_config import WorktreeConfig


class Mode(str, Enum):
    code = "code"
    explore = "explore"
    review = "review"
    test = "test"


Level = Literal["low", "medium", "high"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class VerifyCommand(_Strict):
    """One verification command. ``run`` is an argv list or a string split like a shell would."""

    run: list[str] = Field(description="argv list, or a string split with shell rules (not run by a shell)")
    timeout_s: float | None = Field(default=None, gt=0, description="per-command timeout in seconds")
    shell: bool = Field(default=False, description="run the string through /bin/sh -c (explicit opt-in)")
    name: str | None = None
    env: dict[str, str] = Field(
        default_factory=dict,
        description="extra environment for this command (e.g. PYTHONPATH=src); added to the verify allowlist",
    )
    cwd: str | None = Field(default=None, description="directory to run in, relative to the repository root")
    junit: str | None = Field(
        default=None,
        description="a JUnit XML file the command writes (relative to cwd): bosun lists the tests that went "
        "fail-to-pass and pass-to-fail. pytest commands get one automatically",
    )

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, value: Any) -> Any:
        if isinstance(value, str | list):
            value = {"run": value}
        if isinstance(value, dict) and isinstance(value.get("run"), str):
            raw = value["run"]
            if value.get("shell"):
                value = {**value, "run": [raw]}
            else:
                try:
                    value = {**value, "run": shlex.split(raw)}
                except ValueError as exc:
                    raise ValueError(f"cannot split verify command {raw!r}: {exc}") from exc
        return value

    @field_validator("run")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if not v or not all(isinstance(a, str) for a in v) or not v[0].strip():
            raise ValueError("a verify command needs at least a program name")
        return v

    @field_validator("cwd")
    @classmethod
    def _relative_cwd(cls, v: str | None) -> str | None:
        if v is None:
            return v
        parts = Path(v).parts
        if not v.strip() or Path(v).is_absolute() or ".." in parts:
            raise ValueError(f"verify cwd {v!r} must be a directory inside the repository (relative, no '..')")
        return v

    @field_validator("env")
    @classmethod
    def _plain_env(cls, v: dict[str, str]) -> dict[str, str]:
        for key in v:
            if not key or "=" in key or "\0" in key:
                raise ValueError(f"verify env key {key!r} is not a valid variable name")
        return v

    def argv(self) -> list[str]:
        if self.shell:
            return ["/bin/sh", "-c", " ".join(self.run)]
        return list(self.run)


class BestOf(_Strict):
    """K candidates at once, each in its own worktree; the first landable one wins."""

    k: int = Field(ge=2, le=5, description="how many candidates work at once (2..5)")
    profiles: list[str] = Field(
        default_factory=list, description="the candidates' profiles, rotated (empty: the run's own profile)",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"k": value} if isinstance(value, int) and not isinstance(value, bool) else value


class Limits(_Strict):
    max_files: int = Field(default=50, ge=1, description="most files the change may touch")
    max_deleted_lines: int = Field(
        default=300, ge=0, description="ceiling on lines deleted from one file (also judged against its size)"
    )
    max_diff_bytes: int = Field(default=1_000_000, ge=1, description="largest diff bosun accepts")


def _check_glob(pattern: str) -> str:
    if not isinstance(pattern, str) or not pattern.strip():
        raise ValueError("empty path glob")
    p = pattern.strip()
    if p.startswith("/") or PurePosixPath(p).is_absolute():
        raise ValueError(f"absolute path {p!r} not allowed; globs are relative to the repo root")
    if ".." in PurePosixPath(p).parts:
        raise ValueError(f"'..' not allowed in {p!r}; globs must stay inside the repo")
    return p


class TaskContract(_Strict):
    """A bounded coding task for a worker agent."""

    title: str = Field(min_length=1, max_length=200)
    prompt: str = Field(description="what the worker must do")
    mode: Mode = Mode.code
    acceptance: list[str] = Field(default_factory=list, description="criteria a reviewer checks")
    verify: list[VerifyCommand] = Field(default_factory=list, description="commands bosun runs itself")
    scope: list[str] = Field(default_factory=list, description="globs the worker may change (empty: all)")
    locked: list[str] = Field(default_factory=list, description="globs the worker may not change")
    difficulty: Level | None = None
    risk: Level | None = None
    domain: str | None = None
    profile: str | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=86_400)
    max_usd: float | None = Field(default=None, gt=0, description="most the worker may spend on this task (USD)")
    base: str = Field(default="HEAD", description="git ref the worktree starts from")
    limits: Limits = Field(default_factory=Limits)
    tests: Literal["keep", "extend", "rewrite"] = Field(
        default="extend",
        description="what the worker may do to existing tests: keep (none may change), extend (may add and "
        "edit; the originals are also run, held out), rewrite (behaviour changes on purpose; reported only)",
    )
    holdout: list[str] = Field(
        default_factory=list,
        description="globs of files the worker never sees; bosun adds them back only to verify",
    )
    proof: Literal["required", "not-required"] = Field(
        default="required",
        description="required: a change lands without a person only when its verify commands failed before it "
        "and pass after it; not-required: refactors, docs and tasks whose verify commands already pass",
    )
    permit: list[str] = Field(
        default_factory=list,
        description="always-locked paths this task may change (tox.ini, CI config, Makefile): recorded and shown "
        "as a reason for review; a verify entry point only when named exactly",
    )
    worktree: WorktreeConfig | None = Field(
        default=None, description="set-up of the worktree added to bosun.toml's [worktree] (include, symlink, "
        "setup, ports)",
    )
    review: ReviewConfig | None = Field(
        default=None, description="cross-review by another profile after verification (replaces bosun.toml's "
        "[review]); rounds: 0 turns it off",
    )
    repair: int | None = Field(
        default=None, ge=0, le=3,
        description="repair rounds per profile (0..3; unset: bosun.toml's repair, default 1): a change refused for "
        "the work itself (failing tests, scope, size) goes back to the worker with the evidence; a refusal about "
        "its honesty never does",
    )
    best_of: BestOf | None = Field(
        default=None, description="not available yet: a task with best_of is refused before anything runs "
        "(NOT_AVAILABLE). Planned: K candidates at once, each in its own worktree ({k: 2..5, profiles: [...]}, "
        "or just K); the first landable one wins",
    )

    @field_validator("prompt")
    @classmethod
    def _prompt_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the prompt is empty; say what the worker must do")
        return v

    @field_validator("scope", "locked", "holdout", "permit")
    @classmethod
    def _globs(cls, v: list[str]) -> list[str]:
        return [_check_glob(p) for p in v]

    @field_validator("verify", mode="before")
    @classmethod
    def _verify_list(cls, v: Any) -> Any:
        if isinstance(v, str | dict):
            return [v]
        return v

    @field_validator("base")
    @classmethod
    def _base(cls, v: str) -> str:
        if not v.strip() or v.startswith("-"):
            raise ValueError(f"invalid base ref {v!r}")
        return v.strip()


def format_validation_error(exc: ValidationError, source: str) -> BadInput:
    """Every validation problem of the task, each with its hint (not just the first)."""
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(top level)"
        if err.get("type") == "extra_forbidden":
            problems.append(Problem("UNKNOWN_FIELD", f"{source}: unknown field {loc!r}", _did_you_mean(err.get("loc", ()))))
        elif err.get("type") == "missing":
            problems.append(Problem("MISSING_FIELD", f"{source}: missing required field {loc!r}",
                                    "`bosun template` prints a commented example"))
        else:
            msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            problems.append(Problem("INVALID_FIELD", f"{source}: {loc}: {msg}", "`bosun schema` describes every field"))
    return ProblemsFound(problems, code="INVALID_TASK")


def _did_you_mean(loc: tuple[Any, ...]) -> str:
    """The closest field of the model the unknown key sits in (``verfy`` -> ``verify``), else the schema."""
    import difflib

    model: Any = TaskContract
    for part in loc[:-1]:
        field = getattr(model, "model_fields", {}).get(part)
        model = getattr(field, "annotation", None) if field is not None else None
    known = sorted(getattr(model, "model_fields", {}) or TaskContract.model_fields)
    close = difflib.get_close_matches(str(loc[-1]) if loc else "", known, n=1, cutoff=0.75)
    return f"did you mean {close[0]!r}? `bosun schema` lists the fields a task accepts" if close else \
        "`bosun schema` lists the fields a task accepts"


class _YamlError(Exception):
    """A YAML syntax error, carrying PyYAML's position details (imported only for YAML input)."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        self.problem_mark = getattr(exc, "problem_mark", None)
        self.problem = getattr(exc, "problem", None)


def _yaml_load(text: str) -> Any:
    import yaml  # only YAML input pays for the import

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _YamlError(exc) from exc


def parse_mapping(text: str, source: str) -> dict[str, Any]:
    """Parse YAML or JSON text into a mapping, with a one-line error on failure."""
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else _yaml_load(text)
    except (json.JSONDecodeError, _YamlError) as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        elif isinstance(exc, json.JSONDecodeError):
            where = f" at line {exc.lineno}, column {exc.colno}"
        problem = getattr(exc, "problem", None) or getattr(exc, "msg", None) or str(exc).splitlines()[0]
        raise BadInput(
            f"{source}: malformed YAML/JSON{where}: {problem}",
            "fix the syntax; `bosun template` prints a valid example",
            code="INVALID_TASK",
        ) from None
    if not isinstance(data, dict):
        raise BadInput(f"{source}: expected a mapping of fields at the top level", "`bosun template` shows one")
    return data


def contract_from_mapping(data: dict[str, Any], source: str = "task") -> TaskContract:
    try:
        return TaskContract.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, source) from None


def load_contract(path: str | Path) -> TaskContract:
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except FileNotFoundError:
        raise BadInput(f"task file not found: {p}", "pass the path of a YAML or JSON task file") from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read task file {p}: {exc}", "pass a UTF-8 YAML or JSON file") from None
    return contract_from_mapping(parse_mapping(text, str(p)), str(p))


def json_schema() -> dict[str, Any]:
    return TaskContract.model_json_schema()
