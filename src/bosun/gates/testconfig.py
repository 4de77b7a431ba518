"""Content-aware locks: test-runner configuration inside files a worker may otherwise edit.

``pyproject.toml``, ``setup.cfg`` and ``package.json`` hold dependencies a worker may legitimately
add, so they are not locked whole. The parts that decide *how tests run* are locked instead, because
changing them is the cheapest way to make a failing suite pass:

* ``pyproject.toml``: every ``[tool.pytest*]`` table (``[tool.pytest.ini_options]``, plugin tables
  such as ``[tool.pytest_env]``) and ``[tool.tox]`` (tox.ini itself is always locked).
* ``setup.cfg``: the ``[tool:pytest]`` and ``[pytest]`` sections, and tox's ``[tox:tox]`` and
  ``[testenv*]`` sections.
* ``package.json``: the top-level keys ``scripts``, ``jest``, ``vitest`` and ``mocha``.

The file is found at any depth (a monorepo has one per package). Sections are compared parsed, so
reformatting is not a change; a changed file that does not parse (before or after) counts as changed,
since nobody can say what the runner would make of it.

A new tox environment (a ``[tool.tox.env.NAME]`` table or a ``[testenv:NAME]`` section that did not
exist) changes nothing that already runs, so it is described as an addition (:data:`NEW_ENV`) that
still needs the user's approval, not as tampering. It is tampering after all when a verify command
selects that environment (``tox -e NAME``, ``TOXENV``, ``-e ALL``) or selects environments by label
(``tox -m``), since then the worker's new table decides what verification runs.
"""

from __future__ import annotations

import configparser
import json
import tomllib
from collections.abc import Callable
from typing import Any

from bosun.core.changes import FileChange
from bosun.core.quoting import quoted

PACKAGE_JSON_KEYS = ("scripts", "jest", "vitest", "mocha")
NEW_ENV = "(adds a tox environment; nothing that ran before changes)"
# Stands for "every environment may be selected": any new one is tampering.
ANY_ENV = "*"
SETUP_CFG_SECTIONS = ("tool:pytest", "pytest", "tox:tox")


class _Unparsable(Exception):
    pass


def locked_sections(
    change: FileChange,
    base_text: Callable[[str], str | None],
    new_text: Callable[[str], str | None],
    selected_envs: frozenset[str] = frozenset({ANY_ENV}),
) -> list[str]:
    """Descriptions ("pyproject.toml [tool.pytest.ini_options]") of locked sections the change alters.

    ``selected_envs`` are the tox environments verification selects by name (:data:`ANY_ENV`: any);
    a new environment outside them is reported with :data:`NEW_ENV`.
    """
    found: list[str] = []
    if change.status[:1] == "R" and change.old_path and change.old_path != change.path:
        # A rename moves the config away from where the runner looks: the old place loses it all.
        found += _compare(change.old_path, base_text(change.old_path), None, selected_envs)
        found += _compare(change.path, base_text(change.path), new_text(change.path), selected_envs)
    else:
        found += _compare(change.path, base_text(change.path), new_text(change.path), selected_envs)
    return found


def tox_selected_envs(invocations: list[tuple[tuple[str, ...], dict[str, str]]]) -> frozenset[str]:
    """Tox environments the given (argv, env) invocations select by name; :data:`ANY_ENV` for "any"."""
    names: set[str] = set()
    for argv, env in invocations:
        if not argv or argv[0].rsplit("/", 1)[-1] != "tox":
            continue
        named = {n for n in env.get("TOXENV", "").split(",") if n}
        names |= named
        words = list(argv[1:])
        if not named and not any(w.startswith(("-e", "--env")) for w in words):
            return frozenset({ANY_ENV})  # its env_list, or tox's default: any environment may be the one it runs
        for i, word in enumerate(words):
            value = None
            if word in ("-e", "--env", "-m", "--labels", "-f", "--factors") and i + 1 < len(words):
                value = words[i + 1]
            elif word.startswith(("-e=", "--env=")):
                value = word.split("=", 1)[1]
            elif word.startswith("-e") and len(word) > 2:
                value = word[2:]
            if word in ("-m", "--labels", "-f", "--factors") or word.startswith(("--labels=", "--factors=")):
                return frozenset({ANY_ENV})  # labels and factors are declared inside the tables themselves
            if value is not None:
                names.update(n.strip() for n in value.split(",") if n.strip())
    return frozenset({ANY_ENV}) if "ALL" in names else frozenset(names)


def only_adds_envs(path: str, before: str | None, after: str | None, selected: frozenset[str]) -> bool:
    """Whether the whole of a change to a tox configuration file (``tox.ini``, ``setup.cfg``,
    ``pyproject.toml``) is tox environments no verify command selects: every section or table the
    file has is the same before and after but those new ones. A comment or reformatting is no change."""
    if before is None or after is None or ANY_ENV in selected:
        return False
    try:
        if path.endswith(".toml"):
            old, new = _flat_tables(tomllib.loads(before)), _flat_tables(tomllib.loads(after))
        else:
            old, new = _ini_sections(before), _ini_sections(after)
    except (tomllib.TOMLDecodeError, configparser.Error):
        return False
    added = [k for k in new if k not in old]
    envs = [k for k in added if _is_new_env(k, None, new[k], selected)]
    inside = all(any(k.startswith(e + ".") for e in envs) for k in added if k not in envs)  # an env's own subtables
    return bool(envs) and inside and all(new.get(k) == old.get(k) for k in old)


def _ini_sections(text: str) -> dict[str, Any]:
    parser = configparser.RawConfigParser()
    parser.read_string(text)
    return {name: dict(parser.items(name)) for name in parser.sections()}


def _flat_tables(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A TOML document as ``{"tool.tox.env.docs": {its keys}}``: each table apart from the tables in it."""
    out: dict[str, Any] = {prefix: {k: v for k, v in data.items() if not isinstance(v, dict)}}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flat_tables(value, f"{prefix}.{key}" if prefix else key))
    return out


def _compare(path: str, before: str | None, after: str | None, selected: frozenset[str]) -> list[str]:
    name = path.rsplit("/", 1)[-1]
    extract = _EXTRACTORS.get(name)
    if extract is None or before == after:
        return []
    try:
        old, new = extract(before), extract(after)
    except _Unparsable:
        return [f"{quoted(path)} (does not parse, so its test configuration cannot be checked)"]
    return [f"{quoted(path)} {section}" for section in _differences(old, new, selected)]


def _is_new_env(table: str, before: Any, after: Any, selected: frozenset[str]) -> bool:
    """``table`` ("tool.tox.env.docs" or "testenv:docs") is a tox environment this change adds, unselected."""
    if before is not None or not isinstance(after, dict) or ANY_ENV in selected:
        return False
    for prefix in ("tool.tox.env.", "testenv:"):
        if table.startswith(prefix):
            env = table[len(prefix) :]
            return bool(env) and "." not in env and env not in selected
    return False


def _pyproject(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise _Unparsable from None
    tool = data.get("tool")
    if not isinstance(tool, dict):
        return {}
    return {f"[tool.{k}]": v for k, v in tool.items() if k.startswith("pytest") or k == "tox"}


def _setup_cfg(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text)
    except configparser.Error:
        raise _Unparsable from None
    return {
        f"[{name}]": dict(parser.items(name))
        for name in parser.sections()
        if name in SETUP_CFG_SECTIONS or name in ("tox", "testenv") or name.startswith("testenv:")
    }


def _package_json(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        raise _Unparsable from None
    if not isinstance(data, dict):
        raise _Unparsable
    return {f'"{k}"': data[k] for k in PACKAGE_JSON_KEYS if k in data}


def _tox_ini(text: str | None) -> dict[str, Any]:
    """tox.ini is always locked whole; its sections are read so that a task's ``permit: [tox.ini]``
    can tell a new tox environment from a change to the ``[pytest]`` section pytest itself reads."""
    return _setup_cfg(text)


_EXTRACTORS: dict[str, Callable[[str | None], dict[str, Any]]] = {
    "tox.ini": _tox_ini,
    "pyproject.toml": _pyproject,
    "setup.cfg": _setup_cfg,
    "package.json": _package_json,
}


def _differences(old: dict[str, Any], new: dict[str, Any], selected: frozenset[str]) -> list[str]:
    """Names of the sections that differ, as specific as a nested TOML table allows."""
    out: list[str] = []
    for key in list(dict.fromkeys([*old, *new])):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if key.startswith("[tool.") and _table_or_absent(a) and _table_or_absent(b):
            out += _table_differences(key[1:-1], a or {}, b or {}, selected)
        elif _is_new_env(key[1:-1], a, b, selected):
            out.append(f"{key} {NEW_ENV}")
        else:
            out.append(key)
    return out


def _table_or_absent(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def _table_differences(name: str, a: dict[str, Any], b: dict[str, Any], selected: frozenset[str]) -> list[str]:
    """The tables below ``name`` that differ; never empty when ``a != b``."""
    # "[tool.pytest.ini_options]" says more than "[tool.pytest]" when only the subtable changed.
    out: list[str] = []
    own_change = False
    for key in list(dict.fromkeys([*a, *b])):
        x, y = a.get(key), b.get(key)
        if x == y:
            continue
        if _is_new_env(f"{name}.{key}", x, y, selected):
            out.append(f"[{name}.{quoted(key)}] {NEW_ENV}")
        elif _table_or_absent(x) and _table_or_absent(y):
            # A key is the worker's text (a quoted TOML key can hold anything): shown quoted.
            out += _table_differences(f"{name}.{quoted(key)}", x or {}, y or {}, selected)
        else:
            own_change = True
    if own_change or not out:
        out.insert(0, f"[{name}]")
    return out
