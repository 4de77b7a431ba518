"""bosun's warm process: bosun, pydantic and the tokenizer imported once, forked per command.

``bosun warm start`` runs this module detached. It imports what the validating verbs need, listens
on a Unix socket in a directory of the user's alone (``warm_client.socket_path``), and for each
connection forks a copy of itself that takes over the caller's command: the copy checks the caller
(same user, the same bosun and Python on disk, a descriptor of bosun's store open for writing),
takes the caller's environment, working directory, umask and standard streams, and runs
``bosun.cli.main.main`` on the caller's arguments as a fresh process would. Its exit code goes back
to the caller, which exits with it.

The listening process does nothing but accept, fork and reap: it never reads a request (a caller
that connects and sends nothing holds up only its own copy), holds no state of any run, and exits
after ``--idle`` minutes without a connection, on SIGTERM (``bosun warm stop``), or when a copy
finds bosun or a module it imported changed on disk (the next command runs the ordinary way).
"""

from __future__ import annotations

import os
import sys

from bosun.cli.warm_checks import Refused, check_store_writable, receive, same_stamp, well_formed

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket as socket_module
    import threading

# Imported before the first fork; every copy starts with them: every module of these packages (the
# base layer, the apps, the engine, the workers, isolation, the sandbox, the store, the gates, plans)
# and bosun's top-level modules, the command-line handlers, then the tokenizer's vocabulary. Not the optional parts (the
# MCP server, the dashboard, remote workers), which load their own dependencies. No module of
# bosun's starts a thread or reads the environment at import (a copy's environment is the caller's).
PRELOAD_PACKAGES = ("core", "apps", "engine", "workers", "isolation", "sandbox", "store", "gates", "plans", "parents")
PRELOAD = ("bosun.cli.main", "bosun.cli.dispatch", "bosun.cli.handlers", "bosun.cli.render", "bosun.cli.views",
           "bosun.cli.plan_cli", "bosun.cli.pool_cli", "xml.etree.ElementTree", "ctypes")
NOT_PRELOADED = ("bosun.__main__", "bosun.cli.warm_server")
REQUEST_TIMEOUT_S = 10.0  # a caller that connects and sends nothing: its copy gives up after this
MAX_REQUEST = 4 << 20
GO = b"go\n"
MAX_COPIES = 64  # forks alive at once; beyond, a caller runs its command itself (a flood forks nothing)


def preload() -> None:
    import importlib
    import pkgutil

    import bosun
    from bosun.engine.metrics import _encoder

    names = [*PRELOAD]
    for info in pkgutil.iter_modules(bosun.__path__, "bosun."):
        if not info.ispkg and info.name not in NOT_PRELOADED:
            names.append(info.name)
    for package in PRELOAD_PACKAGES:
        names.append(f"bosun.{package}")
        path = [os.path.join(bosun.__path__[0], package)]
        names.extend(info.name for info in pkgutil.walk_packages(path, f"bosun.{package}."))
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # an optional part that is not installed: the copy imports (and reports) it as usual
    _encoder()


def module_stamps() -> dict[str, tuple[int, int]]:
    """(mtime, size) of every imported module's file: a copy refuses to run once any changed."""
    out = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        out[path] = (st.st_mtime_ns, st.st_size)
    return out


def changed_modules(stamps: dict[str, tuple[int, int]]) -> list[str]:
    changed = []
    for path, (mtime, size) in stamps.items():
        try:
            st = os.stat(path)
        except OSError:
            changed.append(path)
            continue
        if st.st_mtime_ns != mtime or st.st_size != size:
            changed.append(path)
    return changed


class Server:
    def __init__(self, home: str, idle_s: float) -> None:
        from bosun.core.warm_client import socket_path, stamp

        self.home = home
        self.idle_s = idle_s
        self.path = socket_path(home)
        self.db = os.path.join(home, "bosun.db")  # paths.db_path() of this home
        self.stamp = stamp()
        self.stamps: dict[str, tuple[int, int]] = {}
        self.children: set[int] = set()

    def serve(self) -> socket_module.socket | None:
        """Accept and fork until told to stop; returns in a forked copy, with its connection."""
        import errno
        import select
        import signal
        import socket
        import time

        from bosun.core.warm_client import private_dir_ok

        directory = os.path.dirname(self.path)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if not private_dir_ok(directory):
            sys.stderr.write(f"bosun warm: {directory} is not this user's alone (mode 700); not listening\n")
            return None
        lock = _single_instance(self.home)
        if lock is None:
            sys.stderr.write("bosun warm: another warm process serves this bosun home\n")
            return None
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        old_mask = os.umask(0o077)
        listener.bind(self.path)
        os.umask(old_mask)
        listener.listen(64)
        listening = os.stat(self.path).st_ino
        stopping: list[int] = []
        signal.signal(signal.SIGTERM, lambda signum, _f: stopping.append(signum))
        signal.signal(signal.SIGINT, lambda signum, _f: stopping.append(signum))
        self.stamps = module_stamps()
        import gc

        gc.collect()
        gc.freeze()  # the preloaded objects: no copy's collections walk (and so copy) their pages
        _write_info(self.home, {"pid": os.getpid(), "socket": self.path, "started": time.time(),
                                "idle_s": self.idle_s, "python": sys.executable})
        last = time.monotonic()
        try:
            while not stopping:
                self._reap()
                if os.path.exists(os.path.join(self.home, "warm.stop")):
                    break  # a copy found bosun changed on disk
                try:
                    ready, _, _ = select.select([listener], [], [], 1.0)
                except InterruptedError:
                    continue
                if not ready:
                    if time.monotonic() - last > self.idle_s:
                        break
                    continue
                try:
                    conn, _ = listener.accept()
                except OSError as exc:
                    if exc.errno in (errno.EINTR, errno.EAGAIN, errno.ECONNABORTED):
                        continue
                    raise
                last = time.monotonic()
                self._reap()
                if len(self.children) >= MAX_COPIES:
                    conn.close()  # the caller runs its command the ordinary way
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    os.close(lock)
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                    return conn
                conn.close()
                self.children.add(pid)
        finally:
            if os.getpid() == _server_pid[0]:
                listener.close()
                _remove_own(self.path, listening)
                _remove_info(self.home)
        return None

    def _reap(self) -> None:
        for pid in list(self.children):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.children.discard(pid)


_server_pid = [0]


def _single_instance(home: str) -> int | None:
    import fcntl

    os.makedirs(home, exist_ok=True)
    fd = os.open(os.path.join(home, "warm.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    try:
        os.unlink(os.path.join(home, "warm.stop"))
    except FileNotFoundError:
        pass
    return fd


def _write_info(home: str, info: dict[str, object]) -> None:
    from pathlib import Path

    from bosun.core.fileio import write_json_atomic

    write_json_atomic(Path(home) / "warm.json", info)


def _remove_info(home: str) -> None:
    try:
        os.unlink(os.path.join(home, "warm.json"))
    except FileNotFoundError:
        pass


def _remove_own(path: str, inode: int) -> None:
    """Remove the socket file if it is still the one this process bound (a new server may own it)."""
    try:
        if os.stat(path).st_ino == inode:
            os.unlink(path)
    except OSError:
        pass


# ---- in a forked copy -------------------------------------------------------------------------------


def take_request(conn: socket_module.socket, server: Server) -> dict[str, object]:
    """Read and check the caller's request: its length, sent with bosun's store (open for writing),
    then the request itself. The caller's standard streams come only with its "go"."""
    import json
    import socket
    import struct

    conn.settimeout(REQUEST_TIMEOUT_S)
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    head, fds = receive(conn, 4, 1)
    try:
        if uid != os.getuid():
            raise Refused("another user")
        if len(head) != 4 or len(fds) != 1:
            raise Refused("a malformed request")
        check_store_writable(fds[0], server.db)  # first: nothing else of a caller's is even read
    finally:
        for fd in fds:
            os.close(fd)
    size = int.from_bytes(head, "big")
    if size > MAX_REQUEST:
        raise Refused("a request too large")
    payload = b""
    while len(payload) < size:
        chunk = conn.recv(size - len(payload))
        if not chunk:
            raise Refused("a request cut short")
        payload += chunk
    request = well_formed(json.loads(payload))
    from bosun.core.warm_client import PROTOCOL

    if request.get("protocol") != PROTOCOL or request.get("home") != server.home:
        raise Refused("another protocol or bosun home")
    if not same_stamp(request.get("stamp"), server.stamp):
        raise Refused("another bosun, Python or module path")
    stale = changed_modules(server.stamps)
    if stale:
        _ask_server_to_stop(server.home)
        raise Refused("bosun or a module it uses changed on disk: " + stale[0])
    return request


def _ask_server_to_stop(home: str) -> None:
    try:
        with open(os.path.join(home, "warm.stop"), "w"):
            pass
    except OSError:
        pass


def become_caller(request: dict[str, object], streams: list[int]) -> None:
    """Take the caller's session-less place: its streams, environment, directory and umask."""
    import time

    os.setsid()  # off the warm process's session: its own, as concurrent commands' would be
    umask, env, cwd, argv = request["umask"], request["env"], request["cwd"], request["argv"]
    assert isinstance(umask, int) and isinstance(env, dict) and isinstance(cwd, str) and isinstance(argv, list)
    os.umask(umask)
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    os.chdir(cwd)
    for target, fd in enumerate(streams):
        os.dup2(fd, target)
    for fd in streams:
        if fd > 2:
            os.close(fd)
    specs = request.get("streams")
    _rebuild_streams(specs if isinstance(specs, list) else [None, None, None])
    sys.argv = ["bosun", *argv]


def _rebuild_streams(specs: list[object]) -> None:
    import io

    made = []
    for fd, spec in enumerate(specs[:3]):
        encoding, errors, line_buffering = spec if isinstance(spec, list) and len(spec) == 3 else ("utf-8", "strict", False)
        raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
        buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        made.append(io.TextIOWrapper(buffered, encoding=str(encoding), errors=str(errors), newline="\n",
                                     line_buffering=bool(line_buffering)))
    sys.stdin, sys.stdout, sys.stderr = made
    for name, stream in zip(("__stdin__", "__stdout__", "__stderr__"), made, strict=True):
        setattr(sys, name, stream)  # the originals are the warm process's own (its log)


def watch_caller(conn: socket_module.socket, finished: threading.Event) -> None:
    """When the caller goes away (killed) before the command has ``finished``, stop as on Ctrl-C:
    the run is left recoverable and its worker is stopped, not orphaned."""
    import signal
    import threading

    def wait() -> None:
        try:
            conn.settimeout(None)
            while conn.recv(64):
                pass
        except OSError:
            pass
        if not finished.is_set():
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=wait, name="bosun-warm-caller", daemon=True).start()


def run_copy(conn: socket_module.socket, server: Server) -> int:
    import atexit
    import threading
    import traceback

    try:
        request = take_request(conn, server)
    except Refused as exc:
        _send(conn, {"refused": str(exc)})
        return 0
    except (OSError, ValueError, KeyError, TypeError):
        return 0  # the caller went away or spoke nonsense: it runs the command itself, or nothing
    # Two steps, so a command never runs twice: this fork offers its pid, and runs only once the
    # caller answers "go". A caller that gave up waiting (and runs the command itself) never does.
    _send(conn, {"pid": os.getpid()})
    streams = _caller_says_go(conn)
    if streams is None:
        return 0
    become_caller(request, streams)
    code = [1]
    finished = threading.Event()

    def report_exit() -> None:  # registered first, so it runs last of the exit callbacks
        finished.set()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        _release_streams()
        _send(conn, {"exit": code[0]})

    atexit.register(report_exit)
    watch_caller(conn, finished)
    argv = request["argv"]
    assert isinstance(argv, list)
    try:
        from bosun.cli.main import main
        from bosun.core.errors import interrupted_exit_code, raise_on_termination

        raise_on_termination()  # as the command run the ordinary way does

        code[0] = main(argv)
    except SystemExit as exc:
        code[0] = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt as exc:
        code[0] = interrupted_exit_code(exc)
    except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback, exit 1
        traceback.print_exc()
        code[0] = 1
    return code[0]


def _release_streams() -> None:
    """Let go of the caller's stdin, stdout and stderr once the command's output is flushed: a caller
    that reads them to their end (a parent agent with pipes) has all there is now, and need not wait
    while this copy's interpreter shuts down (tens of ms with everything loaded)."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    for fd in (0, 1, 2):
        try:
            os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)


def _caller_says_go(conn: socket_module.socket) -> list[int] | None:
    """The caller's stdin, stdout and stderr, sent with its "go"; None if it gave up instead.

    They come only now: descriptors in flight to a warm process that never takes them (stopped,
    swamped) would hold the caller's pipes open after the caller ran the command itself and exited."""
    try:
        answer, fds = receive(conn, len(GO), 3)
    except OSError:
        return None
    if answer == GO and len(fds) == 3:
        return fds
    for fd in fds:
        os.close(fd)
    return None


def _send(conn: socket_module.socket, message: dict[str, object]) -> None:
    import json

    try:
        conn.sendall((json.dumps(message) + "\n").encode())
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bosun.cli.warm_server")
    parser.add_argument("--idle", type=float, default=60.0, help="minutes without a command before exiting")
    args = parser.parse_args(argv)
    from bosun.core.paths import bosun_home

    home = str(bosun_home())
    os.environ["BOSUN_HOME"] = home
    os.chdir("/")  # hold no directory of the user's (one may be removed while this runs)
    preload()
    _server_pid[0] = os.getpid()
    server = Server(home, args.idle * 60)
    conn = server.serve()
    if conn is None:
        return 0
    return run_copy(conn, server)


if __name__ == "__main__":
    raise SystemExit(main())
