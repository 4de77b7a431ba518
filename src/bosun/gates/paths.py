"""Gates on *where* the change is: locked paths and the task's scope.

A rename is judged on both of its paths: moving a locked file away changes it as surely as editing
it, and moving a file in from outside the scope changes that outside path. Locked paths include the
content-aware locks of :mod:`bosun.gates.testconfig` (test-runner settings inside pyproject.toml,
setup.cfg and package.json). The always-locked harness files (:data:`bosun.config.HARNESS_LOCKED`:
git's rule files, Python start-up hooks) have gates of their own, so they are not reported twice here.
"""

from __future__ import annotations

from bosun.changes import GateResult
from bosun.config import HARNESS_LOCKED
from bosun.gates.context import GateContext, listing, plural, touched_paths, unique
from bosun.gates.invocations import invocations
from bosun.gates.testconfig import NEW_ENV, locked_sections, tox_selected_envs
from bosun.globs import match_any

LOCKED_PATH_CHANGED = "LOCKED_PATH_CHANGED"
OUT_OF_SCOPE = "OUT_OF_SCOPE"


def check_locked(ctx: GateContext) -> GateResult:
    offences: list[str] = []
    locked = [p for p in ctx.locked if p not in HARNESS_LOCKED]
    selected = tox_selected_envs([(inv.argv, inv.env) for inv in invocations(ctx.task)])
    for change in ctx.changes:
        for path in touched_paths(change):
            pattern = match_any(path, locked)
            if pattern is not None:
                offences.append(path if pattern == path else f"{path} (locked by {pattern!r})")
        offences += locked_sections(change, ctx.base_text, ctx.new_text, selected)
    offences = unique(offences)
    if offences and all(o.endswith(NEW_ENV) for o in offences):
        names = [o.removesuffix(" " + NEW_ENV) for o in offences]
        return GateResult(
            LOCKED_PATH_CHANGED,
            False,
            f"the worker added tox environments to locked test configuration: {listing(names)}; no verify "
            "command selects them and nothing that ran before changes, but additions to locked "
            "configuration need your approval (waive LOCKED_PATH_CHANGED to accept)",
        )
    if offences:
        return GateResult(LOCKED_PATH_CHANGED, False, f"locked paths changed: {listing(offences)}")
    return GateResult(
        LOCKED_PATH_CHANGED,
        True,
        f"{plural(len(ctx.changes), 'file')}, none locked (test configuration intact)",
    )


def check_scope(ctx: GateContext) -> GateResult:
    scope = ctx.task.scope
    if not scope:
        return GateResult(OUT_OF_SCOPE, True, "no scope set: every path is allowed")
    outside = unique(
        [path for change in ctx.changes for path in touched_paths(change) if match_any(path, scope) is None]
    )
    if outside:
        return GateResult(OUT_OF_SCOPE, False, f"outside the scope ({listing(scope)}): {listing(outside)}")
    return GateResult(OUT_OF_SCOPE, True, f"{plural(len(ctx.changes), 'file')}, all in scope")
