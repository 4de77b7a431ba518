"""``[worktree]`` and ``[pool]``: how a run's worktree is set up before its worker starts.

Shared by the settings (``bosun.toml``) and the task contract (a task's own ``worktree`` adds to the
repository's). Pure data: :mod:`bosun.isolation.setup` does the work.
"""

from __future__ import annotations

import shlex
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class SetupCommand(BaseModel):
    """One set-up command, run in the new worktree before the worker (``npm ci``, ``uv sync``)."""

    model_config = ConfigDict(extra="forbid")
    run: list[str] = Field(description="argv list, or a string split with shell rules (not run by a shell)")
    shell: bool = Field(default=False, description="run the string through /bin/sh -c (explicit opt-in)")
    timeout_s: float = Field(default=600, gt=0, description="this command's own timeout")
    secrets: list[str] = Field(default_factory=list, description="names of environment variables passed to "
                               "this command only (never to the worker or the verify commands)")
    env: dict[str, str] = Field(default_factory=dict, description="extra plain environment for this command")

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, value: Any) -> Any:
        if isinstance(value, str | list):
            value = {"run": value}
        if isinstance(value, dict) and isinstance(value.get("run"), str):
            raw = value["run"]
            value = {**value, "run": ["/bin/sh", "-c", raw] if value.get("shell") else shlex.split(raw)}
        return value

    @field_validator("run")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("a set-up command needs at least a program name")
        return v


def _relative(v: list[str], what: str) -> list[str]:
    for item in v:
        p = PurePosixPath(item)
        if not item or p.is_absolute() or ".." in p.parts or item.startswith("./.git") or p.parts[:1] == (".git",):
            raise ValueError(f"{what} {item!r} must be a path inside the repository (relative, no '..', not .git)")
    return v


class WorktreeConfig(BaseModel):
    """Ignored files copied in, directories linked read-only, set-up commands, ports."""

    model_config = ConfigDict(extra="forbid")
    include: list[str] = Field(default_factory=list, description="globs of ignored files and directories copied "
                               "from your tree into the worktree (.worktreeinclude adds more)")
    symlink: list[str] = Field(default_factory=list, description="directories of your tree linked into the "
                               "worktree instead of copied (node_modules, .venv); read-only to the worker")
    setup: list[SetupCommand] = Field(default_factory=list, description="commands run in the worktree before "
                                      "the worker; what they create is environment, not change")
    ports: int = Field(default=0, ge=0, le=1000, description="ports leased to each run (BOSUN_PORT, "
                       "BOSUN_PORT_RANGE); 0: none")
    port_range: tuple[int, int] = Field(default=(20000, 29999), description="the ports runs are leased from")

    @field_validator("include")
    @classmethod
    def _include(cls, v: list[str]) -> list[str]:
        return _relative(v, "include")

    @field_validator("symlink")
    @classmethod
    def _symlink(cls, v: list[str]) -> list[str]:
        return [s.rstrip("/") for s in _relative(v, "symlink")]

    @field_validator("port_range")
    @classmethod
    def _range(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not 1024 <= v[0] <= v[1] <= 65535:
            raise ValueError("port_range is [first, last] with 1024 <= first <= last <= 65535")
        return v

    def plus(self, task: WorktreeConfig | None) -> WorktreeConfig:
        """The repository's set-up with a task's added (lists extend, a task's ports win when set)."""
        if task is None:
            return self
        return WorktreeConfig(
            include=[*self.include, *task.include],
            symlink=[*self.symlink, *task.symlink],
            setup=[*self.setup, *task.setup],
            ports=task.ports or self.ports,
            port_range=self.port_range,
        )

    @property
    def empty(self) -> bool:
        return not (self.include or self.symlink or self.setup or self.ports)


class PoolConfig(BaseModel):
    """The warm pool of ready worktrees for this repository."""

    model_config = ConfigDict(extra="forbid")
    size: int = Field(default=0, ge=0, le=32, description="idle worktrees kept ready (0: no pool)")
