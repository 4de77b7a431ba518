"""What a worker, and a verify command running its code, may reach: the ``Confinement`` of each.

Invariant: a confined process reads only what its task needs and writes only its own tree.

* **Hidden** (``sandbox_reads = "worktree"``, the default; always for a task with holdout files):
  bosun's state directory (database, dashboard token, other runs and worktrees), the user's
  repository outside the worktree, and the user's credential stores (``sandbox/credentials.py``,
  plus ``sandbox_hide``). Re-opened inside them: the worktree, the worker's own HOME, TMPDIR, git
  guard and task file, what set-up linked into the worktree, and the repository's ``.git`` (where the
  worktree's git data lives) unless the task has holdout files: then the worker's git is a
  repository of the start tree alone (``isolation/worker_git.py``), shown in place of the worktree's
  ``.git`` pointer, and the user's ``.git`` stays hidden.
* **Written**: the worktree (not in read-only modes), HOME, TMPDIR and the CLI's caches for a
  worker; the tree being verified and its HOME for a verify command.
* **Reached**: under ``network = "provider-only"`` (the default) a worker connects over TCP only to
  its provider's port(s), the user's proxy and ``network_ports``; a verify command, which has no
  provider, gets a loopback of its own (namespaces) and nothing else.

Which of these the machine enforces is ``sandbox.held``'s to say; ``plan`` refuses a ``required``
sandbox that cannot hold before any worker starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.sandbox import Confinement, SandboxFailed, Support, probe
from bosun.sandbox.credentials import credential_stores
from bosun.sandbox.held import held, missing

if TYPE_CHECKING:
    from bosun.core.config import Profile, Settings
    from bosun.store.run import Run

PROXY_VARS = ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")


@dataclass(frozen=True)
class Plan:
    """Whether this run's workers are confined, on what this machine supports, and what holds."""

    confined: bool
    support: Support
    report: dict[str, Any]


def plan(settings: Settings, *, private_reads: bool) -> Plan:
    """What confines the run's workers. Raises ``SandboxFailed`` when ``sandbox = "required"`` and a
    property it promises cannot hold here (nothing has started yet)."""
    support = probe()
    reads = "worktree" if private_reads else settings.sandbox_reads
    if settings.sandbox == "off":
        return Plan(False, support, {**support.to_dict(), "mechanism": "none", "network": "not enforced",
                                     "reads": "all", "reason": "sandbox = \"off\""})
    found = held(support, reads=reads, network=settings.network)
    lacking = missing(found)
    if settings.sandbox == "required" and lacking:
        raise SandboxFailed(
            "sandbox = \"required\" but this machine cannot enforce " + "; ".join(lacking)
            + "; the worker was not started",
            "install bubblewrap (`apt-get install bubblewrap`) on Linux 5.13+ with Landlock and user "
            "namespaces, or set sandbox = \"auto\" to run with what this machine enforces (`bosun doctor` lists it)")
    report: dict[str, Any] = {**support.to_dict(), "reads": reads, "held": found}
    if support.mechanism == "none":
        return Plan(False, support, {**report, "reason": "the kernel has no Landlock and bwrap cannot run here: "
                                     "writes are not confined"})
    return Plan(True, support, report)


def attempt_report(base: Plan, settings: Settings, profile: Profile, holdout: bool,
                   ports: tuple[int, ...] | None) -> dict[str, Any]:
    """The run's ``sandbox`` record for one attempt's worker (``ports``: what it may connect to)."""
    report = dict(base.report)
    if not base.confined:
        return report
    if profile.adapter == "native":
        return {**report, "mechanism": "in-process",
                "reason": "the native worker starts no processes; its file tools confine every path to the worktree"}
    found = held(base.support, reads=report["reads"], network=settings.network, ports=ports)
    if holdout:
        found["reads"] += ("; its git holds the start tree alone (no history)" if base.support.namespaces
                           else "; its git cannot read the repository (no history)")
    return {**report, "network": found["network"], "held": found}


def provider_ports(profile: Profile, settings: Settings, own: tuple[int, ...] = ()) -> tuple[int, ...]:
    """The TCP ports a worker of ``profile`` may connect to under ``network = "provider-only"``: its
    provider's (``base_url``'s, or 443 for a CLI's default hosted provider), the user's proxy's (a
    CLI behind a proxy connects only to it), ``network_ports``, and ``own``: the run's port block and
    the port its CLI may serve itself on (``free_port``)."""
    ports = [_port(profile.base_url) if profile.base_url else 443]
    ports += [_port(os.environ.get(var, "")) for var in PROXY_VARS]
    ports += [*settings.network_ports, *own]
    return tuple(dict.fromkeys(p for p in ports if p))


def free_port() -> int:
    """A TCP port nothing on this machine listens on right now: one a CLI may serve itself on and
    connect to (OpenCode's and Kilo's loopback server), where a random one would be refused."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_ports(run: Run) -> tuple[int, ...]:
    """The run's own port block (``[worktree] ports``): its dev servers and tests listen there."""
    from bosun.isolation.ports import block_of

    block = block_of(run.data.ports)
    return tuple(range(block.first, block.last + 1)) if block else ()


def _port(url: str) -> int | None:
    from urllib.parse import urlsplit

    if not url:
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    try:
        port = parts.port
    except ValueError:
        return None
    return port or (80 if parts.scheme == "http" else 443)


def hidden(settings: Settings, repo: Path) -> tuple[Path, ...]:
    """What no confined process of this repository's runs may read: its credential stores always;
    bosun's state and the repository itself unless ``sandbox_reads = "all"``."""
    stores = credential_stores(settings.sandbox_hide)
    if settings.sandbox_reads == "all":
        return stores
    return (repo, paths.bosun_home(), *stores)


def worker_confinement(
    run: Run, settings: Settings, home: Path, tmp: Path, *, read_only: bool, private_reads: bool,
    connect_ports: tuple[int, ...] | None, own_reads: tuple[Path, ...] = (), caches: tuple[Path, ...] = (),
    worker_git: tuple[Path, Path] | None = None, holdout: bool = False,
) -> Confinement:
    """A worker's confinement (module docstring). ``own_reads``: the run's files the worker reads
    (its git guard, its task file). ``worker_git``: a holdout run's own repository and its pointer
    (namespaces only); a holdout run without one gets no ``.git`` at all."""
    from bosun.isolation.setup import linked_reads

    worktree = Path(run.worktree)
    own = (home, tmp, *caches)
    writable = own if read_only else (worktree, *own)
    repo = Path(run.repo)
    stores = credential_stores(settings.sandbox_hide)
    deny = (repo, paths.bosun_home(), *stores) if private_reads else stores
    readable = [worktree, *own_reads, *linked_reads(paths.run_dir(run.id))]
    replace: tuple[tuple[Path, Path], ...] = ()
    if worker_git is not None:
        writable = (*writable, worker_git[0])
        replace = ((worktree / ".git", worker_git[1]),)
    elif not holdout:
        readable.append(repo / ".git")
    return Confinement(writable=writable, deny_read=deny, readable=tuple(readable), connect_ports=connect_ports,
                       replace=replace)


def verify_confinement(repo: Path, workdir: Path, home: Path, reads: tuple[Path, ...] = ()) -> Confinement | None:
    """A verify command's confinement: writes in the tree it verifies and its HOME, reads hidden like
    a worker's (``reads``: what set-up linked into the tree), and under ``network = "provider-only"``
    a loopback of its own. None when the sandbox is off or this machine has none (``required``
    already refused the run before its worker started)."""
    from bosun.core.config import load_settings

    settings = load_settings(repo)
    if settings.sandbox == "off" or probe().mechanism == "none":
        return None
    return Confinement(writable=(workdir, home), deny_read=hidden(settings, repo),
                       readable=(repo / ".git", *reads), private_network=settings.network == "provider-only")


def verify_report(settings: Settings, support: Support) -> dict[str, str]:
    """What holds for the verify commands (they run the worker's code), for the run's record."""
    if settings.sandbox == "off" or support.mechanism == "none":
        return {"mechanism": "none"}
    network = ("any (network = \"any\")" if settings.network == "any" else "a loopback of its own, nothing else"
               if support.namespaces else "not enforced: no network namespaces here")
    return {"mechanism": support.mechanism, "network": network}
