"""Many blobs through one git process: ``git cat-file --batch``, started on the first read.

Gates and reports read the old and new bytes of every changed file. One ``git show`` or ``cat-file
blob`` per file is a process each (2-4 ms apiece, three per changed file); one batch process serves
them all, and reads only what is asked for (a gate that never looks at a large file never loads it).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from bosun import proc

_TYPES = frozenset({b"blob", b"tree", b"commit", b"tag"})
_HEX = frozenset(b"0123456789abcdef")


class BlobReader:
    """``read(rev, path)``: the bytes of ``path`` in ``rev`` (a commit or a tree), or None when it is
    absent or not a file (a directory, a gitlink); ``read_object`` takes any name of a blob. Use it
    as a context manager: the process ends with the block."""

    def __init__(self, cwd: Path, env: Mapping[str, str]) -> None:
        self._cwd = cwd
        self._env = dict(env)
        self._proc: subprocess.Popen[bytes] | None = None

    def read(self, rev: str, path: str) -> bytes | None:
        return self.read_object(f"{rev}:{path}")

    def read_object(self, spec: str) -> bytes | None:
        """The blob that ``spec`` names (an object id, ``<rev>:<path>``), or None."""
        if "\n" in spec:  # the batch protocol is one name per line: such a name is read on its own
            return self._read_alone(spec)
        batch = self._batch()
        assert batch.stdin is not None and batch.stdout is not None
        try:
            batch.stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
            batch.stdin.flush()
            header = batch.stdout.readline()
        except OSError:
            header = b""
        if not header:  # the process is gone: the next read starts another
            self.close()
            return self._read_alone(spec)
        parts = header.rstrip(b"\n").split(b" ")
        found = len(parts) == 3 and parts[1] in _TYPES and parts[2].isdigit() and set(parts[0]) <= _HEX
        if not found:  # "<name> missing" or "<name> ambiguous": nothing follows
            return None
        try:
            data = _read_exactly(batch.stdout, int(parts[2]))
            _read_exactly(batch.stdout, 1)  # the newline after the contents
        except OSError:  # cut off mid-object: this one is read on its own, the next read starts afresh
            self.close()
            return self._read_alone(spec)
        return data if parts[1] == b"blob" else None

    def _batch(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            self._proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self._cwd, env=self._env,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return self._proc

    def _read_alone(self, spec: str) -> bytes | None:
        res = proc.run_quick(["git", "cat-file", "blob", spec], cwd=self._cwd, env=self._env, text=False)
        return res.stdout if res.returncode == 0 else None  # type: ignore[return-value]

    def close(self) -> None:
        batch, self._proc = self._proc, None
        if batch is None:
            return
        try:
            assert batch.stdin is not None
            batch.stdin.close()
        except OSError:
            pass
        try:
            batch.wait(timeout=proc.QUICK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            batch.kill()
            batch.wait()
        if batch.stdout is not None:
            batch.stdout.close()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _read_exactly(stream: object, size: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = stream.read(size)  # type: ignore[attr-defined]
        if not chunk:
            raise OSError("git cat-file --batch ended in the middle of an object")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
