"""Gates on files that steer the harness rather than the code: git's rules and Python's start-up hooks.

* GIT_RULES_CHANGED: ``.gitattributes``, ``.gitmodules`` or ``.gitignore`` at any depth. They decide
  how git reads the tree itself (which files exist for the diff, which are text, which filters and
  submodules apply), so a worker that edits them can make the reviewed change differ from the one
  that runs.
* PYTHON_STARTUP_CHANGED: ``sitecustomize.py``, ``usercustomize.py`` or any ``*.pth`` anywhere. Python
  executes them when the interpreter starts, before a single test, from any directory on
  ``sys.path`` (a verify command's ``PYTHONPATH=src`` is enough).

Both lists are always locked (:data:`bosun.core.config.HARNESS_LOCKED`), whatever the task says; these
gates report them under their own codes so LOCKED_PATH_CHANGED stays about the task's locks.
"""

from __future__ import annotations

from bosun.core.changes import GateResult
from bosun.core.config import GIT_RULE_FILES, PYTHON_STARTUP_FILES
from bosun.core.globs import match_any
from bosun.core.quoting import quoted
from bosun.gates.context import GateInputs, listing, touched_paths, unique

GIT_RULES_CHANGED = "GIT_RULES_CHANGED"
PYTHON_STARTUP_CHANGED = "PYTHON_STARTUP_CHANGED"

_VERBS = {"A": "added", "D": "deleted", "R": "renamed", "C": "copied"}


def check_git_rules(inputs: GateInputs) -> GateResult:
    found = _matching(inputs, GIT_RULE_FILES)
    if found:
        return GateResult(
            GIT_RULES_CHANGED,
            False,
            f"the worker changed git's rules for the tree: {listing(found)}; these decide which files "
            "git sees and how it reads them, and are never the worker's to change",
        )
    return GateResult(GIT_RULES_CHANGED, True, "no .gitattributes, .gitmodules or .gitignore changed")


def check_python_startup(inputs: GateInputs) -> GateResult:
    found = _matching(inputs, PYTHON_STARTUP_FILES)
    if found:
        return GateResult(
            PYTHON_STARTUP_CHANGED,
            False,
            f"the worker changed code Python runs at interpreter start-up: {listing(found)}; it would "
            "run before every verify command",
        )
    return GateResult(PYTHON_STARTUP_CHANGED, True, "no sitecustomize.py, usercustomize.py or .pth file changed")


def _matching(inputs: GateInputs, patterns: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for change in inputs.changes:
        verb = _VERBS.get(change.status[:1], "modified")
        out += [f"{quoted(p)} ({verb})" for p in touched_paths(change) if match_any(p, patterns) is not None]
    return unique(out)
