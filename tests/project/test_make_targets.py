"""`make test` prints its progress once: the Makefile's pytest command lines read with pyproject's addopts.

pytest-xdist, when stdout is not a terminal (make in CI, a pipe), writes its start-up status as a line
at start-up and again once collection is done; under -q that status is always "bringing up nodes...",
so a quiet `-n` run prints the same line twice. At the default verbosity the two lines say different
things ("created: 2/2 workers", then "2 workers [N items]")."""

from __future__ import annotations

import re
import shlex
import tomllib

from tests.conftest import ROOT


def _pytest_lines() -> list[tuple[str, list[str]]]:
    """(target, argv) of every pytest command in the Makefile, make's $(...) references left out."""
    found, target = [], ""
    for line in (ROOT / "Makefile").read_text().splitlines():
        if m := re.match(r"^([\w-]+):", line):
            target = m.group(1)
        if "pytest" in line and line.startswith("\t"):
            words = shlex.split(re.sub(r"\$\((?:[^()]|\([^()]*\))*\)", " ", line.split("pytest", 1)[1]))
            found.append((target, words))
    return found


def _addopts() -> list[str]:
    opts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"].get("addopts", "")
    return shlex.split(opts) if isinstance(opts, str) else list(opts)


def _verbosity(argv: list[str]) -> int:
    level = 0
    for word in argv:
        if word in ("--quiet", "--verbose"):
            level += 1 if word == "--verbose" else -1
        elif re.fullmatch(r"-[qv]+", word):
            level += word.count("v") - word.count("q")
    return level


def _workers_given(argv: list[str]) -> int:
    return sum(1 for w in argv if w in ("-n", "--numprocesses") or re.fullmatch(r"-n\d+|--numprocesses=.+", w))


def test_the_makefile_runs_pytest_in_the_test_targets() -> None:
    targets = {target for target, _ in _pytest_lines()}
    assert {"test", "test-fast"} <= targets, targets


def test_a_parallel_run_prints_its_start_up_status_once() -> None:
    for target, argv in _pytest_lines():
        argv = [*_addopts(), *argv]
        if not _workers_given(argv):
            continue
        assert _workers_given(argv) == 1, f"make {target}: -n is given twice (addopts and the command line)"
        assert _verbosity(argv) >= 0, (f"make {target}: -q with -n makes pytest-xdist print "
                                       "'bringing up nodes...' twice")


def test_the_rule_reads_quiet_and_workers() -> None:
    assert _verbosity(["-n", "2", "-q"]) == -1 and _verbosity(["-qq", "-v"]) == -1 and _verbosity(["-ra"]) == 0
    assert _workers_given(["-n", "2"]) == 1 and _workers_given(["-n2", "--numprocesses=2"]) == 2
