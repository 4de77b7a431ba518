"""Import a few stdlib modules without the modules they load and bosun's commands never use.

Every bosun command pays for its imports before it does anything, and the read-only verbs must start
within 30 ms of a bare interpreter. Three stdlib imports load modules for features bosun does not use:

* argparse imports gettext at its top (bosun's texts are English only, and cli/main.py turns the
  translation off);
* pathlib imports urllib.parse, with ipaddress behind it, for ``Path.as_uri`` alone, and ntpath,
  which on POSIX tries (and fails) to import the Windows modules ``nt`` and ``_winapi``;
* sqlite3 imports datetime, whose pure-Python half it never uses: it wants the classes, which the
  C module ``_datetime`` holds (the ``datetime`` module re-exports exactly those).

While such a module imports, a stand-in serves those names (a stand-in ``None`` makes an import of
a Windows-only module fail at once); the stand-ins leave ``sys.modules`` right after, so any later
import gets the real modules, and the stand-in functions load the real ones when called. If the
stdlib asks for anything else (another Python version), the module is imported the ordinary way.
Together this is ~7 ms of a read-only verb's start-up.
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


def import_argparse_and_pathlib() -> None:
    stand_ins: dict[str, dict[str, Any] | None] = {
        "gettext": {"gettext": _gettext, "ngettext": _ngettext},
        "urllib.parse": {"quote_from_bytes": _quote_from_bytes},
    }
    if sys.platform != "win32":
        stand_ins.update({"nt": None, "_winapi": None})
    _lean(("argparse", "pathlib"), stand_ins)


def import_sqlite3() -> None:
    classes = _datetime_classes()
    if classes is None:
        return
    _lean(("sqlite3",), {"datetime": classes})
