"""Gates on files that steer the harness rather than the code: git's rules and Python's start-up hooks.

* GIT_RULES_CHANGED: ``.gitattributes``, ``.gitmodules`` or ``.gitignore`` at any depth. They decide
  how git reads the tree itself (which files exist for the diff, which are text, which filters and
  submodules apply), so a worker that edits them can make the reviewed change differ from the one
  that runs.
* PYTHON_STARTUP_CHANGED: ``sitecustomize.py``, ``usercustomize.py`` or any ``*.pth`` anywhere. Python
  executes them when the interpreter starts, before a single test, from any directory on
  ``sys.path`` (a verify command's ``PYTHONPATH=src`` is enough).
* PACKAGE_METADATA_ADDED: a ``*.dist-info`` or ``*.egg-info`` (or ``*.egg-link``) the change adds in a
  directory on the verify interpreter's path (the import roots MODULE_SHADOWED reads, and those the
  runner guard saw on ``sys.path``). ``importlib.metadata`` finds installed distributions there, and
  pytest loads every ``pytest11`` entry point they name before the first test: a plugin the change
  brings would join the environment's own. Elsewhere (test data under a fixture directory) such a
  directory is data.

Both lists are always locked (:data:`bosun.core.config.HARNESS_LOCKED`), whatever the task says; these
gates report them under their own codes so LOCKED_PATH_CHANGED stays about the task's locks.
"""

from __future__ import annotations

from bosun.core.changes import GateResult
from bosun.core.config import GIT_RULE_FILES, PYTHON_STARTUP_FILES
from bosun.core.globs import match_any
from bosun.core.quoting import quoted
from bosun.gates.context import GateInputs, listing, touched_paths, unique
from bosun.gates.shadowing import import_roots

GIT_RULES_CHANGED = "GIT_RULES_CHANGED"
PYTHON_STARTUP_CHANGED = "PYTHON_STARTUP_CHANGED"
PACKAGE_METADATA_ADDED = "PACKAGE_METADATA_ADDED"

_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".egg")

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


def check_package_metadata(inputs: GateInputs) -> GateResult:
    added = [meta for c in inputs.changes if c.status[:1] in ("A", "R", "C") and (meta := _metadata_dir(c.path))]
    if not added:
        return GateResult(PACKAGE_METADATA_ADDED, True, "no package metadata added")
    roots = import_roots(inputs)
    found = unique([meta for meta in added if meta.rpartition("/")[0] in roots])
    if found:
        return GateResult(
            PACKAGE_METADATA_ADDED,
            False,
            f"the worker added installed-package metadata on the verify interpreter's path: {listing(found)}; "
            "pytest would load the plugins it names with the environment's own",
        )
    return GateResult(PACKAGE_METADATA_ADDED, True, f"package metadata added off the import path: "
                      f"{listing(unique(added))}")


def _metadata_dir(path: str) -> str | None:
    """The ``NAME.dist-info`` (or ``.egg-info`` ...) component of ``path`` and the directories above it."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        if part.endswith(_METADATA_SUFFIXES) and len(part) > 6:
            return "/".join(parts[: i + 1])
    return None
