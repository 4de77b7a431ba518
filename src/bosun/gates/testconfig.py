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
"""

from __future__ import annotations

import configparser
import json
import tomllib
from collections.abc import Callable
from typing import Any

from bosun.changes import FileChange

PACKAGE_JSON_KEYS = ("scripts", "jest", "vitest", "mocha")
SETUP_CFG_SECTIONS = ("tool:pytest", "pytest", "tox:tox")


class _Unparsable(Exception):
    pass


def locked_sections(
    change: FileChange, base_text: Callable[[str], str | None], new_text: Callable[[str], str | None]
) -> list[str]:
    """Descriptions ("pyproject.toml [tool.pytest.ini_options]") of locked sections the change alters."""
    found: list[str] = []
    if change.status[:1] == "R" and change.old_path and change.old_path != change.path:
        # A rename moves the config away from where the runner looks: the old place loses it all.
        found += _compare(change.old_path, base_text(change.old_path), None)
        found += _compare(change.path, base_text(change.path), new_text(change.path))
    else:
        found += _compare(change.path, base_text(change.path), new_text(change.path))
    return found


def _compare(path: str, before: str | None, after: str | None) -> list[str]:
    name = path.rsplit("/", 1)[-1]
    extract = _EXTRACTORS.get(name)
    if extract is None or before == after:
        return []
    try:
        old, new = extract(before), extract(after)
    except _Unparsable:
        return [f"{path} (does not parse, so its test configuration cannot be checked)"]
    return [f"{path} {section}" for section in _differences(old, new)]


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
        if name in SETUP_CFG_SECTIONS or name == "testenv" or name.startswith("testenv:")
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


_EXTRACTORS: dict[str, Callable[[str | None], dict[str, Any]]] = {
    "pyproject.toml": _pyproject,
    "setup.cfg": _setup_cfg,
    "package.json": _package_json,
}


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Names of the sections that differ, as specific as a nested TOML table allows."""
    out: list[str] = []
    for key in list(dict.fromkeys([*old, *new])):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if key.startswith("[tool.") and _table_or_absent(a) and _table_or_absent(b):
            out += _table_differences(key[1:-1], a or {}, b or {})
        else:
            out.append(key)
    return out


def _table_or_absent(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def _table_differences(name: str, a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The tables below ``name`` that differ; never empty when ``a != b``."""
    # "[tool.pytest.ini_options]" says more than "[tool.pytest]" when only the subtable changed.
    out: list[str] = []
    own_change = False
    for key in list(dict.fromkeys([*a, *b])):
        x, y = a.get(key), b.get(key)
        if x == y:
            continue
        if _table_or_absent(x) and _table_or_absent(y):
            out += _table_differences(f"{name}.{key}", x or {}, y or {})
        else:
            own_change = True
    if own_change or not out:
        out.insert(0, f"[{name}]")
    return out
