"""What the task's verify commands will run, read statically from their argv.

Gates that protect the harness need to know which programs verification starts, from which
directory, and with which ``PYTHONPATH``: a ``Makefile`` matters when a command runs ``make``, and a
``sitecustomize.py`` under ``src/`` is loaded when a command sets ``PYTHONPATH=src``.
:func:`invocations` turns each verify entry into the simple commands it runs:

* an argv entry is one command; a ``shell: true`` entry (and ``sh -c``/``bash -c`` inside any entry)
  is split at ``;``, ``&&``, ``||``, ``|`` and ``&``, following ``cd DIR`` between commands;
* leading ``VAR=value`` words and wrappers (``env``, ``timeout``, ``nice``, ``uv run``,
  ``poetry run``, ...) are peeled off, their variables kept, so ``env PYTHONPATH=src pytest`` is
  ``pytest`` with ``PYTHONPATH=src``.

This is a reading, not an emulation of a shell: it errs towards seeing more commands, never fewer.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field

from bosun.core.contract import TaskContract, VerifyCommand

_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "\n", ";;", "|&"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
# Wrappers that run the rest of their argv: name -> options of theirs that take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(),
    "time": frozenset(),
    "command": frozenset(),
    "exec": frozenset(),
    "xvfb-run": frozenset({"-a", "-n", "-s", "--server-args", "-f"}),
}
# "TOOL run ..." runners: the command follows "run" (after the tool's own options).
_RUNNERS: dict[str, frozenset[str]] = {
    "uv": frozenset({"--with", "--python", "-p", "--extra", "--group", "--project", "--directory", "--env-file"}),
    "poetry": frozenset({"-C", "--directory", "-P", "--project"}),
    "pipenv": frozenset(),
    "pdm": frozenset({"-p", "--project"}),
    "hatch": frozenset({"-e", "--env"}),
    "rye": frozenset(),
    "pixi": frozenset({"-e", "--environment", "--manifest-path"}),
}


@dataclass(frozen=True)
class Invocation:
    """One simple command a verify entry runs."""

    argv: tuple[str, ...]
    cwd: str  # repo-relative directory it runs in ("" is the root)
    env: dict[str, str] = field(default_factory=dict)
    source: str = ""  # the verify entry as written, for details

    @property
    def program(self) -> str:
        return posixpath.basename(self.argv[0]) if self.argv else ""


def invocations(task: TaskContract) -> list[Invocation]:
    """Every simple command the task's verify entries run, in order."""
    return [inv for cmd in task.verify for inv in entry_invocations(cmd)]


def entry_invocations(cmd: VerifyCommand) -> list[Invocation]:
    """The simple commands one verify entry runs."""
    cwd = _inside("", cmd.cwd or "") or ""
    words = _shell_words(" ".join(cmd.run)) if cmd.shell else [list(cmd.run)]
    return _expand(words, cwd, dict(cmd.env), " ".join(cmd.run))


PYTEST, UNITTEST, JUNIT = "pytest", "unittest", "junit"


def runner_of(cmd: VerifyCommand) -> str | None:
    """Which per-test report a verify entry must give: ``junit`` (the entry names a ``junit`` file),
    ``pytest`` (it runs pytest: its JUnit XML), ``unittest`` (``python -m unittest``: its summary), or
    None: a command that runs neither (``make check``, a script), judged by its exit code alone."""
    if cmd.junit:
        return JUNIT
    found = [python_module(inv) or inv.program for inv in entry_invocations(cmd)]
    if any(name in ("pytest", "py.test") for name in found):
        return PYTEST
    return UNITTEST if "unittest" in found else None


def python_module(inv: Invocation) -> str | None:
    """``MODULE`` of ``python [options] -m MODULE ...``, or None."""
    if not inv.program.startswith("python"):
        return None
    words = list(inv.argv[1:])
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-m":
            return words[i + 1] if i + 1 < len(words) else None
        if word.startswith("-m") and len(word) > 2:
            return word[2:]
        if word == "-c" or not word.startswith("-"):
            return None  # a command string or a script: python runs it, not a module
        i += 2 if word in ("-X", "-W", "--check-hash-based-pycs") else 1
    return None


def shell_invocations(text: str, cwd: str, source: str) -> list[Invocation]:
    """The simple commands a shell command line runs (a recipe line, a package.json script)."""
    return _expand(_shell_words(text), cwd, {}, source)


def pythonpath_dirs(inv: Invocation) -> list[str]:
    """Repo-relative directories the invocation's ``PYTHONPATH`` puts on ``sys.path``."""
    raw = inv.env.get("PYTHONPATH", "")
    dirs = [_inside(inv.cwd, part) for part in raw.split(":") if part]
    return [d for d in dirs if d is not None]


def repo_path(cwd: str, word: str) -> str | None:
    """The repo-relative path a word names when read from ``cwd``, or None if it cannot be a repo path."""
    if not word or word.startswith("-") or "\0" in word:
        return None
    return _inside(cwd, word)


def _inside(cwd: str, word: str) -> str | None:
    if posixpath.isabs(word) or word.startswith("~"):
        return None
    joined = posixpath.normpath(posixpath.join(cwd, word)) if cwd else posixpath.normpath(word)
    if joined == ".":
        return ""
    if joined == ".." or joined.startswith("../"):
        return None
    return joined


def _shell_words(text: str) -> list[list[str]]:
    """A shell string split into simple commands (lists of words); unparsable text gives its split words."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.whitespace = " \t\r"  # newlines separate commands
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: read it word by word rather than not at all
        tokens = text.split()
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in _SEPARATORS or (token and set(token) <= set(";&|()\n")):
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _expand(commands: list[list[str]], cwd: str, env: dict[str, str], source: str) -> list[Invocation]:
    out: list[Invocation] = []
    for words in commands:
        local = dict(env)
        argv = _peel(words, local)
        if not argv:
            env.update(local)  # "export X=1" style assignments alone carry on to what follows
            continue
        name = posixpath.basename(argv[0])
        if name == "cd":
            cwd = (_inside(cwd, argv[1]) if len(argv) > 1 else "") or ""
            continue
        if name == "export":
            env.update(_assignments(argv[1:]))
            continue
        if name in _SHELLS and "-c" in argv[1:-1]:
            script = argv[argv.index("-c", 1) + 1]
            out.append(Invocation(tuple(argv), cwd, local, source))
            out += _expand(_shell_words(script), cwd, local, source)
            continue
        out.append(Invocation(tuple(argv), cwd, local, source))
    return out


def _peel(words: list[str], env: dict[str, str]) -> list[str]:
    """Drop leading assignments and wrappers, recording assignments in ``env``; the real argv remains."""
    rest = list(words)
    while rest:
        head = rest[0]
        name = posixpath.basename(head)
        if _is_assignment(head):
            env.update(_assignments([head]))
            rest = rest[1:]
        elif name in _WRAPPERS:
            rest = _skip_options(rest[1:], _WRAPPERS[name], env)
            if name == "timeout" and rest:
                rest = rest[1:]  # the duration
        elif name in _RUNNERS and len(rest) > 1:
            after = _skip_options(rest[1:], _RUNNERS[name], None)
            if not after or after[0] != "run":
                return rest
            rest = _skip_options(after[1:], _RUNNERS[name], None)
        else:
            return rest
    return rest


def _skip_options(words: list[str], valued: frozenset[str], env: dict[str, str] | None) -> list[str]:
    i = 0
    while i < len(words):
        word = words[i]
        if env is not None and _is_assignment(word):
            env.update(_assignments([word]))
        elif word == "--":
            return words[i + 1 :]
        elif not word.startswith("-"):
            return words[i:]
        elif word in valued:
            i += 1
        i += 1
    return []


def _is_assignment(word: str) -> bool:
    name, sep, _ = word.partition("=")
    return bool(sep) and name.replace("_", "a").isalnum() and not name[:1].isdigit()


def _assignments(words: list[str]) -> dict[str, str]:
    return dict(w.split("=", 1) for w in words if _is_assignment(w))
