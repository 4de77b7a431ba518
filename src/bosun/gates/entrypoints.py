"""VERIFY_ENTRY_CHANGED: the change touches what the verify commands themselves run.

Verification proves something only if the worker cannot rewrite the check. When a verify command is
``make test``, a ``Makefile`` whose ``test`` recipe became ``@echo ok`` passes anything; the same
goes for a ``justfile``, a tox or nox configuration, or a script the command names. So, for each
program the task's verify commands run (read by :mod:`bosun.gates.invocations`):

* ``make``: ``Makefile``, ``makefile``, ``GNUmakefile``, ``*.mk``, ``*.mak`` at any depth (includes);
* ``just``: ``justfile``, ``Justfile``, ``.justfile``, ``*.just``;
* ``tox``: ``tox.ini``, ``tox.toml`` (its tables in ``pyproject.toml`` and ``setup.cfg`` are always
  locked by LOCKED_PATH_CHANGED);
* ``nox``: ``noxfile.py``;
* ``npm``/``yarn``/``pnpm``/``bun``/``npx``: ``.yarnrc``, ``.yarnrc.yml``, ``.pnpmfile.cjs``,
  ``bunfig.toml`` and anything under a ``node_modules`` directory, where the runners and their
  ``.bin`` scripts live (``package.json`` ``scripts`` are always locked);
* the scripts those files run in turn: the recipe lines of the start commit's ``Makefile`` (or the
  ``-f`` file, in the ``-C`` directory) and ``justfile``, and the ``scripts`` of ``package.json``, are
  read like verify commands, so ``./scripts/test.sh`` or ``python tools/check.py`` in a ``test:``
  recipe is an entry point too (recipes that build their command from variables cannot be read);
* a program run from an environment inside the repository (``.venv/bin/python``, ``env/bin/pytest``):
  everything in that environment;
* ``rake``: ``Rakefile``, ``*.rake``; ``task``: ``Taskfile.yml``/``.yaml``;
* ``python -m MODULE``: ``MODULE.py`` and ``MODULE/__main__.py`` beside the command;
* any repository file a verify argv names as something to run or to configure the run, read from
  the command's directory: the program itself (``./run_tests.sh``, ``bin/check``), the script an
  interpreter runs (``scripts/check.py`` in ``python scripts/check.py``, ``ci.sh`` in ``bash ci.sh``,
  ``node -r ./setup.js``), the value of a file or config option (``-f build.mk``,
  ``--config=ci.toml``, ``-c pytest-ci.ini``), and a file named like a ``make`` target (``make test``
  is satisfied by a new plain file called ``test``). Operands a tool merely checks (``mypy
  src/calc.py``, ``pytest tests/test_calc.py``) are the code under test, not entry points: the task's
  locks and TEST_WEAKENED judge those.

Whatever the change does to these files (add, edit, delete, rename), the gate fails, unless the
task's ``permit`` names the file exactly (a glob never does): then it is a reason for review,
``VERIFY_ENTRY_PERMITTED``. A user who wants such a change afterwards accepts it with
``--waive VERIFY_ENTRY_CHANGED``.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass

from bosun.core.changes import GateResult
from bosun.core.globs import match_any
from bosun.core.quoting import quoted
from bosun.gates.context import GateInputs, listing, touched_paths
from bosun.gates.invocations import Invocation, invocations, repo_path, shell_invocations

VERIFY_ENTRY_CHANGED = "VERIFY_ENTRY_CHANGED"
VERIFY_ENTRY_PERMITTED = "VERIFY_ENTRY_PERMITTED"

_TOOL_FILES: dict[str, tuple[str, ...]] = {
    "make": ("Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"),
    "just": ("justfile", "Justfile", ".justfile", "*.just"),
    "tox": ("tox.ini", "tox.toml"),
    "nox": ("noxfile.py",),
    "npm": (".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", ".pnpmfile.mjs", "bunfig.toml", "node_modules"),
    "rake": ("Rakefile", "rakefile", "*.rake"),
    "task": ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml"),
}
# Options whose value is a file the tool reads to decide what to run or how.
_FILE_OPTIONS = frozenset(
    """-f --file --makefile -c --config --config-file --rcfile --settings --justfile --noxfile --conf
    --configuration -r --require --import --loader --experimental-loader --preload""".split()
)
# Programs that only look at files: their one-letter options are file tests (``test -f out.txt`` checks
# that the worker made out.txt), never a file they run or read a configuration from.
_FILE_TESTS = frozenset({"test", "[", "[["})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_INTERPRETERS = _SHELLS | {"node", "nodejs", "ruby", "perl", "php", "Rscript", "lua", "tsx", "ts-node"}
# Interpreter options that take a separate value which is not a script.
_VALUED = frozenset({"-W", "-X", "-I", "-M", "-e", "-E", "-o", "-O", "--eval", "--input-type"})
_ALIASES = {
    "gmake": "make",
    "bmake": "make",
    "yarn": "npm",
    "pnpm": "npm",
    "bun": "npm",
    "npx": "npm",
    "go-task": "task",
}


@dataclass(frozen=True)
class Entry:
    """Files one verify invocation runs: exact repo paths and name globs."""

    invocation: Invocation
    paths: frozenset[str]
    globs: tuple[str, ...]
    via: str = ""  # the file whose recipe or script runs these, when not the verify command itself

    def covers(self, path: str) -> bool:
        return path in self.paths or match_any(path, self.globs) is not None


def entries(inputs: GateInputs) -> list[Entry]:
    out = []
    for inv in invocations(inputs.task):
        tool = _tool(inv)
        globs = _TOOL_FILES.get(tool, ())
        env_dir = _environment_dir(inv)
        if env_dir:
            globs = (*globs, f"./{env_dir}")
        out.append(Entry(inv, _files_run(inv, tool), globs))
        for via, inner in _recipe_invocations(inputs, inv, tool):
            out.append(Entry(inv, _files_run(inner, _tool(inner)), (), via))
    return out


def _files_run(inv: Invocation, tool: str) -> frozenset[str]:
    paths = {p for w in _named_files(inv, tool) if (p := repo_path(inv.cwd, w))}
    return frozenset(paths | _python_module_files(inv))


def _recipe_invocations(inputs: GateInputs, inv: Invocation, tool: str) -> list[tuple[str, Invocation]]:
    """Commands the start commit's Makefile, justfile or package.json scripts run for ``inv``."""
    argv = list(inv.argv)
    directory = inv.cwd
    if tool == "make" and "-C" in argv[:-1]:
        directory = repo_path(inv.cwd, argv[argv.index("-C") + 1]) or directory
    candidates: list[str] = []
    named: list[str] = []
    if tool == "make":
        named = [argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-f", "--file", "--makefile")]
        candidates = named or ["GNUmakefile", "makefile", "Makefile"]
    elif tool == "just":
        candidates = ["justfile", "Justfile", ".justfile"]
    elif tool == "npm":
        candidates = ["package.json"]
    out: list[tuple[str, Invocation]] = []
    for name in candidates:
        path = repo_path(directory, name)
        text = inputs.base_text(path) if path else None
        if path is None or text is None:
            continue
        for line in _commands_in(posixpath.basename(path), text):
            out += [(path, i) for i in shell_invocations(line, posixpath.dirname(path), f"{path}: {line}")]
        if tool == "make" and not named:
            break  # make reads the first default name that exists
    return out


def _commands_in(name: str, text: str) -> list[str]:
    """Shell command lines in a Makefile's or justfile's recipes, or package.json's scripts."""
    if name == "package.json":
        try:
            scripts = json.loads(text).get("scripts", {})
        except (ValueError, AttributeError):
            return []
        return [v for v in scripts.values() if isinstance(v, str)] if isinstance(scripts, dict) else []
    lines, out = text.replace("\\\n", " ").splitlines(), []
    for line in lines:
        recipe = line.startswith("\t") if name not in ("justfile", "Justfile", ".justfile") else line[:1] in " \t"
        if recipe and line.strip():
            out.append(line.strip().lstrip("@-+ "))
    return out


def check_entry_points(inputs: GateInputs) -> GateResult:
    found: dict[str, str] = {}
    named: dict[str, str] = {}  # entry points the task's `permit` names exactly: a person reads them
    all_entries = entries(inputs)
    for change in inputs.changes:
        for path in touched_paths(change):
            entry = next((e for e in all_entries if e.covers(path)), None)
            if entry is not None and path not in found:
                how = " ".join(entry.invocation.argv)
                (named if path in inputs.task.permit else found)[path] = \
                    f"`{how}` through {entry.via}" if entry.via else f"`{how}`"
    if found:
        items = [f"{quoted(path)} (run by {how})" for path, how in found.items()]
        return GateResult(
            VERIFY_ENTRY_CHANGED,
            False,
            f"the worker changed what the verify commands run: {listing(items)}; verification "
            "that runs the worker's own version of the check proves nothing",
        )
    if named:
        items = [f"{quoted(path)} (run by {how})" for path, how in named.items()]
        return GateResult(VERIFY_ENTRY_CHANGED, True, f"the task permits changes to what the verify commands run: "
                          f"{listing(items)}", review=[{"code": VERIFY_ENTRY_PERMITTED, "sentence": "the change edits "
                          f"what the verify commands run, as the task permits: {listing(items)}; verification ran the "
                          "worker's version of it, so read it"}])
    if not all_entries:
        return GateResult(VERIFY_ENTRY_CHANGED, True, "no verify commands")
    return GateResult(
        VERIFY_ENTRY_CHANGED, True, f"nothing the verify commands run was changed ({len(all_entries)} checked)"
    )


def _tool(inv: Invocation) -> str:
    name = inv.program
    return _ALIASES.get(name, name)


def _named_files(inv: Invocation, tool: str) -> list[str]:
    """Words of the argv that name a file the invocation runs or configures itself with."""
    argv = list(inv.argv)
    named: list[str] = [argv[0]] if "/" in argv[0] else []
    if tool in _FILE_TESTS:
        return named
    for i, word in enumerate(argv):
        if word in _FILE_OPTIONS and i + 1 < len(argv):
            named.append(argv[i + 1])
        elif "=" in word and word.split("=", 1)[0] in _FILE_OPTIONS:
            named.append(word.split("=", 1)[1])
    if tool == "make":
        named += [w for w in argv[1:] if not w.startswith("-") and "=" not in w]  # targets
    elif _is_interpreter(inv.program):
        script = _first_operand(argv[1:])
        if script is not None:
            named.append(script)
    return named


def _environment_dir(inv: Invocation) -> str | None:
    """``.venv`` for a program run as ``.venv/bin/NAME`` (or ``Scripts/``): an environment in the repo."""
    if "/" not in inv.argv[0]:
        return None
    path = repo_path(inv.cwd, inv.argv[0])
    if not path:
        return None
    parent = path.rsplit("/", 2)
    if len(parent) == 3 and parent[1] in ("bin", "Scripts"):
        return parent[0]
    return None


def _is_interpreter(program: str) -> bool:
    # "$(PYTHON) tools/check.py" in a recipe: a variable naming the interpreter.
    return program in _INTERPRETERS or program.startswith(("python", "pypy", "$"))


def _first_operand(args: list[str]) -> str | None:
    """The script an interpreter runs: its first argument that is not an option (None for -c/-m)."""
    skip = False
    for word in args:
        if skip:
            skip = False
        elif word in ("-c", "-m", "--eval", "-e") or (word.startswith("-m") and len(word) > 2):
            return None
        elif word in _VALUED or word in _FILE_OPTIONS:
            skip = True
        elif word == "-":
            return None
        elif not word.startswith("-"):
            return word
    return None


def _python_module_files(inv: Invocation) -> set[str]:
    """For ``python -m a.b``: the files that command runs first, beside the command."""
    if not inv.program.startswith(("python", "pypy")):
        return set()
    argv = list(inv.argv)
    for i, word in enumerate(argv[1:], 1):
        module = word[2:] if word.startswith("-m") and len(word) > 2 else None
        if word == "-m" and i + 1 < len(argv):
            module = argv[i + 1]
        if module:
            base = module.replace(".", "/")
            return {p for p in (repo_path(inv.cwd, f"{base}.py"), repo_path(inv.cwd, f"{base}/__main__.py")) if p}
        if not word.startswith("-"):
            break  # a script: named in the argv, so covered as a word
    return set()
