"""Process containment: every process a supervised step started dies when the step ends.

bosun makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): a worker's process that
``setsid()``s and double-forks is re-parented to bosun instead of init, whatever it did to its
environment, session or process group. When a step ends, bosun stops (SIGSTOP) and then kills
(SIGKILL) the step's whole tree: the step's main process and its descendants, and the orphans
re-parented to bosun that belong to it. Stopping first means nothing can fork its way out while the
tree is being walked.

Which orphans belong to a step: every step registers while it runs. An orphan is a child of bosun
in a session other than bosun's own (a worker's processes can never rejoin bosun's session) that
was not already bosun's child when the step started. When several steps run at once (plans), each
step also notes, while it runs, the processes it has seen under its main process; an orphan another
running step has seen is left to that step, and one nobody saw is killed by the first step to end.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36

_lock = threading.Lock()
# Held from a step's fork until it is registered, and while a step's end picks what to stop: otherwise
# a step ending in that window takes another step's just-started process for an orphan and kills it.
spawning = threading.Lock()
_enabled: bool | None = None
_steps: dict[int, Step] = {}


@dataclass
class Step:
    main_pid: int
    baseline: set[int]  # bosun's children when the step started: never this step's orphans
    seen: set[tuple[int, int]] = field(default_factory=set)  # (pid, start time) seen under main_pid
    # In a PID namespace of its own: nothing it starts can become bosun's orphan, so it is never swept;
    # registered only so no other step's end takes its main process for an orphan.
    namespaced: bool = False


@dataclass
class Killed:
    pid: int
    cmd: str

    def to_dict(self) -> dict[str, object]:
        return {"pid": self.pid, "cmd": self.cmd}


def enable() -> bool:
    """Make this process a child subreaper (once). False where the kernel has no such thing."""
    global _enabled
    with _lock:
        if _enabled is None:
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                _enabled = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):
                _enabled = False
        return _enabled


def supported() -> bool:
    return os.path.isdir("/proc/self") and hasattr(os, "getsid") and enable()


@dataclass
class _Proc:
    pid: int
    ppid: int
    sid: int
    state: str
    start: int


def _snapshot() -> dict[int, _Proc]:
    """Every process on the machine (pid, parent, session, state, start time). It reads one
    ``/proc/<pid>/stat`` per process, several times per supervised step, so on a desktop with
    hundreds of processes it is bosun's own time: raw file descriptors, no Python file objects."""
    procs: dict[int, _Proc] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return procs
    for name in names:
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            raw = os.read(fd, 4096)  # the whole line: the command name in it is at most 64 bytes
        except OSError:
            continue
        finally:
            os.close(fd)
        rest = raw[raw.rfind(b")") + 2 :].split()
        try:
            procs[int(name)] = _Proc(int(name), int(rest[1]), int(rest[3]), rest[0].decode("ascii", "replace"),
                                     int(rest[19]))
        except (IndexError, ValueError):
            continue
    return procs


def _children(procs: dict[int, _Proc]) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for p in procs.values():
        kids.setdefault(p.ppid, []).append(p.pid)
    return kids


def _subtree(root: int, kids: dict[int, list[int]]) -> list[int]:
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def begin() -> Step:
    """Note bosun's children before the step's process starts: they are never its orphans. Taken
    before the fork, because a fast double fork can re-parent a daemon to bosun within a millisecond.
    Orphans that exited on their own since the last step are reaped here (no zombie accumulates in
    a long-lived bosun)."""
    me = os.getpid()
    procs = _snapshot()
    _reap_orphan_zombies(procs)
    return Step(0, {p.pid for p in procs.values() if p.ppid == me})


def _reap_orphan_zombies(procs: dict[int, _Proc]) -> None:
    """waitpid the zombie children that are adopted orphans: in another session than bosun's (its
    own children from ``run_quick`` share its session) and no running step's main process (whose
    ``Popen`` collects it)."""
    me, my_sid = os.getpid(), os.getsid(0)
    with _lock:
        mains = set(_steps)
    _reap([p.pid for p in procs.values() if p.ppid == me and p.state == "Z" and p.sid != my_sid
           and p.pid not in mains])


def register(step: Step, main_pid: int) -> Step:
    step.main_pid = main_pid
    with _lock:
        _steps[main_pid] = step
    return step


def note_descendants(step: Step) -> None:
    """Remember what runs under the step's main process (only worth it with concurrent steps)."""
    if step.namespaced:
        return
    with _lock:
        if len(_steps) < 2:
            return
    procs = _snapshot()
    kids = _children(procs)
    found = {(pid, procs[pid].start) for pid in _subtree(step.main_pid, kids) if pid in procs}
    with _lock:
        step.seen |= found


def _members(step: Step, procs: dict[int, _Proc]) -> list[int]:
    me = os.getpid()
    my_sid = os.getsid(0)
    kids = _children(procs)
    with _lock:
        others = [s for s in _steps.values() if s is not step]
        other_mains = {s.main_pid for s in others}
        claimed = set().union(*(s.seen for s in others)) if others else set()
    roots = []
    if step.main_pid in procs and procs[step.main_pid].ppid == me:
        roots.append(step.main_pid)
    for pid in kids.get(me, ()):
        p = procs[pid]
        if pid == step.main_pid or pid in other_mains or pid in step.baseline or p.sid == my_sid:
            continue
        if (pid, p.start) in claimed and (pid, p.start) not in step.seen:
            continue
        roots.append(pid)
    members: list[int] = []
    for root in roots:
        members.extend(_subtree(root, kids))
    return members


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()[:200] or "?"


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _reap(pids: list[int]) -> None:
    """Collect the exit status of killed orphans (bosun is their parent now) so no zombie stays."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        except OSError:
            pass


def contain(step: Step, *, keep_main: bool = True, rounds: int = 20) -> list[Killed]:
    """Stop, then kill, every live process of ``step``. The main process itself is left to its
    ``Popen`` (which waits for it) when ``keep_main``; its descendants are not."""
    killed: dict[int, Killed] = {}
    stopped: set[int] = set()
    procs: dict[int, _Proc] = {}
    if step.namespaced:
        with _lock:
            _steps.pop(step.main_pid, None)
        return []
    try:
        with spawning:
            for _ in range(rounds):
                procs = _snapshot()
                members = [pid for pid in _members(step, procs) if procs[pid].state not in ("Z", "X")]
                fresh = [pid for pid in members if pid not in stopped]
                if not fresh:
                    break
                for pid in fresh:
                    if keep_main and pid == step.main_pid:
                        continue
                    killed.setdefault(pid, Killed(pid, _cmdline(pid)))
                    _signal(pid, signal.SIGSTOP)
                    stopped.add(pid)
                time.sleep(0.005)
        if stopped:
            for pid in stopped:
                _signal(pid, signal.SIGKILL)
            # Give the kernel a moment to deliver, then reap what became our zombie children.
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                procs = _snapshot()
                alive = [pid for pid in stopped if pid in procs and procs[pid].state not in ("Z", "X")]
                if not alive:
                    break
                time.sleep(0.01)
            _reap([pid for pid in stopped if pid != step.main_pid])
            procs = _snapshot()
        # Also reap orphans of this step that exited on their own before the end. With nothing stopped,
        # the last look found no live member: its zombies are all there is (the usual end of a step).
        _reap([pid for pid in _members(step, procs) if procs[pid].state == "Z" and pid != step.main_pid])
    finally:
        with _lock:
            _steps.pop(step.main_pid, None)
    return list(killed.values())
