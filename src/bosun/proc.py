"""Where processes start (the few other modules that do: docs/architecture.md, kept by test_homes.py).

Three entry points:

* ``run_quick`` for short trusted commands (git plumbing): ``subprocess.run`` with argv lists only.
* ``start_detached`` for bosun's own background processes (a delegation that outlives a tool call).
* ``run_supervised`` for untrusted or long commands (workers, verification): its own session and
  process group, an explicit environment, stdin fed from a thread, stdout/stderr drained by threads
  into bounded head+tail buffers (the child never blocks on a full pipe), an optional per-line
  callback, a wall timeout and an idle timeout that kill the whole group, and a short grace for
  children that keep stdout open after the main process exits. With ``confine`` the child is put
  in the kernel sandbox (``bosun.sandbox``: its own namespaces through bwrap, or a Landlock ruleset,
  inherited by everything it starts), and when the step ends every process it left behind is gone:
  by the end of its PID namespace, or stopped and killed by the subreaper (``bosun.sandbox.reaper``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from bosun.core.pipes import BoundedBuffer, ExitWatch, PipeReader, feed_stdin

if TYPE_CHECKING:
    from bosun.sandbox import Confinement
    from bosun.sandbox.reaper import Step

# Environment variables any child may inherit: the basics a CLI needs to find programs, speak the
# user's locale and reach the network through the user's proxy. Everything else is dropped unless a
# profile names it.
BASE_ENV_ALLOWLIST = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)
ENV_PREFIX_ALLOWLIST = ("LC_",)

STDOUT_GRACE_S = 2.0
KILL_GRACE_S = 1.0
# How often a supervised step checks its timeouts and cancellation while the child runs. The child's
# exit itself is seen at once (``ExitWatch``), not at the next check.
POLL_S = 0.05


# How long a short trusted command (git plumbing, mostly) may take before it counts as hung.
QUICK_TIMEOUT_S = 120


def allowlisted_env(
    extra_keys: Iterable[str] = (),
    overrides: Mapping[str, str] | None = None,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Build a child environment from the allowlist plus ``extra_keys`` taken from ``source``."""
    src = os.environ if source is None else source
    keys = set(BASE_ENV_ALLOWLIST) | set(extra_keys)
    env = {k: v for k, v in src.items() if k in keys or k.startswith(ENV_PREFIX_ALLOWLIST)}
    if overrides:
        env.update(overrides)
    return without_relative_path(env)


def without_relative_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` with only the absolute directories of its ``PATH``.

    A relative entry (``node_modules/.bin``, ``.``, or an empty one, which means ``.``) is looked up in
    the child's working directory: in a worktree, that is the worker's files, so ``python3`` there
    would be whatever program the worker left under that name."""
    if "PATH" in env:
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if os.path.isabs(p))
    return env


@dataclass
class QuickResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def run_quick(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    timeout: float | None = QUICK_TIMEOUT_S,
    text: bool = True,
) -> QuickResult:
    """Run a short trusted command and capture its output (no shell, ever)."""
    proc = subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        input=input,
        capture_output=True,
        timeout=timeout,
        text=text,
        stdin=None if input is not None else subprocess.DEVNULL,
    )
    return QuickResult(list(argv), proc.returncode, proc.stdout, proc.stderr)


@dataclass
class SupervisedResult:
    argv: list[str]
    exit_code: int | None
    duration_s: float
    timed_out: bool = False
    idle_timed_out: bool = False
    cancelled: bool = False
    killed_stragglers: bool = False
    # Processes the step left behind, killed when it ended: [{pid, cmd}].
    contained: list[dict[str, object]] = field(default_factory=list)
    stdout: BoundedBuffer = field(default_factory=BoundedBuffer)
    stderr: BoundedBuffer = field(default_factory=BoundedBuffer)
    # Wall clock (time.time()) when the process was started and when its exit was seen: the process's
    # own time, without bosun's set-up before it and its clean-up after (``duration_s`` has both).
    started_at: float = 0.0
    exited_at: float = 0.0

    @property
    def process_s(self) -> float:
        return max(0.0, self.exited_at - self.started_at)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.idle_timed_out

    def output_tail(self, limit: int = 4000) -> str:
        out = self.stdout.tail_text(limit)
        err = self.stderr.tail_text(limit)
        joined = out + ("\n" if out and err else "") + err
        return joined[-limit:]


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def terminate_group(pgid: int, grace: float = KILL_GRACE_S) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after ``grace`` seconds."""
    _kill_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _group_alive(pgid):
        time.sleep(0.02)
    _kill_group(pgid, signal.SIGKILL)


def run_supervised(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    stdin_data: bytes | None = None,
    timeout_s: float | None = None,
    idle_timeout_s: float | None = None,
    on_line: Callable[[str], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    stdout_grace_s: float = STDOUT_GRACE_S,
    confine: Confinement | None = None,
    stdin_pipe: Callable[[IO[bytes]], None] | None = None,
) -> SupervisedResult:
    """Run an untrusted command in its own process group with bounded capture and timeouts.

    ``stdin_pipe``, instead of ``stdin_data``, receives the child's open stdin once it runs: a
    protocol spoken over stdio (ACP) writes requests as the conversation goes and closes it.

    ``on_start`` receives the child's pid (== its process group id) so callers can record it.
    ``should_stop`` is polled; when it returns True the group is terminated (cancellation).
    ``confine`` starts the child in the kernel sandbox (namespaces through bwrap, or a Landlock
    ruleset; inherited by all its descendants); the caller checks ``bosun.sandbox.probe()`` first.
    Whatever the step started is killed when it ends (by the end of its PID namespace, or by the
    subreaper's sweep).
    Raises ``FileNotFoundError`` when the program does not exist and ``SandboxFailed`` when the
    kernel refused the confinement (the program never ran).
    """
    from bosun.sandbox import SandboxFailed, prepare, reaper, spawn
    from bosun.sandbox.bubblewrap import find_program

    started = time.monotonic()
    try:
        prepared = prepare(confine) if confine is not None else None
    except OSError as exc:
        raise SandboxFailed(f"the kernel refused the sandbox for {argv[0]}: {exc}") from None
    command = list(argv)
    namespaced = prepared is not None and prepared.contained
    if prepared is not None and namespaced:
        # The program is looked up here so a missing one fails as it does unconfined, not as bwrap's
        # exit code.
        try:
            find_program(argv[0], cwd, env)
        except OSError:
            prepared.close()
            raise
        command = prepared.command(argv, Path(cwd))
    containment = reaper.enable()
    # Inside its own PID namespace whatever the child starts dies with it: the step is only registered
    # (so no other step's end takes its bwrap for an orphan), never swept.
    pending = (reaper.Step(0, set(), namespaced=True) if namespaced else reaper.begin()) if containment else None

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            command,
            cwd=str(cwd),
            env=dict(env),
            stdin=subprocess.PIPE if stdin_data is not None or stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )

    with reaper.spawning:  # no other step's end may judge bosun's children until this one is registered
        try:
            proc = spawn(prepared, start) if prepared is not None else start()
        finally:
            if prepared is not None:
                prepared.close()
        spawned_at = time.time()
        pgid = proc.pid
        step = reaper.register(pending, pgid) if pending is not None else None
    try:
        if stdin_pipe is not None:
            assert proc.stdin is not None
            stdin_pipe(proc.stdin)
        return _supervise(proc, argv, started, stdin_data, timeout_s, idle_timeout_s, on_line,
                          on_start, should_stop, stdout_grace_s, step, spawned_at)
    except BaseException:
        if step is not None:
            terminate_group(pgid, grace=0.2)
            reaper.contain(step)
        raise
    finally:
        if prepared is not None:
            prepared.release()


def _supervise(
    proc: subprocess.Popen[bytes],
    argv: Sequence[str],
    started: float,
    stdin_data: bytes | None,
    timeout_s: float | None,
    idle_timeout_s: float | None,
    on_line: Callable[[str], None] | None,
    on_start: Callable[[int], None] | None,
    should_stop: Callable[[], bool] | None,
    stdout_grace_s: float,
    step: Step | None,
    spawned_at: float,
) -> SupervisedResult:
    from bosun.sandbox import reaper

    pgid = proc.pid
    result = SupervisedResult(list(argv), None, 0.0, started_at=spawned_at)
    activity = [time.monotonic()]
    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        PipeReader(proc.stdout.fileno(), result.stdout, on_line, activity),
        PipeReader(proc.stderr.fileno(), result.stderr, None, activity),
    ]
    for r in readers:
        r.start()
    if stdin_data is not None:
        threading.Thread(target=feed_stdin, args=(proc, stdin_data), daemon=True).start()
    if on_start is not None:
        # After the readers and stdin run: a caller may do work here while the child already runs.
        on_start(pgid)

    deadline = started + timeout_s if timeout_s else None
    next_note = 0.0
    exited = ExitWatch(proc)
    try:
        while True:
            if exited.wait(POLL_S):
                break
            now = time.monotonic()
            if step is not None and now >= next_note:
                reaper.note_descendants(step)
                next_note = now + 0.5
            if deadline is not None and now >= deadline:
                result.timed_out = True
            elif idle_timeout_s and now - activity[0] >= idle_timeout_s:
                result.idle_timed_out = True
            elif should_stop is not None and should_stop():
                result.cancelled = True
            else:
                continue
            terminate_group(pgid)
            proc.wait()
            break
    finally:
        exited.close()

    result.exit_code = proc.returncode
    result.exited_at = time.time()
    # The main process is gone. Children that inherited stdout may keep the pipe open forever:
    # give them a short grace to finish writing, then kill the whole group.
    grace_end = time.monotonic() + stdout_grace_s
    for r in readers:
        r.join(timeout=max(0.0, grace_end - time.monotonic()))
    if any(r.is_alive() for r in readers) or _group_alive(pgid):
        result.killed_stragglers = _group_alive(pgid)
        terminate_group(pgid, grace=0.2)
    if step is not None:
        # Everything else it started (setsid'd daemons, double forks, scrubbed environments).
        result.contained = [k.to_dict() for k in reaper.contain(step)]
    for r in readers:
        r.join(timeout=2.0)
    for stream in (proc.stdout, proc.stderr):
        try:
            stream.close()
        except OSError:
            pass
    result.duration_s = time.monotonic() - started
    return result


def start_detached(argv: Sequence[str], *, cwd: str | Path, env: Mapping[str, str], log_path: Path) -> int:
    """Start a trusted bosun process that outlives the caller's request (its own session, output to
    ``log_path``, no stdin). A thread reaps it so it never lingers as a zombie. Returns its pid."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            list(argv), cwd=str(cwd), env=dict(env), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, close_fds=True,
        )
    threading.Thread(target=proc.wait, name=f"bosun-reap-{proc.pid}", daemon=True).start()
    return proc.pid


def process_start_time(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), or None if it is not running.

    Together with the pid it identifies a process across pid reuse.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # Field 2 (comm) may contain spaces and parentheses: split after the last ')'.
    rest = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def pid_alive(pid: int, start_time: int | None) -> bool:
    current = process_start_time(pid)
    if current is None:
        return False
    return start_time is None or current == start_time


# Every worker process gets a unique token in its environment, so processes it leaves behind in
# other sessions or process groups can still be found and killed (see reap_strays).
TOKEN_VAR = "BOSUN_WORKER_TOKEN"


def new_token() -> str:
    import uuid

    return uuid.uuid4().hex


def reap_strays(token: str, grace_s: float = 0.5) -> list[int]:
    """Kill processes that still carry ``BOSUN_WORKER_TOKEN=token`` in their environment.

    OpenCode and Pi start every shell command in its own session (``detached``), so killing the worker's
    process group does not reach a command still running (``sleep 600``, a dev server). Those commands
    inherit the worker's environment, token included; after the worker is gone they are found in
    ``/proc`` and killed. Linux only (elsewhere this does nothing); a process that scrubs its own
    environment escapes it.
    """
    needle = f"\0{TOKEN_VAR}={token}\0".encode()
    me = os.getpid()

    def scan() -> list[int]:
        found = []
        try:
            entries = os.listdir("/proc")
        except OSError:
            return []
        for name in entries:
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    data = b"\0" + fh.read() + b"\0"
            except OSError:
                continue
            if needle in data:
                found.append(int(name))
        return found

    pids = scan()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    if pids:
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and scan():
            time.sleep(0.05)
        for pid in scan():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return pids


def spawn_detached(argv: Sequence[str], env: Mapping[str, str], log: Path) -> int:
    """Start a long-lived background process (``bosun dash --detach``): its own session, stdin from
    /dev/null, stdout and stderr appended to ``log``. Returns its pid; nobody waits for it."""
    with log.open("ab") as out:
        child = subprocess.Popen(
            list(argv), env=dict(env), stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
            close_fds=True,
        )
    return child.pid
