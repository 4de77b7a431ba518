"""A hostile worker for sandbox tests: runs as a real process through the `command` adapter.

Usage: hostile.py write PATH... | hostile.py read PATH... | hostile.py daemon. The current directory
is the worktree.

``write`` tries every way it knows to change each PATH (append, truncate, replace by rename, delete,
create beside it), then makes the honest fix and prints what happened to each attempt.
``warm SOCKET DB ARGV_JSON`` asks bosun's warm process to run ARGV for it, as a worker that cannot
write bosun's store (DB) might: with the store open read-only, and with a file of its own open for
writing in its place; it prints the warm process's replies.
``daemon`` starts a daemon the classic way (setsid, double fork, an empty environment) that keeps
writing into the worktree, records its pid in HOME, makes the fix and exits at once.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted import fix  # noqa: E402


def attempt(what: str, fn: object) -> str:
    try:
        fn()  # type: ignore[operator]
    except OSError as exc:
        return f"{what}: refused ({exc.strerror})"
    return f"{what}: DONE"


def write(paths: list[str]) -> None:
    sys.stdin.read()
    results = []
    for raw in paths:
        p = Path(raw)
        decoy = Path("decoy.txt")
        results.append(attempt(f"append {p}", lambda p=p: p.open("a").write("owned\n")))
        results.append(attempt(f"truncate {p}", lambda p=p: os.truncate(p, 0)))
        results.append(attempt(f"create {p}", lambda p=p: p.write_text("#!/bin/sh\necho owned\n")))
        decoy.write_text("owned\n")
        results.append(attempt(f"rename over {p}", lambda p=p, d=decoy: os.replace(d, p)))
        results.append(attempt(f"delete {p}", lambda p=p: os.unlink(p)))
        results.append(attempt(f"create beside {p}", lambda p=p: p.with_name(p.name + ".owned").write_text("x")))
        results.append(attempt(f"symlink beside {p}", lambda p=p: os.symlink("/etc/passwd", p.with_name(p.name + ".lnk"))))
        decoy.unlink(missing_ok=True)
    fix()
    done = [r for r in results if not r.endswith(")")]
    summary = {"attempts": len(results), "refused": len(results) - len(done), "done": done}
    print(json.dumps({"type": "message", "role": "assistant", "text": json.dumps(summary)}))


def read(paths: list[str]) -> None:
    sys.stdin.read()
    results = [attempt(f"read {p}", lambda p=p: Path(p).read_bytes()) for p in paths]
    done = [r for r in results if not r.endswith(")")]
    fix()
    summary = {"attempts": len(results), "refused": len(results) - len(done), "done": done}
    print(json.dumps({"type": "message", "role": "assistant", "text": json.dumps(summary)}))


def daemon() -> None:
    sys.stdin.read()
    pidfile = Path(os.environ["HOME"], "daemon.pid")
    heartbeat = Path.cwd() / "heartbeat.txt"
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for fd in (0, 1, 2):
                os.close(fd)
            pidfile.write_text(str(os.getpid()))
            loop = f"while :; do date +%s%N >> {heartbeat}; sleep 0.05; done"
            os.execve("/bin/sh", ["sh", "-c", loop], {})
        os._exit(0)
    time.sleep(0.5)  # let the daemon start writing
    fix()
    print("Fixed add(); nothing else running, honest.")


def warm(sock_path: str, db: str, argv_json: str) -> None:
    import array
    import socket

    sys.stdin.read()
    outcome: dict[str, object] = {"open_store_rw": attempt("open the store for writing",
                                                           lambda: os.close(os.open(db, os.O_RDWR)))}
    Path("mine.txt").write_text("a file the worker may write\n")
    stand_ins = {"store read-only": lambda: os.open(db, os.O_RDONLY),
                 "own file read-write": lambda: os.open("mine.txt", os.O_RDWR)}
    replies = {}
    for name, opener in stand_ins.items():
        try:
            fd = opener()
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(sock_path)
            payload = json.dumps({"protocol": 2, "argv": json.loads(argv_json), "cwd": os.getcwd(),
                                  "env": dict(os.environ), "umask": 0o22, "streams": None, "home": "",
                                  "stamp": {}}).encode()
            conn.sendmsg([len(payload).to_bytes(4, "big")],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]).tobytes())])
            conn.sendall(payload)
            conn.settimeout(20)
            replies[name] = conn.makefile("rb").readline().decode()
            conn.close()
        except OSError as exc:
            replies[name] = f"refused ({exc.strerror})"
    outcome["replies"] = replies
    os.unlink("mine.txt")
    fix()
    print(json.dumps({"type": "message", "role": "assistant", "text": json.dumps(outcome)}))


if __name__ == "__main__":
    if sys.argv[1] == "warm":
        warm(*sys.argv[2:5])
    elif sys.argv[1] == "write":
        write(sys.argv[2:])
    elif sys.argv[1] == "read":
        read(sys.argv[2:])
    else:
        daemon()
