"""`bosun gc` and `bosun pool`: housekeeping of worktrees and run records, and the warm pool.

The parsers are argparse only (``bosun --help`` must stay fast); handlers import what they need.
"""

from __future__ import annotations

import argparse
import sys

EXIT_OK = 0  # bosun.core.errors.EXIT_OK, without importing it on the parser's path

GC_DESCRIPTION = """\
Remove what finished runs left behind: worktrees and bosun/<id> branches of integrated, reported and
cancelled runs, and of refused or failed runs nobody touched for --stale (default a day: they are
discarded; younger ones are listed as kept), their leftover diff saved to final.patch first; run
directories of cleaned runs
older than --older-than and not among the --keep newest, worktrees and run directories whose run is
gone, old cached baselines, and idle pool worktrees beyond [pool] size. Never anything of a live run
(a state that can still move, a lock held by a live process, a running plan) and never anything
outside bosun's home but its own bosun/<id> branches. Safe to run from cron.
"""

POOL_DESCRIPTION = """\
The warm pool: checkouts bosun owns, kept idle and moved to a run's start with an incremental
checkout, so a run starts without a full `git worktree add`. [pool] size in bosun.toml sets how many.
"""


def add_worktree_parsers(sub: argparse._SubParsersAction, wanted: str | None = "*") -> None:  # type: ignore[type-arg]
    """The ``gc`` and ``pool`` parsers (``wanted``: one of them, "*" both, None both names only)."""

    def add(name: str, help: str, description: str) -> argparse.ArgumentParser:
        if wanted not in ("*", None, name):
            # Another verb runs: these arguments are thrown away. A fixed width spares argparse's
            # default formatter its shutil import, which every add_argument would otherwise pay for.
            return argparse.ArgumentParser(formatter_class=lambda prog: argparse.HelpFormatter(prog, width=80))
        return sub.add_parser(name, help=help, description=description,
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    p = add("gc", "remove finished runs' worktrees, branches, old records and orphans", GC_DESCRIPTION)
    p.add_argument("--older-than", metavar="AGE", default="30d",
                   help="records of cleaned runs older than this go (30d, 12h, 2w; default 30d)")
    p.add_argument("--keep", metavar="N", type=int, default=20,
                   help="always keep the records of the N newest runs (default 20)")
    p.add_argument("--stale", metavar="AGE", default="1d",
                   help="discard refused and failed runs nobody touched for this long (default 1d)")
    p.add_argument("--dry-run", action="store_true", help="say what would go; remove nothing")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")

    p = add("pool", "the warm pool of ready worktrees: warm, status, drain", POOL_DESCRIPTION)
    p.add_argument("action", choices=("warm", "status", "drain"),
                   help="warm: fill the pool to [pool] size; status: list its worktrees; drain: remove idle ones")
    p.add_argument("--repo", default=".", help="the repository (default: the current directory)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def cmd_gc(args: argparse.Namespace) -> int:
    from bosun.cli.dispatch import emit_json
    from bosun.engine.gc import collect, parse_age
    from bosun.store.db import open_store

    result = collect(open_store(), older_than_s=parse_age(args.older_than), keep=args.keep, dry_run=args.dry_run,
                     stale_s=parse_age(args.stale))
    if args.json:
        emit_json(result.to_dict())
        return EXIT_OK
    verb = "would remove" if args.dry_run else "removed"
    for r in result.removed:
        sys.stdout.write(f"{verb} {r.kind:<15} {r.path}  ({_mib(r.bytes)})\n")
    for s in result.skipped:
        sys.stdout.write(f"kept {s['run_id']}: {s['reason']}\n")
    freed = "would free" if args.dry_run else "freed"
    sys.stdout.write(f"{len(result.removed)} item(s); {freed} {_mib(result.bytes_freed)}\n")
    return EXIT_OK


def cmd_pool(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bosun.cli.dispatch import emit_json
    from bosun.isolation import pool
    from bosun.isolation.git import repo_root
    from bosun.store.db import open_store

    repo = repo_root(Path(args.repo))
    store = open_store()
    if args.action == "status":  # only shows: the settings as validated before, when still current
        from bosun.cli.handlers import shown_settings

        doc = pool.status(store, repo, shown_settings(repo))
    else:
        from bosun.core.config import load_settings

        settings = load_settings(repo)
        if args.action == "warm":
            def said(path: str, held: int, size: int) -> None:
                # Each is a full checkout of the repository: seconds each on a big one.
                sys.stderr.write(f"bosun: pool: worktree {held} of {size} ready: {path}\n")
                sys.stderr.flush()

            made = pool.warm(store, repo, settings, on_made=None if args.json else said)
            if settings.pool.size == 0:
                sys.stderr.write("bosun: the pool size is 0, so there is nothing to warm; set `[pool] size = 2` "
                                 "(or more) in bosun.toml to keep ready worktrees\n")
            elif not made:
                sys.stderr.write(f"bosun: the pool already holds {settings.pool.size} worktree(s) ([pool] size)\n")
        else:
            pool.drain(store, repo)
        doc = pool.status(store, repo, settings)
    if args.json:
        emit_json(doc)
        return EXIT_OK
    sys.stdout.write(f"pool of {doc['repo']}: size {doc['size']}, {doc['idle']} idle, {doc['leased']} leased\n")
    for w in doc["worktrees"]:
        held = f" by {w['run_id']}" if w["run_id"] else ""
        sys.stdout.write(f"  {w['state']:<10} {w['path']}{held}  at {str(w['head'] or '-')[:12]}\n")
    return EXIT_OK
