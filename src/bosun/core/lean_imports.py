"""Import a few stdlib modules without the modules they load and bosun's commands never use.

Every bosun command pays for its imports before it does anything, and the read-only verbs must start
within 30 ms of a bare interpreter. Some imports load modules for features bosun does not use:

* argparse imports gettext at its top (bosun's texts are English only, and cli/main.py turns the
  translation off);
* pathlib imports urllib.parse, with ipaddress behind it, for ``Path.as_uri`` alone, and ntpath,
  which on POSIX tries (and fails) to import the Windows modules ``nt`` and ``_winapi``;
* sqlite3 imports datetime, whose pure-Python half it never uses: it wants the classes, which the
  C module ``_datetime`` holds (the ``datetime`` module re-exports exactly those);
* pydantic's plugin loader imports importlib.metadata (with email, zipfile and csv behind it, about a
  quarter of pydantic's import) to find plugins, packages that hook into every model's validation
  for observability. bosun's own models load none: they validate bosun's files, and a plugin
  installed next to bosun has no business seeing them (a finder catches the loader's import, when
  the first model is built; see ``skip_pydantic_plugins``).

While such a module imports, a stand-in serves those names (a stand-in ``None`` makes an import of
a Windows-only module fail at once); the stand-ins leave ``sys.modules`` right after, so any later
import gets the real modules, and the stand-in functions load the real ones when called. If the
stdlib asks for anything else (another Python version), the module is imported the ordinary way.
Together this is ~7 ms of a read-only verb's start-up and ~25 ms of any command that validates.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: importing typing costs start-up
if TYPE_CHECKING:
    from typing import Any


def _gettext(message: str) -> str:
    from gettext import gettext

    return gettext(message)


def _ngettext(singular: str, plural: str, n: int) -> str:
    from gettext import ngettext

    return ngettext(singular, plural, n)


def _quote_from_bytes(bs: bytes, safe: str = "/") -> str:
    from urllib.parse import quote_from_bytes

    return quote_from_bytes(bs, safe)


def _entry_points(**params: Any) -> Any:
    from importlib.metadata import entry_points

    return entry_points(**params)


def _datetime_classes() -> dict[str, Any] | None:
    try:
        import _datetime
    except ImportError:
        return None
    return {name: getattr(_datetime, name) for name in ("date", "time", "datetime", "timedelta", "timezone",
                                                        "tzinfo", "MINYEAR", "MAXYEAR")}


def _lean(modules: tuple[str, ...], stand_ins: dict[str, dict[str, Any] | None]) -> None:
    """Import ``modules`` with ``stand_ins`` (name: attributes, or None for "does not exist") in place."""
    if all(name in sys.modules for name in modules):
        return
    placed: list[tuple[str, Any]] = []
    for name, attrs in stand_ins.items():
        if name in sys.modules:
            continue
        module = None
        if attrs is not None:
            module = type(sys)(name)
            module.__dict__.update(attrs)
        sys.modules[name] = module  # type: ignore[assignment]
        placed.append((name, module))
    try:
        for name in modules:
            __import__(name)
    except ImportError:  # the stdlib wanted more than the stand-ins hold: import it all for real
        for name in modules:
            sys.modules.pop(name, None)
    finally:
        for name, module in placed:
            if name in sys.modules and sys.modules[name] is module:
                del sys.modules[name]
    for name in modules:
        __import__(name)  # a no-op unless the lean import failed


def sha256(data: bytes = b"") -> Any:
    """``hashlib.sha256(data)`` without importing hashlib, which loads OpenSSL (~4 ms): the same digest
    from the interpreter's built-in module, or hashlib's where there is none."""
    try:
        from _sha256 import sha256 as builtin  # type: ignore[import-not-found,unused-ignore]  # Python 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as builtin  # type: ignore[import-not-found,unused-ignore]  # 3.12 and later
        except ImportError:
            from hashlib import sha256 as builtin
    return builtin(data)


def _pathlib_stand_ins() -> dict[str, dict[str, Any] | None]:
    stand_ins: dict[str, dict[str, Any] | None] = {"urllib.parse": {"quote_from_bytes": _quote_from_bytes}}
    if sys.platform != "win32":
        stand_ins.update({"nt": None, "_winapi": None})
    return stand_ins


def import_argparse_and_pathlib() -> None:
    stand_ins = _pathlib_stand_ins()
    stand_ins["gettext"] = {"gettext": _gettext, "ngettext": _ngettext}
    _lean(("argparse", "pathlib"), stand_ins)


def import_pathlib() -> None:
    _lean(("pathlib",), _pathlib_stand_ins())


def import_sqlite3() -> None:
    classes = _datetime_classes()
    if classes is None:
        return
    _lean(("sqlite3",), {"datetime": classes})


class _NoPydanticPlugins:
    """A finder that sees pydantic's plugin loader imported (when the first model is built) without
    importlib.metadata, and tells it there are no plugins, so it never scans the installed packages."""

    name = "pydantic.plugin._loader"

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.name:
            return None
        sys.meta_path.remove(self)  # once: any later import of it is the ordinary one
        for finder in sys.meta_path:
            spec = getattr(finder, "find_spec", lambda *_: None)(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            stand_in = None
            if "importlib.metadata" not in sys.modules:
                stand_in = type(sys)("importlib.metadata")
                stand_in.__dict__["entry_points"] = _entry_points
                sys.modules["importlib.metadata"] = stand_in
            try:
                run(module)
            finally:
                if stand_in is not None and sys.modules.get("importlib.metadata") is stand_in:
                    del sys.modules["importlib.metadata"]
            if getattr(module, "_plugins", False) is None:  # "not loaded yet": served from now on
                module._plugins = {}

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def skip_pydantic_plugins() -> None:
    """Called once, by bosun's package: it costs a finder in ``sys.meta_path`` until pydantic's
    first model is built (or forever in a process that never builds one: one string compare an import)."""
    if "pydantic.plugin._loader" not in sys.modules and not any(isinstance(f, _NoPydanticPlugins) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoPydanticPlugins())
