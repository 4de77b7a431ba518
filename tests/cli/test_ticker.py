"""The verify ticker's rules, without a process: after the delay, once a tick, one line, cleared."""

from __future__ import annotations

import io
import threading
import time

from bosun.cli.ticker import Ticker, verify_ticker
from bosun.isolation.verify_commands import SHOW_PROGRESS


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_quick_command_shows_nothing() -> None:
    term = Terminal()
    with Ticker(term, after_s=0.5, every_s=0.1).show("true"):
        time.sleep(0.05)
    assert term.getvalue() == ""


def test_a_long_command_ticks_in_place_and_is_cleared() -> None:
    term = Terminal()
    with Ticker(term, after_s=0.05, every_s=0.05).show("pytest -q"):
        time.sleep(0.3)
    text = term.getvalue()
    assert text.startswith("\r  verifying: pytest -q  0 s\x1b[K"), text
    assert text.endswith("\r\x1b[K") and "\n" not in text


def test_a_long_label_is_cut_to_one_line() -> None:
    term = Terminal()
    with Ticker(term, after_s=0.01, every_s=0.05).show("x" * 500):
        time.sleep(0.1)
    first = term.getvalue().split("\r")[1]
    assert len(first.removesuffix("\x1b[K")) <= 79 and "..." in first


def test_another_thread_does_not_tick() -> None:
    term = Terminal()
    ticker = Ticker(term, after_s=0.01, every_s=0.01)

    def verify_elsewhere() -> None:
        with ticker.show("sleep 1"):
            time.sleep(0.1)

    t = threading.Thread(target=verify_elsewhere)
    t.start()
    t.join()
    assert term.getvalue() == ""


def test_installed_only_for_a_person_at_a_terminal() -> None:
    for enabled, stream in ((True, io.StringIO()), (False, Terminal())):
        with verify_ticker(enabled, stream):
            assert SHOW_PROGRESS.get() is None
    with verify_ticker(True, Terminal()):
        assert SHOW_PROGRESS.get() is not None
    assert SHOW_PROGRESS.get() is None
