"""Gates on *where* the change is: locked paths and the task's scope.

A rename is judged on both of its paths: moving a locked file away changes it as surely as editing
it, and moving a file in from outside the scope changes that outside path. Locked paths include the
content-aware locks of :mod:`bosun.gates.testconfig` (test-runner settings inside pyproject.toml,
setup.cfg and package.json). The always-locked harness files (:data:`bosun.core.config.HARNESS_LOCKED`:
git's rule files, Python start-up hooks) have gates of their own, so they are not reported twice here.
"""

from __future__ import annotations

from bosun.core.changes import FileChange, GateResult
from bosun.core.config import HARNESS_LOCKED
from bosun.core.globs import match_any
from bosun.core.quoting import quoted
from bosun.gates.context import GateInputs, listing, plural, touched_paths, unique
from bosun.gates.invocations import invocations
from bosun.gates.testconfig import NEW_ENV, locked_sections, only_adds_envs, tox_selected_envs

LOCKED_PATH_CHANGED = "LOCKED_PATH_CHANGED"
OUT_OF_SCOPE = "OUT_OF_SCOPE"


# Never lifted by a task's ``permit``: git's own directory, the file that configures bosun itself, and
# the test runner's own settings, which decide what verification runs (pytest's files here, its sections
# inside shared files through :func:`_runner_section`). A task may add a tox environment; it may not
# tell pytest what to collect.
NEVER_PERMITTED = (".git/**", "bosun.toml", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml")
LOCKED_PATH_PERMITTED = "LOCKED_PATH_PERMITTED"
# A reason for review: locked test configuration gained tox environments no verify command selects.
TEST_ENV_ADDED = "TEST_ENV_ADDED"


def permitted(path: str, permit: list[str]) -> bool:
    """Whether the task's ``permit`` globs let it change this always-locked path."""
    return bool(permit) and match_any(path, permit) is not None and match_any(path, list(NEVER_PERMITTED)) is None


def check_locked(inputs: GateInputs) -> GateResult:
    offences: list[str] = []
    allowed: list[str] = []
    envs: list[str] = []
    locked = [p for p in inputs.locked if p not in HARNESS_LOCKED]
    selected = tox_selected_envs([(inv.argv, inv.env) for inv in invocations(inputs.task)])
    permit = list(inputs.task.permit)
    for change in inputs.changes:
        paths: list[str] = []
        for path in touched_paths(change):
            pattern = match_any(path, locked)
            if pattern is not None:
                paths.append(quoted(path) if pattern == path else f"{quoted(path)} (locked by {pattern!r})")
        sections = locked_sections(change, inputs.base_text, inputs.new_text, selected)
        found = paths + sections
        is_permitted = bool(found) and all(permitted(p, permit) for p in touched_paths(change))
        if not is_permitted and _adds_envs_only(change, inputs, paths, sections, selected):
            envs += [s.removesuffix(" " + NEW_ENV) for s in sections]
            continue
        if is_permitted:
            # The task permits this path: a person reads it, nothing is refused but pytest's own settings.
            offences += [f for f in found if _runner_section(f)]
            allowed += [f for f in found if not _runner_section(f)]
        else:
            offences += found
    offences, allowed, envs = unique(offences), unique(allowed), unique(envs)
    review = [{"code": LOCKED_PATH_PERMITTED, "sentence": f"the change edits locked paths the task permits: "
               f"{listing(allowed)}; read them, they can change how the project is built or tested"}] if allowed else []
    if envs:
        review.append({"code": TEST_ENV_ADDED, "sentence": "the change adds tox environments to locked test "
                       f"configuration: {listing(envs)}; no verify command selects them and nothing verification "
                       "ran changes, so read them: they run wherever tox runs them next"})
    if offences:
        return GateResult(LOCKED_PATH_CHANGED, False, f"locked paths changed: {listing(offences)}"
                          + ("; a task that must change them names them in `permit`" if not permit else ""))
    if allowed or envs:
        what = ", ".join(x for x in (f"as the task permits: {listing(allowed)}" if allowed else "",
                                      f"tox environments added: {listing(envs)}" if envs else "") if x)
        return GateResult(LOCKED_PATH_CHANGED, True, f"locked paths changed {what}", review=review)
    return GateResult(
        LOCKED_PATH_CHANGED,
        True,
        f"{plural(len(inputs.changes), 'file')}, none locked (test configuration intact)",
    )


def _adds_envs_only(change: FileChange, inputs: GateInputs, paths: list[str], sections: list[str],
                    selected: frozenset[str]) -> bool:
    """The change's only locked content is tox environments no verify command selects (a section of
    a shared file, or the whole difference of a locked tox.ini): it changes nothing verification runs."""
    if not sections or not all(s.endswith(NEW_ENV) for s in sections):
        return False
    if not paths:
        return True
    return change.status[:1] == "M" and only_adds_envs(change.path, inputs.base_text(change.path),
                                                       inputs.new_text(change.path), selected)


def _runner_section(offence: str) -> bool:
    """A changed section of the test runner's settings ("tox.ini [pytest]", "setup.cfg [tool:pytest]")."""
    _, _, section = offence.partition(" [")
    return "pytest" in section.split("]")[0]


def check_scope(inputs: GateInputs) -> GateResult:
    scope = inputs.task.scope
    if not scope:
        return GateResult(OUT_OF_SCOPE, True, "no scope set: every path is allowed")
    outside = unique(
        [path for change in inputs.changes for path in touched_paths(change) if match_any(path, scope) is None]
    )
    if outside:
        return GateResult(OUT_OF_SCOPE, False,
                          f"outside the scope ({listing(scope)}): {listing(quoted(p) for p in outside)}")
    return GateResult(OUT_OF_SCOPE, True, f"{plural(len(inputs.changes), 'file')}, all in scope")
