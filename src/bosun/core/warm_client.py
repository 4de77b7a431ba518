"""Hand a command to bosun's warm process, if one runs for this bosun home (``bosun warm start``).

A command that validates a task or settings spends ~0.2 s importing pydantic and building bosun's
models before it does anything (most of bosun's own time around a fast worker). The warm process
has them imported: it forks a copy of itself per command, and the copy runs the command exactly as
this process would have, with this process's arguments, environment, working directory, umask and
standard streams (passed as file descriptors). This process only waits: it forwards the signals it
gets (Ctrl-C, SIGTERM, SIGHUP) to the copy and exits with the copy's exit code. When it dies, the
copy sees its connection close and stops as on Ctrl-C.

Nothing goes to the warm process unless this process can write bosun's store itself: it opens the
store's database for writing and passes that descriptor along, and the copy checks it is that file,
open for writing. A worker or verify command under bosun's sandbox cannot open it so, and so cannot
ask the warm process for anything it could not do itself.

Whenever the warm process is absent, stale (bosun or its dependencies changed on disk) or refuses,
the command runs here, the ordinary way. This module is imported on every such command: stdlib
only, nothing heavy.
"""

from __future__ import annotations

import os
import sys

# The verbs that validate a task or settings, and so pay for pydantic. The rest start fast anyway
# (read-only verbs) or are long-running servers that gain nothing (mcp, dash, agent, watch).
WARM_VERBS = frozenset({
    "delegate", "check", "prepare", "work", "verify", "approve", "integrate", "report", "cleanup",
    "recover", "cancel", "discard", "doctor", "plan", "gc",
})
PROTOCOL = 2
FORWARDED_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
HANDSHAKE_S = 5.0  # for the warm process to fork and check the request; beyond, the command runs here


def socket_path(home: str) -> str:
    """Where the warm process of bosun home ``home`` listens: in a directory of the user's alone.

    A Unix socket's path is limited to ~107 bytes, so it is not inside the home (a deep temporary
    directory would not fit) but in ``$XDG_RUNTIME_DIR/bosun`` or ``/tmp/bosun-<uid>``, named by a
    hash of the home."""
    from bosun.core.lean_imports import sha256  # hashlib would load OpenSSL

    base = os.environ.get("XDG_RUNTIME_DIR", "")
    root = os.path.join(base, "bosun") if os.path.isabs(base) else f"/tmp/bosun-{os.getuid()}"
    return os.path.join(root, sha256(home.encode()).hexdigest()[:20] + ".sock")


def private_dir_ok(path: str) -> bool:
    """The socket's directory is this user's alone (another user could otherwise plant a socket)."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def validating(argv: list[str]) -> bool:
    """Whether ``argv`` runs a validating verb (not its help, not a plan verb that only reads)."""
    words = [a for a in argv if not a.startswith("-")]
    if not words or words[0] not in WARM_VERBS or "--help" in argv or "-h" in argv:
        return False
    return not (words[0] == "plan" and words[1:2] in (["list"], ["status"], ["watch"]))


def eligible(argv: list[str]) -> bool:
    if not validating(argv):
        return False
    value = os.environ.get("BOSUN_WARM", "").strip().lower()
    return value not in ("0", "off", "no", "false")


def stamp() -> dict[str, object]:
    """What the warm process must share with this one to run its command as this one would."""
    # The module path without the entry Python puts first (the script's directory, or the working
    # directory for `python -m`): nothing of bosun's is imported from there.
    path = sys.path if sys.flags.safe_path else sys.path[1:]
    return {"executable": sys.executable, "path": list(path), "flags": _flags(),
            "package": os.path.dirname(os.path.abspath(__file__))}


def _flags() -> list[int]:
    f = sys.flags
    return [f.optimize, f.dont_write_bytecode, f.isolated, f.dev_mode, f.utf8_mode,
            f.no_user_site, f.ignore_environment]


def _streams() -> list[list[object] | None]:
    """Each standard stream's encoding, errors and line buffering, so the copy's match this process's."""
    out: list[list[object] | None] = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            out.append([stream.encoding, stream.errors, bool(stream.line_buffering)])
        except AttributeError:
            out.append(None)
    return out


def run(argv: list[str]) -> int | None:
    """Run ``argv`` in the warm process; its exit code, or None to run it here instead."""
    if not eligible(argv):
        return None
    try:
        from bosun.core.lean_imports import import_pathlib

        import_pathlib()  # before bosun.core.paths: without urllib.parse and the Windows modules
        from bosun.core.paths import bosun_home, db_path

        home = str(bosun_home())
        store_fd = os.open(db_path(), os.O_RDWR | os.O_CLOEXEC)
    except Exception:  # noqa: BLE001 - no home or store yet (or one bosun cannot write): nothing to ask
        return None
    path = socket_path(home)
    try:
        if not private_dir_ok(os.path.dirname(path)):
            return None
        return _ask(path, home, argv, store_fd)
    finally:
        os.close(store_fd)


def _ask(path: str, home: str, argv: list[str], store_fd: int) -> int | None:
    import json
    import socket

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    with conn:
        try:
            cwd = os.getcwd()
        except OSError:
            return None  # the working directory is gone: the ordinary path says so
        request = {"protocol": PROTOCOL, "argv": argv, "cwd": cwd, "env": dict(os.environ),
                   "umask": _umask(), "streams": _streams(), "home": home, "stamp": stamp()}
        payload = json.dumps(request).encode()
        try:
            # A warm process that does not answer in time (stopped, swamped) is not waited for: the
            # command runs here, and the fork, if it ever comes, never hears "go" and runs nothing.
            conn.settimeout(HANDSHAKE_S)
            conn.sendmsg([len(payload).to_bytes(4, "big")],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _fd_array([store_fd]))])
            conn.sendall(payload)
            reader = conn.makefile("rb")
            first = _message(reader)
            pid = first.get("pid") if first else None
            if not isinstance(pid, int):
                return None  # refused (stale, another protocol) or gone: run it here
            # The standard streams go only with "go": in flight to a warm process that never took
            # them, they would keep this command's pipes open after it ran here and exited.
            conn.sendmsg([b"go\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _fd_array([0, 1, 2]))])
            conn.settimeout(None)
        except OSError:  # socket.timeout included
            return None
        return _wait(reader, pid)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fd_array(fds: list[int]) -> bytes:
    import array

    return array.array("i", fds).tobytes()


def _message(reader: object) -> dict[str, object] | None:
    import json

    line = reader.readline()  # type: ignore[attr-defined]
    if not line:
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _wait(reader: object, pid: int) -> int:
    """Forward signals to the copy until it reports its exit code."""
    import signal

    forwarded: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signum)
        try:
            os.kill(pid, signum)
        except OSError:
            pass

    for name in FORWARDED_SIGNALS:
        signum = getattr(signal, name)
        if signal.getsignal(signum) != signal.SIG_IGN:  # ignored here (a background job): ignored there too
            signal.signal(signum, forward)
    while (message := _message(reader)) is not None:  # a forwarded signal does not end the read
        code = message.get("exit")
        if isinstance(code, int):
            return code
    # The copy ended without an exit code: a signal it did not handle killed it. If this process
    # forwarded one, end the same way, as the command run here would have.
    for signum in reversed(forwarded):
        if signum != signal.SIGINT:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
    sys.stderr.write("bosun: the warm process's copy running this command ended without an exit code "
                     "(killed?); `bosun warm status` says whether the warm process runs\n")
    return 1
