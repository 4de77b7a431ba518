"""Parsers and handlers of the remote verbs: ``agent serve``, ``agents`` and ``delegate --remote``."""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which `bosun --help` avoids
if TYPE_CHECKING:
    from typing import Any


def add_remote_parsers(sub: argparse._SubParsersAction, wanted: str | None) -> None:  # type: ignore[type-arg]
    """The parsers of ``agent`` and ``agents``: only the wanted one with its arguments ("*": both, None:
    names and help only)."""
    if wanted in ("*", None, "agent"):
        p = sub.add_parser("agent", help="serve tasks from a remote pool on this machine (NATS JetStream)",
                           description="Run worker steps for coordinators on other machines. See docs/remote.md.")
    if wanted in ("*", "agent"):
        asub = p.add_subparsers(dest="agent_command", metavar="SUBCOMMAND")
        sp = asub.add_parser("serve", help="pull tasks from a pool and run the profile's worker on them")
        sp.add_argument("--nats", metavar="URL", help="the hub, nats://host:4222 (default: $BOSUN_NATS_URL)")
        sp.add_argument("--profile", required=True, help="the local worker profile that runs every task")
        sp.add_argument("--name", help="this agent's name in the pool (default: host name and pid)")
        sp.add_argument("--pool", default="default", help="the pool to serve (default: default)")
        sp.add_argument("--concurrency", type=int, default=1, metavar="K", help="tasks at once (default 1)")
        sp.add_argument("--supervise", action="store_true",
                        help="restart the agent when it dies, with exponential backoff (capped at 60 s)")
        sp.add_argument("--drain-timeout", type=float, default=300.0, metavar="S",
                        help="on SIGTERM, finish running tasks for this long, then hand them back (default 300)")
        _auth(sp)
    if wanted in ("*", None, "agents"):
        p = sub.add_parser("agents", help="list the live agents of a remote pool: profile, load, version")
    if wanted in ("*", "agents"):
        p.add_argument("--nats", metavar="URL", help="the hub (default: `remote` in bosun.toml, $BOSUN_NATS_URL)")
        p.add_argument("--repo", default=".", help="repository whose bosun.toml names the hub (default: cwd)")
        p.add_argument("--json", action="store_true", help="print exactly one JSON object")
        _auth(p)


def _auth(p: argparse.ArgumentParser) -> None:
    p.add_argument("--creds", metavar="FILE", help="NATS credentials file (or $BOSUN_NATS_CREDS)")
    p.add_argument("--nkey", metavar="FILE", help="file holding an nkey seed (or $BOSUN_NATS_NKEY_SEED)")
    p.add_argument("--user", help="NATS user; the password comes from $BOSUN_NATS_PASSWORD")
    p.add_argument("--tls-ca", metavar="FILE", help="CA bundle to verify the hub's TLS certificate")
    p.add_argument("--tls-cert", metavar="FILE", help="client certificate for TLS")
    p.add_argument("--tls-key", metavar="FILE", help="client key for TLS")


def _options(args: argparse.Namespace, url: str | None, name: str) -> Any:
    from bosun.remote.connect import ConnectOptions

    return ConnectOptions.from_env(url, name=name, creds=args.creds, nkey_seed=args.nkey, user=args.user,
                                   tls_ca=args.tls_ca, tls_cert=args.tls_cert, tls_key=args.tls_key)


def cmd_agent(args: argparse.Namespace) -> int:
    import os
    import socket

    from bosun.core.errors import BadInput
    from bosun.remote.protocol import check_token

    if args.agent_command != "serve":
        raise BadInput("`bosun agent` needs a subcommand", "run `bosun agent serve --nats URL --profile P`")
    if args.concurrency < 1:
        raise BadInput("--concurrency must be at least 1", "pass --concurrency 1 or more")
    if args.supervise:
        from bosun.cli.agent_serve import supervise

        argv = [sys.executable, "-m", "bosun"] + [a for a in sys.argv[1:] if a != "--supervise"]
        return supervise(argv)
    from bosun.cli.agent_serve import AgentConfig, serve
    from bosun.core.config import load_settings

    load_settings(None).profile(args.profile)  # an unknown profile fails now, not at the first task
    name = check_token(args.name or f"{socket.gethostname().split('.')[0]}-{os.getpid()}", "agent name")
    cfg = AgentConfig(opts=_options(args, args.nats, f"bosun agent {name}"), profile=args.profile, name=name,
                      pool=check_token(args.pool, "pool"), concurrency=args.concurrency,
                      drain_timeout=args.drain_timeout)
    return serve(cfg)


def cmd_agents(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    url = args.nats
    if not url:
        from bosun.core.config import load_settings
        from bosun.core.errors import BosunError
        from bosun.isolation.git import repo_root

        try:
            url = load_settings(repo_root(Path(args.repo))).remote
        except BosunError:
            url = load_settings(None).remote
    agents = asyncio.run(_list_agents(_options(args, url, "bosun agents")))
    if args.json:
        from bosun.cli.dispatch import emit_json

        emit_json({"agents": agents})
        return 0
    if not agents:
        print("no live agents")
        return 0
    import time

    for a in agents:
        age = time.time() - float(a.get("seen") or 0)
        print(f"{a['name']:<24} pool {a.get('pool')!s:<10} profile {a.get('profile')!s:<12} "
              f"load {a.get('load')}/{a.get('capacity')}  v{a.get('version')}  {a.get('host')}  "
              f"seen {age:.0f}s ago{'  draining' if a.get('draining') else ''}")
    return 0


async def _list_agents(opts: Any) -> list[dict[str, Any]]:
    from bosun.remote.connect import connect, ensure_infra
    from bosun.remote.presence import live_agents
    from bosun.remote.protocol import Timing

    nc = await connect(opts)
    try:
        infra = await ensure_infra(nc.jetstream(), Timing.from_env())
        return await live_agents(infra["agents"])
    finally:
        await nc.close()


def remote_overrides(url: str) -> dict[str, Any]:
    """Settings overrides that send this delegation to the remote pool (``delegate --remote [URL]``)."""
    if not url:
        return {}
    return {"remote": url, "profiles": {"remote": {"adapter": "remote", "base_url": url}}}
