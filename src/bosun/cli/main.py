"""bosun's command line: parse, call the core, render. Nothing else lives here.

Handlers are imported lazily so `bosun --help`, `bosun show --json` and `bosun list --json` start
fast (no pydantic, no rich on those paths).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs `bosun --help` start-up time
if TYPE_CHECKING:
    from typing import NoReturn

# Set by main(): usage errors are JSON when the command line asks for --json.
_JSON_REQUESTED = [False]
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away

DESCRIPTION = """\
Hand bounded coding tasks to cheap worker agents and keep authority over what lands.

A task contract goes in; bosun gives the worker an isolated git worktree, runs it locked down,
re-runs the verification commands itself, hashes the diff and checks gates. Only a green,
unchanged diff can be approved and merged. Nothing is ever pushed.
"""

EPILOG = """\
typical flow:
  bosun template > task.yaml                 write a task contract
  bosun delegate task.yaml --profile cheap   prepare + work + verify + gates
  bosun show RUN                             what happened, gate by gate
  bosun approve RUN && bosun integrate RUN   approve it, then land it on your branch (never pushed)
  bosun delegate task.yaml --auto-approve    all of it when the verdict is landable

exit codes: 0 ok (a run: verified, its verdict landable), 1 error, 2 bad input,
            3 refused (a gate, the verification or a review), 4 timeout,
            5 busy (run locked, concurrency cap, --wait-limit), 6 conflict (nothing changed),
            7 needs review (a person must say yes: `bosun approve RUN`),
            130/143/129 interrupted by Ctrl-C/SIGTERM/SIGHUP (worker stopped; `bosun recover`),
            141 stdout closed early (e.g. `| head`)
"""


def _untranslated(message: str) -> str:
    return message


# bosun's texts are English only. argparse asks gettext to translate every string it creates, and
# each ask probes the file system for catalogs that do not exist: most of a fast command's parse time.
setattr(argparse, "_", _untranslated)  # noqa: B010 - a module global, not an attribute of an object

_WIDTH: list[int] = []


def _terminal_width() -> int:
    """What shutil.get_terminal_size() gives (COLUMNS, else the terminal, else 80), asked once per process
    and without importing shutil (argparse builds a formatter, and asks, for every argument)."""
    if not _WIDTH:
        import os

        try:
            columns = int(os.environ.get("COLUMNS", "0"))
        except ValueError:
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
            except (OSError, ValueError, AttributeError):
                columns = 0
        _WIDTH.append((columns or 80) - 2)
    return _WIDTH[0]


class Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, width or _terminal_width())


class Parser(argparse.ArgumentParser):
    """argparse, except that a usage error under --json is one JSON object (exit 2), and help is
    formatted without the per-argument costs (see ``Formatter``)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs["formatter_class"] = Formatter
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        message = _with_did_you_mean(message)
        if _JSON_REQUESTED[0]:
            import json

            hint = f"`{self.prog} --help` lists the arguments"
            sys.stdout.write(json.dumps({"error": {"code": "USAGE", "message": message, "hint": hint}}) + "\n")
            sys.stdout.flush()
            raise SystemExit(2)
        super().error(message)


def _with_did_you_mean(message: str) -> str:
    """argparse's "invalid choice: 'delegat' (choose from ...)" with the choice meant: "did you mean
    'delegate'?" (a verb, a plan verb or any other choice)."""
    import re

    m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if m is None:
        return message
    import difflib

    choices = re.findall(r"'([^']*)'", m.group(2))
    close = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
    return message + (f"; did you mean {close[0]!r}?" if close else "")


def _common(p: argparse.ArgumentParser, repo: bool = False, quiet: bool = False) -> None:
    p.add_argument("--json", action="store_true", help="print exactly one JSON object (for agents and scripts)")
    if repo:
        p.add_argument("--repo", default=".", help="the git repository to work in (default: the current directory)")
    if quiet:
        p.add_argument("--quiet", action="store_true", help="no live progress or notes on stderr")


def _wait_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wait", action="store_true",
                   help="queue for a free slot instead of failing at the concurrency cap (max_concurrent_runs); "
                        "says on stderr which runs it waits for")
    p.add_argument("--wait-limit", metavar="DURATION",
                   help="with --wait (implied), give up after this long, exit 5 (WAIT_LIMIT): 90s, 10m, 2h")


def _run_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", metavar="RUN", help="a run id (see `bosun list`)")


class _Unbuilt:
    """Stands in for the parser of a verb this call does not run: its arguments are never added.

    Building every verb's arguments costs start-up time on each call; only the verb on the command
    line (or, for ``bosun --help``, none: the list of verbs needs their names and help only) is built.
    """

    def __getattr__(self, name: str) -> object:
        return lambda *args, **kwargs: self


PLAN_HELP = "run many tasks as a dependency graph in parallel waves"
# Every verb, in --help order (a test checks it against the parser): a known verb gets only its own
# parser built; anything else gets the whole list, so argparse can name the valid choices.
VERBS = (
    "delegate", "check", "prepare", "work", "verify", "approve", "integrate", "report", "cleanup", "recover",
    "cancel", "discard", "revert", "apply", "show", "diff", "list", "doctor", "workers", "models", "schema", "template", "demo",
    "plan", "mcp", "skill", "watch", "savings", "history", "dash", "gc", "pool", "agent", "agents", "warm",
    "replay",
)
PARENT_VERBS = ("mcp", "skill", "watch", "savings")  # built by cli/parents_cli.py
INSIGHT_VERBS = ("history", "dash")  # built by cli/insight_cli.py
WORKTREE_VERBS = ("gc", "pool")  # built by cli/pool_cli.py
REMOTE_VERBS = ("agent", "agents")  # built by cli/remote_cli.py


def build_parser(wanted: str | None = "*") -> argparse.ArgumentParser:
    """The parser; ``wanted`` = the verb whose arguments to build ("*": all, None: only the verb list)."""
    parser = Parser(
        prog="bosun", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        if wanted not in ("*", None, name):
            return _Unbuilt()  # type: ignore[return-value]  # another verb runs: not even listed
        p = sub.add_parser(name, help=help, description=description or help)
        return p if wanted in ("*", name) else _Unbuilt()  # type: ignore[return-value]

    p = add(
        "delegate",
        "prepare, work, verify and gate a task in one go",
        "Prepare a worktree, run the worker, verify independently and check every gate.\n"
        "Ends with one verdict: landable (exit 0), needs review (exit 7: verified, but a person must\n"
        "say yes; `bosun show` lists the reasons) or refused (exit 3). With --auto-approve a landable\n"
        "run is approved, integrated into your branch (re-verified, never pushed), reported and cleaned\n"
        "up; a run that needs review waits for `bosun approve`.",
    )
    p.add_argument("task", help="task contract file (YAML or JSON); `bosun template` prints one")
    p.add_argument("--profile", help="worker profile to use (overrides routing)")
    p.add_argument("--auto-approve", action="store_true",
                   help="approve and integrate when the verdict is landable (never a run that needs review)")
    _wait_flags(p)
    p.add_argument("--dry-run", action="store_true",
                   help="check everything and print the routing decision and the worker's argv; run nothing")
    p.add_argument("--remote", nargs="?", const="", metavar="URL",
                   help="run the worker step on a remote pool (default URL: `remote` in bosun.toml); docs/remote.md")
    _secret_flag(p)
    _common(p, repo=True, quiet=True)

    p = add(
        "check",
        "validate a task without running anything: the contract and every pre-flight check",
        "Validate a task contract and run the pre-flight checks (profile and its key, worker CLI and its\n"
        "version, verify programs, base ref, repository). Creates nothing. Exit 0 when the task can run,\n"
        "2 with every problem listed otherwise.",
    )
    p.add_argument("task", help="task contract file (YAML or JSON)")
    p.add_argument("--profile", help="worker profile to check (overrides routing)")
    p.add_argument("--probe", action="store_true",
                   help="also try the profile's endpoint (base_url), waiting at most a second")
    _common(p, repo=True)

    p = add("prepare", "create the run and its isolated worktree (no worker yet)")
    p.add_argument("task", help="task contract file (YAML or JSON)")
    p.add_argument("--profile", help="worker profile to use")
    _wait_flags(p)
    _secret_flag(p)
    _common(p, repo=True, quiet=True)

    p = add("work", "run the worker on a prepared run (or revise one with --resume)")
    _run_id(p)
    p.add_argument("--resume", metavar="TEXT", help="continue the worker's session with this follow-up")
    p.add_argument("--profile", help="use this profile instead of the run's")
    _common(p, quiet=True)

    p = add("verify", "run the verify commands and every gate again")
    _run_id(p)
    _common(p)

    p = add(
        "approve",
        "approve a green, unchanged diff",
        "Approve a verified run. Refuses unless verification passed, every gate is green (or waived\n"
        "by name), no P0..P2 finding in the review is open, and a fresh rescan gives the same diff hash.\n"
        "A run that needs review (exit 7 from delegate) prints its reasons and, on a terminal, asks\n"
        "[y/N]: only y approves it. A script must pass --yes, recorded as the script's acknowledgment.\n"
        "Approving lands nothing: `bosun integrate RUN` lands an approved run on your branch.",
    )
    _run_id(p)
    p.add_argument("--yes", action="store_true",
                   help="acknowledge every review reason without a terminal (scripts; recorded on the run)")
    p.add_argument("--review", metavar="FILE", help='review JSON: {"verdict": ..., "findings": [{"severity": "P0".."P3", ...}]}')
    p.add_argument("--waive", metavar="CODE", action="append", default=[], help="waive a red gate by its code")
    p.add_argument("--reason", metavar="TEXT", help="why the waived gates are acceptable (required with --waive)")
    _common(p)

    p = add("integrate", "merge an approved run into its source branch (re-verified, never pushed), write its "
                        "report, then remove its worktree and bosun/<id> branch (cleanup_after_integrate)")
    _run_id(p)
    p.add_argument("--no-reverify", action="store_true", help="skip re-running verification on the merged result")
    _common(p)

    p = add("report", "write metrics.json and report.md for a run")
    _run_id(p)
    _common(p)

    p = add("cleanup", "remove the worktree and branch of an integrated or discarded run")
    _run_id(p)
    p.add_argument("--force", action="store_true", help="also remove unmerged work (the diff is kept in the run dir)")
    _common(p)

    p = add("recover", "finish a run left behind by a crash (verify its diff, or reset it to prepared)")
    _run_id(p)
    _common(p)

    p = add("cancel", "stop a run's worker and mark it cancelled")
    _run_id(p)
    _common(p)

    p = add("discard", "cancel runs and remove their worktrees and branches (each run's diff is kept)")
    p.add_argument("run_ids", metavar="RUN", nargs="+", help="one run id or more (see `bosun list`)")
    _common(p)

    if wanted in ("*", None, "revert", "apply"):
        from bosun.cli.undo_cli import add_undo_parsers

        add_undo_parsers(sub, wanted)

    p = add("show", "what happened in a run, gate by gate")
    _run_id(p)
    p.add_argument("--events", action="store_true", help="also print the worker's normalized events")
    _common(p)

    p = add("diff", "print a run's diff (as verified)")
    _run_id(p)
    p.add_argument("--stat", action="store_true", help="only the files and line counts")
    _common(p)

    p = add("list", "list runs, newest first")
    if wanted in ("*", "list"):
        from bosun.core.states import STATES

        p.add_argument("--state", choices=STATES, metavar="STATE", help="only runs in this state: " + ", ".join(STATES))
    p.add_argument("--search", metavar="TEXT", help="full-text search in titles and prompts")
    p.add_argument("--limit", type=int, default=50)
    _common(p)

    p = add("doctor", "check worker CLIs, profiles and config, and what the sandbox holds here; say what is missing")
    p.add_argument("--profile", help="check only this profile")
    p.add_argument("--probe", action="store_true", help="also check that each endpoint answers")
    _common(p, repo=True)

    p = add("workers", "list profiles with tier, strengths, cooldown, recent success rate and track record",
            "The track record of each profile is derived from the newest 500 judged runs in the store:\n"
            "runs landable / needing review / refused (cheat attempts: refusals about honesty), repairs\n"
            "used, changes landed, cost per landed change (every run's cost over the changes that\n"
            "landed), median working time; --json: `record`. A ladder's lower rungs count as refused.")
    _common(p, repo=True)

    p = add(
        "models",
        "the models each profile's CLI or provider offers, with the prices the profile sets",
        "List the models a profile can use: from the CLI's own listing where it has one (opencode models,\n"
        "kilo models) or the provider's /v1/models. Cached for 30 minutes; offline means 'no catalog'.\n"
        "Each profile's track record follows (as in `bosun workers`; --json: `record`).",
    )
    p.add_argument("profile", nargs="?", metavar="PROFILE", help="only this profile (default: every profile)")
    p.add_argument("--refresh", action="store_true", help="ignore the 30-minute cache")
    _common(p, repo=True)

    p = add("schema", "print the task contract's JSON schema")
    _common(p)
    p = add("template", "print a commented example task contract")
    _common(p)

    p = add("demo", "run the whole loop on a sample repo with a scripted model (no network, no key)")
    p.add_argument("--keep", action="store_true", help="keep the sample repo and bosun home afterwards")
    p.add_argument("--remote", action="store_true",
                   help="a local nats-server and two agents run a small plan across the pool (needs bosun[remote])")
    _common(p)

    if wanted in ("*", "plan"):
        from bosun.cli.plan_cli import add_plan_parser

        add_plan_parser(sub, PLAN_HELP)
    elif wanted is None:
        sub.add_parser("plan", help=PLAN_HELP)

    if wanted in ("*", None, *PARENT_VERBS):
        from bosun.cli.parents_cli import add_parent_parsers

        add_parent_parsers(sub)
    if wanted in ("*", None, *INSIGHT_VERBS):
        from bosun.cli.insight_cli import add_insight_parsers

        add_insight_parsers(sub)
    if wanted in ("*", None, *WORKTREE_VERBS):
        from bosun.cli.pool_cli import add_worktree_parsers

        add_worktree_parsers(sub, wanted)
    if wanted in ("*", None, *REMOTE_VERBS):
        from bosun.cli.remote_cli import add_remote_parsers

        add_remote_parsers(sub, wanted)
    if wanted in ("*", None, "warm"):
        from bosun.cli.warm_cli import add_warm_parser

        add_warm_parser(sub, wanted)

    p = add("replay", "the scripted model server (for testing pipelines offline)")
    rsub = p.add_subparsers(dest="replay_command", metavar="SUBCOMMAND")
    rp = rsub.add_parser("serve", help="serve a script on 127.0.0.1 (OpenAI, Responses, Anthropic, Gemini APIs)")
    rp.add_argument("--script", required=True, help="YAML/JSON script of turns (see docs/replay.md)")
    rp.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    rp.add_argument("--root", help="directory that script paths are relative to (default: cwd)")
    rp.add_argument("--log", help="append every request as a JSON line to this file")
    _common(rp)
    return parser


def _secret_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-secret-in-task", action="store_true",
                   help="dispatch even when the task's prompt or acceptance looks like it holds a credential")


# Verbs that only read and print. Nothing of theirs needs the interpreter's final garbage collections
# (stdout is flushed at exit regardless), which cost a fresh process 3-5 ms of a 30 ms budget. What
# `models` and a settings-cache miss write is written and closed before the verb returns.
READ_ONLY_VERBS = ("show", "diff", "list", "schema", "template", "history", "workers", "models", "savings")


def main(argv: Sequence[str] | None = None) -> int:
    """The one CLI boundary: parse, dispatch, and end quietly when the reader of stdout went away.

    ``argv`` None: the process's command line, which bosun.launch has already offered to the warm
    process."""
    from_command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if from_command_line and not reads_only(argv):
        from bosun.core.warm_client import validating

        if validating(argv):  # the verbs that run workers and verification (servers keep their own)
            from bosun.core.errors import raise_on_termination

            raise_on_termination()
    _JSON_REQUESTED[0] = "--json" in argv
    if reads_only(argv):
        from bosun.core.quick_exit import skip_final_collection

        skip_final_collection()
    try:
        return _main(argv)
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_BROKEN_PIPE


def reads_only(argv: list[str]) -> bool:
    """Whether this command line only reads and prints: a read-only verb, help, or no verb at all."""
    words = [a for a in argv if not a.startswith("-")]
    first = words[0] if words else None
    if first == "pool":
        return words[1:2] == ["status"] or "--help" in argv or "-h" in argv
    return first in READ_ONLY_VERBS or first is None or "--help" in argv or "-h" in argv


# The verbs that show settings or totals, with --json and at most --repo R, as argparse parses them:
# their namespace but for --repo.
_PLAIN_SHOWS: dict[tuple[str, ...], dict[str, object]] = {
    ("workers",): {"command": "workers"},
    ("models",): {"command": "models", "profile": None, "refresh": False},
    ("savings",): {"command": "savings", "all_repos": False, "since": None, "card": None},
    ("pool", "status"): {"command": "pool", "action": "status"},
}


def plain_read(argv: list[str]) -> argparse.Namespace | None:
    """``list --json`` and ``show RUN --json``, the reads a parent agent polls with, and ``workers``,
    ``models``, ``savings`` and ``pool status`` with ``--json`` (and ``--repo R``), as argparse parses
    them, without building a parser (~2 ms of the 30 ms a read-only verb may take over a bare
    interpreter). Every other form goes through argparse; a test keeps the two equal."""
    if argv == ["list", "--json"]:
        return argparse.Namespace(version=False, command="list", state=None, search=None, limit=50, json=True)
    if len(argv) == 3 and argv[0] == "show" and "--json" in argv[1:]:
        run_id = argv[2] if argv[1] == "--json" else argv[1]
        if not run_id.startswith("-"):
            return argparse.Namespace(version=False, command="show", run_id=run_id, events=False, json=True)
    if argv.count("--json") != 1 or argv[0] == "--json":  # before the verb it is no option of bosun's
        return None
    words = [a for a in argv if a != "--json"]
    repo = "."
    if len(words) > 2 and words[-2] == "--repo" and not words[-1].startswith("-"):
        repo, words = words[-1], words[:-2]
    shown = _PLAIN_SHOWS.get(tuple(words))
    if shown is None:
        return None
    return argparse.Namespace(version=False, **shown, repo=repo, json=True)


def _main(argv: list[str]) -> int:
    plain = plain_read(argv)
    if plain is not None:
        from bosun.cli.dispatch import dispatch

        return dispatch(plain)
    first = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(first if first in VERBS else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2): a return code, for in-process callers too
        return exc.code if isinstance(exc.code, int) else 2
    if args.version:
        from bosun import __version__

        if _JSON_REQUESTED[0]:
            print(f'{{"version": "{__version__}"}}')
        else:
            print(f"bosun {__version__}")
        return 0
    if not args.command:
        if _JSON_REQUESTED[0]:
            try:
                parser.error("a command is required")
            except SystemExit:
                return 2
        parser.print_help()
        return 2
    from bosun.cli.dispatch import dispatch

    return dispatch(args)


def _drop_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not raise again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (tests capture stdout): nothing will flush to a closed pipe


if __name__ == "__main__":
    sys.exit(main())

