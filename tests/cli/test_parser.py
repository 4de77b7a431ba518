"""The parser's start-up shortcuts change nothing a user sees, and keep slow imports off the fast paths."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bosun.cli.main import INSIGHT_VERBS, PARENT_VERBS, VERBS, build_parser
from tests.conftest import ROOT


def _choices(parser) -> dict:
    return next(a for a in parser._actions if a.dest == "command").choices


def test_verbs_is_every_verb_in_order():
    assert tuple(_choices(build_parser())) == VERBS


@pytest.mark.parametrize("verb", VERBS)
def test_a_verb_alone_is_built_exactly_as_in_the_full_parser(verb):
    full, alone = _choices(build_parser())[verb], _choices(build_parser(verb))[verb]
    assert alone.format_help() == full.format_help()
    expected = [verb]
    for group in (PARENT_VERBS, INSIGHT_VERBS):  # built together
        expected = list(group) if verb in group else expected
    assert list(_choices(build_parser(verb))) == expected


def test_the_verb_list_alone_gives_the_same_top_level_help():
    assert build_parser(None).format_help() == build_parser().format_help()


def _plan_verbs() -> tuple[str, ...]:
    from bosun.cli.dispatch import PLAN_SUBCOMMANDS

    return PLAN_SUBCOMMANDS


@pytest.mark.parametrize("args", [["--help"], ["list", "--json"], ["show", "20261201-000000-abcdef", "--json"],
                                  ["plan", "list", "--json"], ["history", "calc", "--json"], ["schema", "--json"],
                                  ["template"],
                                  *([verb, "--help"] for verb in VERBS),
                                  *(["plan", verb, "--help"] for verb in _plan_verbs())],
                         ids=" ".join)
def test_fast_paths_import_nothing_heavy(args, tmp_path):
    # No BOSUN_HOME: the default state dir (here under XDG_STATE_HOME) must not need platformdirs.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop("BOSUN_HOME", None)
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "bosun", *args], env=env, capture_output=True,
                         text=True, timeout=60)
    modules = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    heavy = {"typing", "shutil", "platformdirs", "pydantic", "rich", "yaml", "httpx", "dataclasses", "inspect",
             "bosun.gates", "threading", "gettext", "urllib.parse", "ipaddress", "subprocess", "datetime"}
    assert not modules & heavy, sorted(modules & heavy)


def test_the_verb_table_names_every_verb_and_plan_verb_and_each_handler_exists():
    import argparse

    from bosun.cli.dispatch import HANDLERS, PLAN_SUBCOMMANDS, handler_for

    plan = _choices(build_parser())["plan"]
    plan_verbs = next(a for a in plan._actions if a.dest == "plan_command").choices
    assert tuple(plan_verbs) == PLAN_SUBCOMMANDS
    assert {v for v in HANDLERS if not v.startswith("plan ")} == set(VERBS) - {"plan"}
    for verb in HANDLERS:
        command, _, sub = verb.partition(" ")
        assert callable(handler_for(argparse.Namespace(command=command, plan_command=sub or None)))


@pytest.mark.parametrize("argv", [["list", "--json"], ["show", "20261201-000000-abcdef", "--json"],
                                  ["show", "--json", "20261201-000000-abcdef"],
                                  ["workers", "--json"], ["workers", "--repo", "r", "--json"],
                                  ["models", "--json", "--repo", "/r"], ["savings", "--json"],
                                  ["pool", "status", "--json"], ["pool", "--json", "status", "--repo", "."]])
def test_the_plain_reads_parse_exactly_as_argparse_does(argv):
    from bosun.cli.main import plain_read

    assert vars(plain_read(argv)) == vars(build_parser(argv[0]).parse_args(argv))


@pytest.mark.parametrize("argv", [["list"], ["list", "--json", "--limit", "3"], ["show", "-x", "--json"],
                                  ["show", "--json", "--json"], ["show", "R"], ["--json", "list"],
                                  ["show", "R", "--json", "--events"], ["workers"], ["--json", "workers"],
                                  ["workers", "--json", "--json"], ["models", "p", "--json"], ["pool", "warm", "--json"],
                                  ["savings", "--json", "--all"], ["workers", "--json", "--repo", "-r"],
                                  ["workers", "--repo", "--json"], ["--repo", "r", "workers", "--json"]])
def test_every_other_form_goes_through_argparse(argv):
    from bosun.cli.main import plain_read

    assert plain_read(argv) is None


@pytest.mark.parametrize(("argv", "skips"), [(["list", "--json"], True), (["show", "R", "--json"], True),
                                             (["--help"], True), (["delegate", "--help"], True), ([], True),
                                             (["delegate", "task.yaml"], False), (["approve", "R"], False),
                                             (["plan", "run", "p.yaml"], False), (["dash"], False),
                                             (["workers"], True), (["pool", "status", "--json"], True),
                                             (["pool", "warm"], False), (["pool", "drain", "--json"], False)])
def test_only_reading_command_lines_skip_the_final_collections(argv, skips):
    from bosun.cli.main import reads_only

    assert reads_only(argv) is skips


def test_a_read_registers_the_quick_exit_and_still_prints_everything(tmp_path):
    code = ("import sys; from bosun.cli.main import main; from bosun.core import quick_exit\n"
            "rc = main(['list', '--json']); sys.stderr.write(str(quick_exit.registered())); sys.exit(rc)")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BOSUN_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "True", out.stderr
    assert out.stdout.startswith('{"runs": [') and out.stdout.endswith("}\n")
