"""Import argparse and pathlib without the two stdlib modules they load and bosun's commands never use.

argparse imports gettext at its top (bosun's texts are English only, and cli/main.py already turns the
translation off), and pathlib imports urllib.parse, with ipaddress behind it, for ``Path.as_uri``
alone. Together they cost every command ~5 ms of its start-up, a fifth of what a read-only verb may
spend over a bare interpreter. While the two import, a stand-in module serves those names; the
stand-ins are taken out of ``sys.modules`` right after, so any later import gets the real modules,
and the stand-in functions load the real ones when they are called. If the stdlib asks for anything
else (a future Python), everything is imported the ordinary way.
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


_STAND_INS: dict[str, dict[str, Any]] = {
    "gettext": {"gettext": _gettext, "ngettext": _ngettext},
    "urllib.parse": {"quote_from_bytes": _quote_from_bytes},
}


def import_lean() -> None:
    if "argparse" in sys.modules and "pathlib" in sys.modules:
        return
    placed = []
    for name, attrs in _STAND_INS.items():
        if name not in sys.modules:
            module = type(sys)(name)
            module.__dict__.update(attrs)
            sys.modules[name] = module
            placed.append((name, module))
    try:
        import argparse  # noqa: F401 - imported here for its side effect on sys.modules
        import pathlib  # noqa: F401
    except ImportError:  # the stdlib wanted more than the stand-ins hold: import it all for real
        for name in ("argparse", "pathlib"):
            sys.modules.pop(name, None)
    finally:
        for name, module in placed:
            if sys.modules.get(name) is module:
                del sys.modules[name]
    import argparse  # noqa: F401,F811 - a no-op unless the lean import failed
    import pathlib  # noqa: F401,F811
