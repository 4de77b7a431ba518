"""Talking to a started child without ever blocking it: a buffer that keeps the head and tail of a
stream, the thread that reads one pipe into it (optionally line by line), what writes its stdin, and
the watch that wakes the moment it exits.

Apart from ``proc.py`` because none of them starts a process: they are what ``run_supervised``
speaks to a child with, and a buffer is plain data.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 192 * 1024
MAX_LINE_BYTES = 8 * 1024 * 1024


class BoundedBuffer:
    """Keeps the first ``head`` bytes and the last ``tail`` bytes of a stream."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self.total = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail.append(data)
        self._tail_len += len(data)
        while self._tail_len - len(self._tail[0]) >= self._tail_limit:
            self._tail_len -= len(self._tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head) + self._tail_len

    def head_text(self) -> str:
        return bytes(self._head).decode("utf-8", "replace")

    def tail_text(self, limit: int | None = None) -> str:
        data = b"".join(self._tail)
        if not data and not self.truncated:
            data = bytes(self._head)
        limit = self._tail_limit if limit is None else limit
        return data[-limit:].decode("utf-8", "replace")

    def text(self) -> str:
        """Head and tail joined with a marker when the middle was dropped."""
        tail = b"".join(self._tail)
        if self.truncated:
            dropped = self.total - len(self._head) - len(tail)
            return (
                bytes(self._head).decode("utf-8", "replace")
                + f"\n[... {dropped} bytes omitted ...]\n"
                + tail.decode("utf-8", "replace")
            )
        return (bytes(self._head) + tail).decode("utf-8", "replace")


class PipeReader(threading.Thread):
    """Drains one pipe so the child never blocks; optionally splits stdout into lines."""

    def __init__(
        self,
        fd: int,
        buf: BoundedBuffer,
        on_line: Callable[[str], None] | None,
        activity: list[float],
    ) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.buf = buf
        self.on_line = on_line
        self.activity = activity
        self.partial = bytearray()

    def run(self) -> None:
        try:
            while True:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                self.activity[0] = time.monotonic()
                self.buf.write(chunk)
                if self.on_line is not None:
                    self._feed(chunk)
        finally:
            if self.on_line is not None and self.partial:
                self._emit(bytes(self.partial))
                self.partial.clear()

    def _feed(self, chunk: bytes) -> None:
        self.partial += chunk
        while True:
            nl = self.partial.find(b"\n")
            if nl < 0:
                break
            line = bytes(self.partial[:nl])
            del self.partial[: nl + 1]
            self._emit(line)
        if len(self.partial) > MAX_LINE_BYTES:
            # A runaway line: hand over what we have rather than growing without bound.
            self._emit(bytes(self.partial))
            self.partial.clear()

    def _emit(self, line: bytes) -> None:
        assert self.on_line is not None
        try:
            self.on_line(line.decode("utf-8", "replace").rstrip("\r"))
        except Exception:  # noqa: BLE001 - a parser bug must not stop draining the pipe
            import logging

            logging.getLogger("bosun.proc").exception("line callback failed")


class ExitWatch:
    """Waits for a child's exit and wakes the moment it happens.

    ``Popen.wait(timeout)`` polls with sleeps of up to 50 ms, so every supervised step ended up to
    50 ms after its process did. On Linux a pidfd becomes readable when the process exits: waiting
    on it blocks without polling. Elsewhere (or when the kernel has no pidfd) it falls back to
    ``Popen.wait``.
    """

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self._poll: select.poll | None = None
        self._fd: int | None = None
        try:
            self._fd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            return  # no pidfd here; or the child is already gone (the wait below reaps it)
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN)

    def wait(self, timeout: float) -> bool:
        """True once the child has exited (and is reaped), False after ``timeout`` seconds."""
        if self._poll is None:
            try:
                self.proc.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        if not self._poll.poll(max(0, int(timeout * 1000))):
            return self.proc.poll() is not None
        self.proc.wait()
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def feed_stdin(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
