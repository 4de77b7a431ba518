"""OpenCode's provider-error watch: its silent retries, seen in its log files, stopped in seconds.

OpenCode and Kilo retry rate limits and server errors themselves, with backoff, up to five times (over
a minute without a Retry-After header) and print nothing while they wait. The retries show only in the
log files (``$HOME/.local/share/<cli>/log``); ``LogWatch`` tails them and trips once the provider has
refused the CLI ``PROVIDER_ERRORS_BEFORE_STOP`` times, and ``finish_after_watch`` turns the stop into
a classified failure, so the fallback chain moves on.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from pathlib import Path

from bosun.workers.base import FALLBACK_CLASSES, ErrorClass, WorkerContext, WorkerResult, ev_error
from bosun.workers.classify import classify_text, parse_retry_after

PROVIDER_ERRORS_BEFORE_STOP = 3


_STREAM_ERROR_RE = re.compile(r'message="?stream error"?.*?error\.error="((?:[^"\\]|\\.)*)"')
_TIMESTAMP_RE = re.compile(r"^timestamp=(\S+)")


class LogWatch:
    """Tails OpenCode's log files for provider errors it is retrying silently.

    ``check()`` is cheap enough to poll from ``should_stop`` (it reads at most every ``interval_s``).
    ``errors`` holds the error texts logged since ``since`` (unix time; default: now); ``tripped`` says
    the worker should be stopped. OpenCode starts a fresh log file on every run, so files are followed
    by inode and re-read from the start when they are replaced or shrink.
    """

    def __init__(
        self,
        log_dir: Path,
        limit: int = PROVIDER_ERRORS_BEFORE_STOP,
        interval_s: float = 0.25,
        since: float | None = None,
    ) -> None:
        self.log_dir = log_dir
        self.limit = limit
        self.interval_s = interval_s
        self.since = time.time() - 1.0 if since is None else since
        self.errors: list[str] = []
        self.pos: dict[Path, tuple[int, int]] = {}  # path -> (inode, offset read up to)
        self.partial: dict[Path, str] = {}
        self._last = 0.0
        self.tripped = False

    def _files(self) -> list[Path]:
        try:
            return sorted(self.log_dir.glob("*.log"))
        except OSError:
            return []

    def check(self, force: bool = False) -> bool:
        now = time.monotonic()
        if self.tripped or (not force and now - self._last < self.interval_s):
            return self.tripped
        self._last = now
        for path in self._files():
            try:
                st = path.stat()
                inode, start = self.pos.get(path, (st.st_ino, 0))
                if inode != st.st_ino or st.st_size < start:
                    start = 0
                    self.partial.pop(path, None)
                if st.st_size <= start:
                    self.pos[path] = (st.st_ino, start)
                    continue
                with path.open("rb") as fh:
                    fh.seek(start)
                    chunk = fh.read(min(st.st_size - start, 1 << 20))
            except OSError:
                continue
            self.pos[path] = (st.st_ino, start + len(chunk))
            text = self.partial.pop(path, "") + chunk.decode("utf-8", "replace")
            lines = text.split("\n")
            if not text.endswith("\n"):
                self.partial[path] = lines.pop()
            for ln in lines:
                self._line(ln)
        if len(self.errors) >= self.limit:
            cls = classify_text(self.errors[-1]) or ErrorClass.transient
            # Only provider trouble another profile might not have; auth and bad requests end on their own.
            self.tripped = cls in FALLBACK_CLASSES
        return self.tripped

    def _line(self, line: str) -> None:
        m = _STREAM_ERROR_RE.search(line)
        if not m:
            return
        ts = _TIMESTAMP_RE.match(line)
        if ts:
            try:
                if datetime.fromisoformat(ts.group(1).replace("Z", "+00:00")).timestamp() < self.since:
                    return  # an earlier run's line
            except ValueError:
                pass
        self.errors.append(m.group(1).replace('\\"', '"'))


def log_dir(env: dict[str, str], cli: str = "opencode") -> Path:
    """Where the CLI writes its log files, under the run's HOME."""
    data = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")) / ".local" / "share")
    return Path(data) / cli / "log"


def finish_after_watch(ctx: WorkerContext, result: WorkerResult, watch: LogWatch, cli: str = "OpenCode") -> WorkerResult:
    """Turn a stop by the log watch (reported as "cancelled" by run_cli) into a classified failure."""
    if not watch.tripped or result.status != "cancelled":
        return result
    last = watch.errors[-1]
    cls = classify_text(last) or ErrorClass.transient
    result.status = "failed"
    result.error_class = cls
    result.error_message = (
        f"provider error ({cls.value}), {len(watch.errors)} times; bosun stopped {cli} instead of waiting "
        f"for more retries: {last}"
    )[:1000]
    result.retry_after_s = parse_retry_after(last)
    ctx.emit(ev_error(result.error_message, cls, retryable=True, retry_after_s=result.retry_after_s))
    return result
