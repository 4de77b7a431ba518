"""`bosun history` and `bosun dash`: looking back at runs, and the dashboard.

The parser is argparse only (``bosun --help`` must stay fast); handlers import what they need, and
the web server (starlette, uvicorn) is imported only by ``bosun dash``.
"""

from __future__ import annotations

import argparse
import sys

EXIT_OK = 0  # bosun.core.errors.EXIT_OK, without importing it on the parser's path

HISTORY_EPILOG = """\
every word must occur (in the title, prompt, final message, changed paths, gate details, cross-review
findings or errors); quote nothing: `calc.py` and `VERIFY_FAILED` work as they are; end a word with *
for a prefix.

examples:
  bosun history calc.py                       runs that touched or mentioned calc.py
  bosun history timeout --state failed --since 7d
  bosun history "" --profile cheap --json     every run of a profile, as JSON
"""

DASH_DESCRIPTION = """\
A local web dashboard: runs (live), a run's contract, events, diff, verification, gates and receipt,
plans drawn as a graph, workers, and savings. It binds 127.0.0.1 only, refuses foreign Host headers
and cross-origin requests, and its two actions (approve a verified run, discard) need the per-launch
token carried by the URL it prints. docs/dashboard.md describes it.
"""


def add_insight_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    def add(name: str, help: str, description: str | None = None, epilog: str | None = None) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=description or help, epilog=epilog,
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    p = add("history", "search every run: title, prompt, final message, changed paths, gates, findings, errors",
            epilog=HISTORY_EPILOG)
    p.add_argument("query", metavar="QUERY", nargs="?", default="", help="words to find (empty: every run)")
    p.add_argument("--state", help="only runs in this state")
    p.add_argument("--profile", help="only runs of this profile")
    p.add_argument("--repo", help="only runs of this repository (a path)")
    p.add_argument("--since", metavar="DATE", help="runs started on or after: YYYY-MM-DD, today, 7d, 12h, 2w")
    p.add_argument("--until", metavar="DATE", help="runs started before this date")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")

    p = add("dash", "a local web dashboard of runs, plans, workers and savings (live)", DASH_DESCRIPTION)
    p.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0: any free port)")
    p.add_argument("--no-open", action="store_true", help="do not open a browser")
    p.add_argument("--detach", action="store_true", help="run in the background; print the URL and the pid")
    p.add_argument("--repo", default=".", help="repository whose bosun.toml lists the workers (default: cwd)")


def _repo_arg(value: str | None) -> str:
    if not value:
        return ""
    from pathlib import Path

    from bosun.isolation.git import repo_root

    return str(repo_root(Path(value)))


def cmd_history(args: argparse.Namespace) -> int:
    from bosun.cli.render import emit_json
    from bosun.engine.history import parse_date, search
    from bosun.engine.results import list_item
    from bosun.store.db import open_store
    from bosun.store.history import RunFilter
    from bosun.store.run import Run

    flt = RunFilter(
        text=args.query, state=args.state or "", profile=args.profile or "", repo=_repo_arg(args.repo),
        since=parse_date(args.since) if args.since else None, until=parse_date(args.until) if args.until else None,
    )
    runs = search(open_store(), flt, limit=max(1, args.limit))
    if args.json:
        items = []
        for r in runs:
            item = list_item(Run.from_row(r))  # a search hit: the row, its snippet and facts
            item["snippet"] = r.get("snippet")
            item["facts"] = r.get("facts")
            items.append(item)
        emit_json({"query": args.query, "runs": items, "count": len(items)})
        return EXIT_OK
    if not runs:
        sys.stdout.write("no runs match\n")
        return EXIT_OK
    import time

    from bosun.core.states import shown_label

    for r in runs:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(r["created_at"]))
        shown = shown_label(r["state"], r.get("merged_commit"), r.get("data"))
        sys.stdout.write(f"{r['id']}  {when}  {shown:<17} {str(r['profile'] or '-'):<12} {r['title'][:60]}\n")
        if r.get("snippet"):
            sys.stdout.write(f"    {r['snippet'][:160]}\n")
    return EXIT_OK


def cmd_dash(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bosun.web.server import serve

    return serve(port=args.port, open_browser=not args.no_open, detach=args.detach, repo=Path(args.repo))
