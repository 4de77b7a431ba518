"""Processes that still live in a worktree after its worker stopped: found through /proc and killed.

Verification must run with nothing of the worker's alive: a daemon that swaps a file only while the
tests run would otherwise decide the verdict. The sandbox's process containment kills the worker's
whole process tree; this is the check that holds without it, whatever the process did to hide
(``setsid``, a double fork, an empty environment): a process whose working directory, root, or
any open file lies inside the worktree is the worker's, since nothing else has business there.
Only processes started while the worker ran are considered (a person's shell opened in the
worktree before or after is left alone), and never bosun's own ancestors. Linux only; elsewhere it
finds nothing.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def _inside(link: str, root: str) -> bool:
    return link == root or link.startswith(root + os.sep)


def _touches(pid: str, root: str) -> bool:
    base = f"/proc/{pid}"
    for name in ("cwd", "root"):
        try:
            if _inside(os.readlink(f"{base}/{name}"), root):
                return True
        except OSError:
            pass
    try:
        fds = os.listdir(f"{base}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if _inside(os.readlink(f"{base}/fd/{fd}"), root):
                return True
        except OSError:
            continue
    return False


def boot_clock() -> float:
    """Seconds since boot: the clock /proc start times are counted in."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def _started_at(pid: str) -> float | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rfind(")") + 2 :].split()[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    while pid > 1:
        out.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat[stat.rfind(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def processes_in(worktree: Path, window: tuple[float, float] | None = None) -> list[int]:
    """Pids whose cwd, root or an open file is inside ``worktree`` (started within ``window``, if given)."""
    root = os.path.realpath(worktree)
    mine = _ancestors()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for p in entries:
        if not p.isdigit() or int(p) in mine:
            continue
        # The start time first: one small read, where _touches reads every open file's link, and on
        # a desktop most processes (browsers, editors) started long before the worker.
        started = _started_at(p) if window is not None else None
        if window is not None and started is not None and not (window[0] - 1 <= started <= window[1] + 1):
            continue
        if _touches(p, root):
            found.append(int(p))
    return found


def _describe(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip()
    except OSError:
        cmd = b""
    return f"{pid} ({cmd.decode('utf-8', 'replace')[:80] or '?'})"


def stop_lingering(worktree: Path, window: tuple[float, float] | None = None, grace_s: float = 0.5) -> list[str]:
    """Kill every process found in ``worktree``; return what was killed. Raises if any survives."""
    from bosun.core.errors import BosunError

    pids = processes_in(worktree, window)
    if not pids:
        return []
    described = [_describe(p) for p in pids]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and processes_in(worktree, window):
            time.sleep(0.02)
        pids = processes_in(worktree, window)
        if not pids:
            return described
    raise BosunError(
        "processes the worker started are still running in its worktree: "
        + ", ".join(_describe(p) for p in pids[:5]),
        "verification refuses to run while they live; kill them and run `bosun verify` again",
        code="WORKER_STILL_RUNNING",
    )
