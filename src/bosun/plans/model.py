"""The plan file: a title, plan-level verify commands, task defaults, and tasks with ids and dependencies.

A plan is YAML or JSON::

    title: Split the parser
    verify: [python -m pytest -q]          # run on the integration branch after every wave
    max_attempts: 2                         # per task; each attempt is a new run
    defaults: {timeout_s: 600, locked: [tests/**]}
    tasks:
      - id: lexer
        title: Extract the lexer
        prompt: ...
        owns: [src/lexer/**]                # what it may write; its scope when scope is empty
      - id: parser
        depends: [lexer]
        prompt: ...
        owns: [src/parser/**]

Each task is a task contract (the fields of ``bosun template``) plus ``id``, ``depends`` and
``owns``. ``defaults`` fills fields a task does not set (a ``limits`` table is merged key by key;
lists are replaced, not concatenated). A task's ``title`` defaults to its id. ``base`` is refused:
plan tasks start from the integration branch.

Parsing never stops at the first problem: :func:`parse_plan` returns every problem it found, so
``bosun plan check`` can list them all.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bosun.core.contract import TaskContract, VerifyCommand, format_validation_error, parse_mapping
from bosun.core.errors import BadInput
from bosun.core.plan_states import (  # noqa: F401 - the plan's states, named where plans are modelled
    ABORTED,
    CANCELLED,
    ENDED_STATES,
    FAILED,
    PAUSED,
    PLAN_STATES,
    PLAN_TRANSITIONS,
    RUNNING,
    SUCCEEDED,
    T_CANCELLED,
    T_CONFLICT,
    T_FAILED,
    T_MERGED,
    T_PENDING,
    T_READY,
    T_REVIEW,
    T_RUNNING,
    TASK_STATES,
    check_plan_transition,
)

TASK_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
PLAN_KEYS = ("title", "verify", "defaults", "max_attempts", "tasks")
PLAN_TASK_KEYS = ("id", "depends", "owns")
# Contract fields a plan's defaults may not set: they only make sense per task.
NOT_DEFAULTABLE = ("title", "prompt", "base")


# -- the document -------------------------------------------------------------------------------


@dataclass
class Problem:
    """One thing wrong with a plan; ``plan check`` lists them all."""

    code: str
    message: str
    hint: str = ""
    tasks: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "hint": self.hint, "tasks": list(self.tasks)}


@dataclass
class PlanTask:
    id: str
    depends: list[str]
    owns: list[str]
    contract: TaskContract | None  # None when the task's contract is invalid (a problem says why)
    index: int

    def write_set(self) -> list[str]:
        """The globs this task may write, for overlap checks: ``owns``, else the scope, else everything."""
        if self.owns:
            return list(self.owns)
        if self.contract is not None and self.contract.scope:
            return list(self.contract.scope)
        return []  # empty: anywhere

    def definition_hash(self) -> str:
        """A fingerprint of what the task asks for; a fixed plan may only change unmerged tasks."""
        doc = {
            "depends": sorted(self.depends),
            "owns": list(self.owns),
            "contract": self.contract.model_dump(mode="json") if self.contract else None,
        }
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


@dataclass
class Plan:
    title: str
    verify: list[VerifyCommand]
    max_attempts: int
    tasks: list[PlanTask]
    document: dict[str, Any]  # the mapping as read, stored with the plan and parsed again on resume
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def task(self, task_id: str) -> PlanTask:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.tasks]


class _Head(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=200)
    verify: list[VerifyCommand] = Field(default_factory=list)
    defaults: dict[str, Any] = Field(default_factory=dict)
    max_attempts: int = Field(default=2, ge=1, le=10)
    tasks: list[Any] = Field(min_length=1)

    @field_validator("verify", mode="before")
    @classmethod
    def _verify_list(cls, v: Any) -> Any:
        return [v] if isinstance(v, str | dict) else v


def _globs(value: Any, where: str, problems: list[Problem], task_id: str) -> list[str]:
    from bosun.core.contract import _check_glob

    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        problems.append(Problem("INVALID_PLAN", f"{where}: expected a list of globs", "e.g. owns: [src/a/**]", [task_id]))
        return []
    out = []
    for item in value:
        try:
            out.append(_check_glob(item))
        except ValueError as exc:
            problems.append(Problem("INVALID_PLAN", f"{where}: {exc}", "globs are relative to the repo root", [task_id]))
    return out


def _merge_defaults(defaults: dict[str, Any], task: dict[str, Any]) -> dict[str, Any]:
    out = dict(defaults)
    for key, value in task.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def parse_plan(data: dict[str, Any], source: str = "plan") -> Plan:
    """Parse a plan mapping. Structural problems of the whole file raise ``BadInput``; problems of
    single tasks are collected in ``plan.problems`` (graph checks are :mod:`bosun.plans.validate`'s)."""
    try:
        head = _Head.model_validate(data)
    except ValidationError as exc:
        err = format_validation_error(exc, source)
        if "unknown field" in err.message:
            err.hint = "a plan has: " + ", ".join(PLAN_KEYS) + " (task fields go under tasks: or defaults:)"
        raise BadInput(err.message, err.hint, code="INVALID_PLAN") from None
    problems: list[Problem] = []
    fields = set(TaskContract.model_fields)
    bad_defaults = sorted(set(head.defaults) - (fields - set(NOT_DEFAULTABLE)))
    for key in bad_defaults:
        why = "it only makes sense per task" if key in fields or key in PLAN_TASK_KEYS else "not a task field"
        problems.append(
            Problem("INVALID_PLAN", f"{source}: defaults: {key!r} cannot be a default ({why})",
                    "defaults may set any task field but title, prompt, base, id, depends and owns")
        )
    defaults = {k: v for k, v in head.defaults.items() if k not in bad_defaults}
    tasks: list[PlanTask] = []
    for index, raw in enumerate(head.tasks):
        where = f"{source}: tasks[{index}]"
        if not isinstance(raw, dict):
            problems.append(Problem("INVALID_PLAN", f"{where}: expected a mapping of task fields", "see docs/plans.md"))
            continue
        raw = dict(raw)
        task_id = raw.pop("id", None)
        if not isinstance(task_id, str) or not TASK_ID_RE.match(task_id):
            problems.append(
                Problem("INVALID_PLAN", f"{where}: {'missing id' if task_id is None else f'invalid id {task_id!r}'}",
                        "ids are 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
            )
            continue
        where = f"{source}: task {task_id}"
        depends_raw = raw.pop("depends", None) or []
        if isinstance(depends_raw, str):
            depends_raw = [depends_raw]
        if not isinstance(depends_raw, list) or not all(isinstance(d, str) for d in depends_raw):
            problems.append(Problem("INVALID_PLAN", f"{where}: depends must be a list of task ids",
                                    "list the ids of the tasks that must be merged first, e.g. depends: [lexer, parser]",
                                    [task_id]))
            depends_raw = []
        owns = _globs(raw.pop("owns", None), f"{where}: owns", problems, task_id)
        contract: TaskContract | None = None
        if "base" in raw:
            problems.append(
                Problem("INVALID_PLAN", f"{where}: 'base' cannot be set on a plan task",
                        "plan tasks start from the integration branch as it stands when their wave starts", [task_id])
            )
            raw.pop("base")
        merged = _merge_defaults(defaults, raw)
        merged.setdefault("title", task_id)
        if not merged.get("scope") and owns:
            merged["scope"] = list(owns)
        try:
            contract = TaskContract.model_validate(merged)
        except ValidationError as exc:
            err = format_validation_error(exc, where)
            problems.append(Problem("INVALID_TASK", err.message, err.hint, [task_id]))
        tasks.append(PlanTask(task_id, list(dict.fromkeys(depends_raw)), owns, contract, index))
    warnings = []
    for t in tasks:
        if t.owns and t.contract is not None and t.contract.scope and t.contract.scope != t.owns:
            warnings.append(
                Problem("SCOPE_WIDER_THAN_OWNS",
                        f"task {t.id} sets both scope and owns: overlap checks trust owns, the worker is held to scope",
                        "drop scope (owns becomes the scope), or make them equal", [t.id])
            )
    return Plan(head.title, list(head.verify), head.max_attempts, tasks, data, problems, warnings)


def load_plan_file(path: str | Path) -> Plan:
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except FileNotFoundError:
        raise BadInput(f"plan file not found: {p}", "pass the path of a YAML or JSON plan file") from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read plan file {p}: {exc}", "pass a UTF-8 YAML or JSON file") from None
    try:
        data = parse_mapping(text, str(p))
    except BadInput as exc:
        raise BadInput(exc.message, "fix the syntax; docs/plans.md shows a valid plan", code="INVALID_PLAN") from None
    return parse_plan(data, str(p))
