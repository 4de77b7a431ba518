"""What a warm copy checks before it runs a caller's command, apart from the server: the request's
shape, the caller's stamp (the same interpreter and bosun), and that the caller holds bosun's store
open for writing (it could do itself what the copy will do). Each failure is ``Refused``: the caller
then runs its command the ordinary way."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket as socket_module


class Refused(Exception):
    """The copy will not run this caller's command; the caller runs it the ordinary way."""


def receive(conn: socket_module.socket, size: int, most: int) -> tuple[bytes, list[int]]:
    """Up to ``size`` bytes and the descriptors sent with them (at most ``most`` kept)."""
    import array
    import socket

    data, ancillary, _flags, _addr = conn.recvmsg(size, socket.CMSG_SPACE(8 * array.array("i").itemsize))
    fds: list[int] = []
    for level, kind, raw in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            received = array.array("i")
            received.frombytes(raw[: len(raw) - len(raw) % received.itemsize])
            fds.extend(received)
    for extra in fds[most:]:
        os.close(extra)
    return data, fds[:most]


def well_formed(request: object) -> dict[str, object]:
    """The request, if every field has its type: argv a list of strings, env a mapping of strings."""
    def text(value: object) -> bool:
        return isinstance(value, str) and "\0" not in value

    ok = (isinstance(request, dict)
          and isinstance(request.get("argv"), list) and all(text(a) for a in request["argv"])
          and isinstance(request.get("env"), dict)
          and all(text(k) and k and "=" not in k and text(v) for k, v in request["env"].items())
          and text(request.get("cwd")) and isinstance(request.get("umask"), int)
          and 0 <= request["umask"] <= 0o777)
    if not ok or not isinstance(request, dict):
        raise Refused("a malformed request")
    if not os.path.isdir(request["cwd"]):
        raise Refused("the caller's working directory is gone")
    return request


def same_stamp(theirs: object, ours: dict[str, object]) -> bool:
    """The same interpreter, flags, bosun package and module path (``warm_client.stamp``)."""
    if not isinstance(theirs, dict):
        return False
    return all(theirs.get(k) == ours.get(k) for k in ("executable", "flags", "package", "path"))


def check_store_writable(fd: int, db: str) -> None:
    """The caller sent bosun's store open for writing: it could do what the copy will do itself."""
    import fcntl

    try:
        theirs = os.fstat(fd)
        ours = os.stat(db)
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except OSError as exc:
        raise Refused(f"the store could not be checked ({exc})") from exc
    if (theirs.st_dev, theirs.st_ino) != (ours.st_dev, ours.st_ino) or mode != os.O_RDWR:
        raise Refused("the caller did not show it can write bosun's store")
