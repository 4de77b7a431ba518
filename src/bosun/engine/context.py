"""The run context every engine verb is handed, and what every verb reads about a run: its task
(``task.json``) and the worker's change as it is on disk now.

A leaf of the engine: the verbs (lifecycle.py, teardown.py) and their helpers (attempts,
integration, self-review, ...) all import it, and it imports none of them.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.core.config import Settings, load_settings
from bosun.core.contract import TaskContract
from bosun.core.errors import BadInput
from bosun.engine import record
from bosun.store.db import Store

if TYPE_CHECKING:
    from bosun.isolation.change import Change
    from bosun.store.run import Run


@dataclass
class RunContext:
    """What every verb needs: the store and the settings of the run's repository.

    A plain context reads the config each time it is asked (a long-lived process sees edits to
    bosun.toml); ``pinned()`` gives one that reads each repository's config once (a delegation:
    one decision, made with one config)."""

    store: Store
    settings_overrides: dict[str, Any] | None = None
    pinned_settings: dict[Path, Settings] | None = field(default=None, repr=False)

    def settings(self, repo: Path) -> Settings:
        if self.pinned_settings is None:
            return load_settings(repo, self.settings_overrides)
        key = Path(repo)
        if key not in self.pinned_settings:
            self.pinned_settings[key] = load_settings(repo, self.settings_overrides)
        return self.pinned_settings[key]

    def remember_settings(self, repo: Path, settings: Settings) -> None:
        """Settings already read (by the pre-flight checks) for ``repo``: a pinned context keeps them."""
        if self.pinned_settings is not None:
            self.pinned_settings.setdefault(Path(repo), settings)

    def pinned(self) -> RunContext:
        return self if self.pinned_settings is not None else RunContext(self.store, self.settings_overrides, {})


def new_run_id() -> str:
    # os.urandom rather than `secrets`: same randomness, without its import on every delegate.
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(3).hex()


def load_task(run_id: str) -> TaskContract:
    doc = record.read_doc(run_id, record.TASK)
    if not doc:
        raise BadInput(f"run {run_id} has no task.json", "the run directory is damaged; discard the run")
    return TaskContract.model_validate(doc["task"])


def leftover_diff(run: Run) -> bytes:
    """What the worktree holds now against the start, for saving before it goes: the diff as
    verified (``diff.patch``) when the worktree is still exactly the verified tree, else diffed anew.
    A landed run's worktree is that tree, so its clean-up does not diff the same two trees again."""
    from bosun.isolation.change import read_tree, tree_diff
    from bosun.isolation.run_env import view_of

    view = view_of(run)
    tree, _ = read_tree(view)
    if tree == run.data.verified_tree and view.start == run.start_commit:
        try:
            verified = (paths.run_dir(run.id) / record.DIFF).read_bytes()
        except OSError:
            verified = None
        if verified is not None and hashlib.sha256(verified).hexdigest() == run.diff_sha256:
            return verified  # same trees, same bytes (``tree_diff`` is canonical)
    return tree_diff(view, view.start, tree)


def read_run_change(run: Run) -> Change:
    """The worker's change as it is on disk now, read through the run's own view: the one way the
    engine reads a change (``isolation.change.read_change`` does it for a view)."""
    from bosun.isolation.change import read_change
    from bosun.isolation.run_env import view_of

    return read_change(view_of(run))

