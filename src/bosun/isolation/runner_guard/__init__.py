"""The runner guard: what the code under test did to the test runner, seen from outside its process.

Invariant: **only the behaviour of the code under test may change; nothing it does may alter how the
verify command loads, collects, runs or reports tests without bosun being told, at the moment it
happens, through a channel the code cannot take back.** In-process code can forge anything it shares
a process with, so the guard does not ask the process whether it behaved: it installs an audit hook
before the tree's first line runs (hooks cannot be removed), and the hook writes what it sees to a
FIFO bosun reads.

For each verify command, :func:`open_guard` makes:

* a directory beside the verification's HOME (outside the tree, and outside what the sandbox lets
  the command write) holding the guard as ``sitecustomize.py`` and its pytest plugin as
  ``bosun_runner_guard.py``, copied from ``payload/``; it goes first on ``PYTHONPATH``, so the
  environment's own ``sitecustomize`` still runs after it and one from the tree never does;
* a FIFO in the HOME and a fresh key; the command's environment names both
  (``BOSUN_RUNNER_GUARD``). A thread reads the FIFO while the command runs, and
  :meth:`Guard.close` folds what was read (:mod:`.records`) into the command's ``runner`` entry.

What the records mean for a change is judged by the RUNNER_TAMPERED gate (``gates/runner_tamper.py``),
which knows the change; this package only observes.
"""

from __future__ import annotations

import marshal
import os
import secrets
import select
import shutil
import stat
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from bosun.isolation.runner_guard.records import Fold

ENV = "BOSUN_RUNNER_GUARD"
PLUGIN_MODULE = "bosun_runner_guard"
PAYLOAD = Path(__file__).resolve().parent / "payload"
_FILES = {"guard_site.py": "sitecustomize.py", "guard_plugin.py": f"{PLUGIN_MODULE}.py",
          "guard_integrity.py": f"{PLUGIN_MODULE}_integrity.py"}
_POLL_MS = 100


class Guard:
    """One verify command's guard: its directory, its channel and the thread that reads it."""

    def __init__(self, home: Path, roots: list[Path], index: int) -> None:
        self.key = secrets.token_bytes(32)
        self.dir = home.parent / f".{home.name}-guard-{index}-{secrets.token_hex(4)}"
        self.dir.mkdir(mode=0o755)
        (self.dir / "__pycache__").mkdir()
        for name, (source, compiled) in _payload().items():
            (self.dir / name).write_bytes(source)
            (self.dir / "__pycache__" / f"{name[:-3]}.{sys.implementation.cache_tag}.pyc").write_bytes(compiled)
        for path in (*self.dir.iterdir(), *(self.dir / "__pycache__").iterdir()):
            if path.is_file():
                path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        self.fifo = home / f".runner-guard-{index}.fifo"
        self.fifo.unlink(missing_ok=True)
        os.mkfifo(self.fifo, 0o600)
        # Bosun holds both ends: the read end to drain, a write end so the FIFO never reports EOF or
        # HUP between the command's processes (and a guarded process's open never fails for want of
        # a reader).
        self._read = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        self._hold = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        self.roots = sorted({str(r) for root in roots for r in (root, Path(os.path.realpath(root)))})
        self.fold = Fold([self.key])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="bosun-runner-guard", daemon=True)
        self._thread.start()

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with the guard first on ``PYTHONPATH`` and its channel named."""
        plugin = str(self.dir / f"{PLUGIN_MODULE}.py")
        spec = "|".join((str(self.fifo), "0", self.key.hex(), ":".join(self.roots), plugin))
        path = env.get("PYTHONPATH", "")
        return {**env, "PYTHONPATH": str(self.dir) + (os.pathsep + path if path else ""), ENV: spec}

    def confined(self, confine: Any) -> Any:
        """``confine`` (a ``bosun.sandbox.Confinement``, or None) with the guard's directory readable:
        it lives beside the HOME, where a sandbox that hides bosun's state would hide it too, and a
        guard the command cannot load guards nothing. Readable only: never among what it may write."""
        if confine is None:
            return None
        from dataclasses import replace

        return replace(confine, readable=(*confine.readable, self.dir))

    def _drain(self) -> None:
        poller = select.poll()
        poller.register(self._read, select.POLLIN)
        while not self._stop.is_set():
            if poller.poll(_POLL_MS):
                self._read_available()

    def _read_available(self) -> None:
        while True:
            try:
                data = os.read(self._read, 65536)
            except BlockingIOError:
                return
            except OSError:
                return
            if not data:
                return
            self.fold.feed(data)

    def close(self, top_pid: int | None, exit_code: int | None, junit: Path | None) -> dict[str, Any]:
        """Stop reading (the command and everything it started have ended), remove the guard's files
        and return the command's ``guard`` entry."""
        self._stop.set()
        os.write(self._hold, b"\n")  # wakes the reader now rather than at its next poll (an empty line is no record)
        self._thread.join(timeout=2.0)
        self._read_available()
        for fd in (self._read, self._hold):
            os.close(fd)
        self.fifo.unlink(missing_ok=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        summary = self.fold.summary(top_pid, exit_code, junit)
        summary["path"], summary["tree_path"] = self._split_path(summary["path"])
        return summary

    def _split_path(self, entries: list[str]) -> tuple[list[str], list[str]]:
        """``sys.path`` entries outside the tree (the environment) and inside it (repo-relative)."""
        outside: list[str] = []
        inside: list[str] = []
        for entry in entries:
            if entry == str(self.dir):
                continue
            if any(part in entry for part in ("site-packages", "dist-packages", "/lib/python")):
                outside.append(entry)  # an environment linked into the tree by set-up is still the environment
                continue
            rel = next((entry[len(r):].strip("/") for r in self.roots if entry == r or entry.startswith(r + "/")), None)
            (outside if rel is None else inside).append(entry if rel is None else rel)
        return outside, list(dict.fromkeys(inside))


@lru_cache(maxsize=1)
def _payload() -> dict[str, tuple[bytes, bytes]]:
    """The guard's files as written into each guard directory: the source and its bytecode.

    Verify commands run with ``PYTHONDONTWRITEBYTECODE``, so without the bytecode every Python process
    would compile the guard again (about 4 ms). The bytecode is an unchecked-hash ``.pyc`` for bosun's
    own interpreter: an interpreter of that version loads it without looking at the source; any
    other version compiles the source, as it would anyway."""
    import importlib.util

    out = {}
    for source_name, name in _FILES.items():
        source = (PAYLOAD / source_name).read_bytes()
        code = compile(source, name, "exec", dont_inherit=True)
        data = bytearray(importlib.util.MAGIC_NUMBER)
        data += (0b01).to_bytes(4, "little")  # hash-based, unchecked
        data += importlib.util.source_hash(source)
        data += marshal.dumps(code)
        out[name] = (source, bytes(data))
    return out


def open_guard(home: Path, worktree: Path, index: int) -> Guard:
    """The guard for verify command ``index`` run in ``worktree`` with ``home`` as its HOME."""
    return Guard(home, [worktree], index)
