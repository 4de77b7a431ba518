"""The verbs for parent agents: ``mcp`` (serve, install), ``skill install``, ``watch``, ``savings``.

Kept out of main.py so the parser stays small; every import of substance is lazy (the MCP SDK is
imported only when the server starts).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which `bosun --help` avoids
if TYPE_CHECKING:
    from typing import Any

    from bosun.store.db import Store

HOSTS = ("claude", "codex", "agents", "opencode")


def add_parent_parsers(sub: Any) -> None:
    def add(name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(
            name, help=help, description=description or help, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        return p

    p = add(
        "mcp",
        "serve bosun's tools to a parent agent over MCP (stdio), or register the server with a host",
        "bosun mcp                   serve the MCP tools on stdin/stdout (a host starts this)\n"
        "bosun mcp install claude    register it with Claude Code (`claude mcp add`)\n"
        "bosun mcp install codex     print the [mcp_servers.bosun] table for Codex's config.toml\n"
        "                            (`codex mcp add` cannot set its timeouts, required and approval mode)\n"
        "Prints the exact command instead when the host's CLI is not installed. See docs/parents.md.",
    )
    p.add_argument("action", nargs="?", choices=("serve", "install"), default="serve", help="serve (default) or install")
    p.add_argument("host", nargs="?", choices=("claude", "codex"), help="for install: the host")
    p.add_argument("--project", action="store_true", help="install: register for this project only (Claude Code)")
    p.add_argument("--print", dest="print_only", action="store_true", help="install: only print the command")
    p.add_argument("--repo", default=".", help="serve: the default repository (default: the current directory)")
    p.add_argument("--json", action="store_true", help="install: print one JSON object")

    p = add(
        "skill",
        "install bosun's playbook skill for a parent agent (Claude Code, Codex, OpenCode, ...)",
        "bosun skill install claude|codex|agents|opencode [--project] [--uninstall] [--plugin DIR]\n"
        "Writes SKILL.md (when to delegate, how to write a contract, how to read a result) with a\n"
        "worker table of your configured profiles. Re-running updates it; --uninstall removes exactly\n"
        "what was written. --plugin DIR (claude) writes a Claude Code plugin directory instead.",
    )
    p.add_argument("action", choices=("install", "show"), help="install, or show (print the SKILL.md)")
    p.add_argument("host", choices=HOSTS)
    p.add_argument("--project", action="store_true", help="into this repository (.claude/skills or .agents/skills)")
    p.add_argument("--uninstall", action="store_true", help="remove what an install wrote")
    p.add_argument("--plugin", metavar="DIR", help="claude: write a plugin directory (skill, MCP server, hook)")
    p.add_argument("--repo", default=".", help="the repository (for --project and its profiles)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")

    p = add("watch", "one line per state change of runs and plans (NDJSON with --json)",
            "One line per state change bosun recorded, each once, a run's in order (`seq` numbers them).\n"
            "`done` is true when the run rests there: no bosun process holds it, so it stays until a\n"
            "person or a verb moves it. A state a run can rest in is printed once that is known.")
    p.add_argument("run_ids", nargs="*", metavar="RUN",
                   help="watch only these runs: their whole history, then exit once each is done")
    p.add_argument("--all", dest="all_repos", action="store_true", help="runs of every repository, not just --repo")
    p.add_argument("--until-idle", action="store_true", help="exit once no run or plan is in flight")
    p.add_argument("--repo", default=".", help="the repository whose runs to watch (default: the current directory)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")

    p = add("savings", "totals of the receipts: worker cost, parent tokens estimated and measured")
    p.add_argument("--all", dest="all_repos", action="store_true", help="every repository, not just --repo")
    p.add_argument("--repo", default=".", help="the repository (default: the current directory)")
    p.add_argument("--since", metavar="DATE", help="only runs started on or after DATE (YYYY-MM-DD) for --card "
                   "and the per-day figures")
    p.add_argument("--card", metavar="FILE.svg", help="also write a shareable SVG card of the totals to FILE.svg")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")


def _emit(obj: Any) -> None:
    from bosun.cli.render import emit_json

    emit_json(obj)


def cmd_mcp(args: argparse.Namespace) -> int:
    from bosun.core.errors import BadInput

    if args.action == "serve":
        from bosun.mcp.server import serve

        return serve(Path(args.repo))
    if not args.host:
        raise BadInput("usage: bosun mcp install claude|codex", "name the host")
    from bosun.skills.install import mcp_install

    out = mcp_install(args.host, args.project, args.print_only)
    if args.json:
        _emit(out)
    elif out["ran"]:
        sys.stdout.write(f"registered: {' '.join(out['command'])}\n")
    elif out.get("config_toml"):
        sys.stdout.write(f"{out['reason']}:\n{out['config_toml']}")
    else:
        sys.stdout.write(f"{out['reason']}:\n  {' '.join(out['command'])}\n")
    return 0


def cmd_skill(args: argparse.Namespace) -> int:
    from bosun.core.errors import BadInput
    from bosun.skills import install as skill_install

    repo = Path(args.repo).resolve()
    if args.action == "show":
        sys.stdout.write(skill_install.playbook(args.project, repo))
        return 0
    if args.plugin:
        if args.host != "claude":
            raise BadInput("--plugin is for Claude Code", "use `bosun skill install claude --plugin DIR`")
        target = Path(args.plugin).resolve()
        out = skill_install.uninstall_plugin(target) if args.uninstall else skill_install.install_plugin(target, repo)
    elif args.uninstall:
        out = skill_install.uninstall_skill(args.host, args.project, repo)
    else:
        out = skill_install.install_skill(args.host, args.project, repo)
    if args.json:
        _emit(out)
        return 0
    if args.uninstall:
        sys.stdout.write(f"removed {len(out['removed'])} file(s) from {out['path']}\n")
        for kept in out["kept_changed_by_user"]:
            sys.stdout.write(f"  kept (changed since install): {kept}\n")
    else:
        sys.stdout.write(f"{'up to date' if out['unchanged'] else 'installed'}: {out['path']}\n")
        if out.get("next"):
            sys.stdout.write(f"then: {out['next']}\n")
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    import time

    from bosun.apps.watch import watch
    from bosun.core.paths import check_run_id
    from bosun.store.db import open_store

    store = open_store()
    for run_id in args.run_ids:
        store.require_run(check_run_id(run_id))
    repo = None if args.all_repos or args.run_ids else _repo_key(Path(args.repo))

    def emit(ev: dict[str, Any]) -> None:
        if args.json:
            _emit(ev)
            return
        when = time.strftime("%H:%M:%S", time.localtime(ev["at"]))
        sys.stdout.write(f"{when} {ev['kind']} {ev['id']} {ev['previous'] or '-'} -> {ev['state']}  {ev['title']}\n")
        sys.stdout.flush()

    try:
        watch(store, emit, repo, args.run_ids, args.until_idle)
    except KeyboardInterrupt:
        return 130
    return 0


def _repo_key(repo: Path) -> Path:
    from bosun.core.errors import BosunError
    from bosun.isolation.git import repo_root

    try:
        return repo_root(repo)
    except BosunError:
        return repo.resolve()


def cmd_savings(args: argparse.Namespace) -> int:
    from bosun.apps.savings import totals
    from bosun.store.db import open_store

    store = open_store()
    out = totals(store, None if args.all_repos else Path(args.repo))
    if args.since or args.card:
        out["report"] = _savings_report(store, args)
    if args.json:
        _emit(out)
        return 0
    e, m, w = out["parent_estimated"], out["parent_measured"], out["worker"]
    sys.stdout.write(f"runs: {out['runs']} ({out['repo'] or 'all repositories'})\n")
    sys.stdout.write(f"worker: {w['input_tokens']} tokens in, {w['output_tokens']} out, ${w['cost_usd']:.4f}\n")
    sys.stdout.write(f"parent, estimated over {e['runs']} runs: would have spent {e['parent_direct_tokens']} tokens, "
                     f"read {e['parent_actual_tokens']} from bosun; saving ${e['saving_usd']:.4f}\n")
    sys.stdout.write(f"parent, measured over {m['runs']} runs: {m['parent_tokens']} tokens (${m['parent_cost_usd']:.4f}); "
                     f"saving ${m['saving_usd']:.4f}\n")
    for reason, n in out["not_measured"].items():
        sys.stdout.write(f"  not measured ({n}): {reason}\n")
    if args.card:
        sys.stdout.write(f"card: {args.card}\n")
    return 0


def _savings_report(store: Store, args: argparse.Namespace) -> dict[str, Any]:
    """Per day, per week and per profile since ``--since``; writes the SVG card when asked."""
    import calendar
    import time

    from bosun.apps.savings_report import card_svg, report
    from bosun.core.errors import BadInput
    from bosun.core.fileio import write_bytes_atomic

    since = None
    if args.since:
        try:
            since = float(calendar.timegm(time.strptime(args.since, "%Y-%m-%d")))
        except ValueError:
            raise BadInput(f"--since {args.since!r} is not a date", "write it as YYYY-MM-DD") from None
    from bosun.isolation.git import repo_root

    repo = "" if args.all_repos else str(repo_root(Path(args.repo)))
    rep = report(store, since, repo=repo)
    if args.card:
        write_bytes_atomic(Path(args.card), card_svg(rep).encode())
    return rep
