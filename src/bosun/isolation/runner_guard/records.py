"""The runner guard's records, as bosun reads them from its channel: authenticated, then folded into
one summary per verify command (``entry["guard"]`` of the verification doc).

A record line is ``MAC DEPTH JSON``: a keyed BLAKE2b of a JSON object, under the key of the
process's depth (the command's key for a process the command started itself, a key derived from it
for each level below). A line that does not authenticate is counted, never read: the tree under test
may write to the channel, and what it writes there is evidence, not data.

The summary only ever grows with what the records say; nothing a later record says takes back an
earlier one, so a forged record can add noise but never hide a finding.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_BYTES = 16 * 1024 * 1024  # past this, the channel was flooded: nothing honest writes that much
MAX_LINE = 8 * 1024
MAX_LISTED = 40


def child_key(key: bytes) -> bytes:
    """The key a guarded process hands to the processes it starts (``guard_site.child_key``)."""
    return bytes.fromhex(hashlib.blake2b(key, digest_size=32, person=b"bosun-child").hexdigest())


@dataclass
class Fold:
    """What a channel has said so far (mutated as lines arrive, read once the command ended)."""

    keys: list[bytes]
    processes: dict[int, dict[str, Any]] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    modules: dict[str, str] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)
    plugins: list[dict[str, Any]] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)
    forged: int = 0
    overflow: bool = False
    size: int = 0
    _partial: bytes = b""

    def feed(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > MAX_BYTES:
            self.overflow = True
            self._partial = b""
            return
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > MAX_LINE:
            self.forged += 1
            self._partial = b""
        for line in lines:
            if line:
                self._line(line)

    def _line(self, line: bytes) -> None:
        mac, _, rest = line.partition(b" ")
        depth_text, _, body = rest.partition(b" ")
        depth = int(depth_text) if depth_text.isdigit() and len(depth_text) < 3 else -1
        if not 0 <= depth < 16 or len(line) > MAX_LINE or not self._authentic(mac, body, depth):
            self.forged += 1
            return
        record = _literal(body)  # authentic: written by bosun's own guard
        if not isinstance(record, dict) or record.get("d") != depth:
            self.forged += 1
            return
        self._take(record)

    def _authentic(self, mac: bytes, body: bytes, depth: int) -> bool:
        while len(self.keys) <= depth:
            self.keys.append(child_key(self.keys[-1]))
        expected = hashlib.blake2b(body, key=self.keys[depth], digest_size=16).hexdigest().encode()
        return hmac.compare_digest(expected, mac)

    def _take(self, record: dict[str, Any]) -> None:
        kind, pid = record.get("kind"), record.get("pid")
        proc = self.processes.setdefault(pid if isinstance(pid, int) else -1, {"pid": pid, "depth": record["d"]})
        if kind == "start":
            proc.update(argv=_strings(record.get("argv")), started=True)
        elif kind == "path":
            self.path += [p for p in _strings(record.get("entries")) if p not in self.path][:200]
        elif kind == "session":
            proc.update(session=True, worker=str(record.get("worker") or ""))
            self._plugins(record.get("plugins"))
        elif kind == "finish":
            proc["finish"] = {k: record.get(k) for k in ("exitstatus", "collected", "failed", "seen_failed")}
            self._plugins(record.get("plugins"))
        elif kind == "report":
            self.reports.append({"path": str(record.get("path")), "sha256": record.get("sha256"), "pid": pid})
        elif kind == "modules" and isinstance(record.get("modules"), dict):
            for name, rel in list(record["modules"].items())[:200]:
                self.modules.setdefault(str(name), str(rel))
        elif kind == "exit":
            proc["exited"] = True
        elif kind in ("event", "outcome", "integrity", "truncated"):
            finding = {k: v for k, v in record.items() if k not in ("d",)}
            if len(self.findings) < MAX_LISTED * 5:
                self.findings.append(finding)

    def _plugins(self, plugins: object) -> None:
        for plugin in plugins if isinstance(plugins, list) else []:
            if isinstance(plugin, dict) and plugin not in self.plugins and len(self.plugins) < MAX_LISTED:
                self.plugins.append(plugin)

    def summary(self, top_pid: int | None, exit_code: int | None, junit: Path | None) -> dict[str, Any]:
        """The command's ``runner`` entry: what ran under the guard and what it saw."""
        procs = []
        for pid, proc in sorted(self.processes.items(), key=lambda kv: kv[1].get("depth", 0)):
            procs.append({**proc, "top": pid == top_pid, "exited": bool(proc.get("exited"))})
        out: dict[str, Any] = {
            "processes": procs[:MAX_LISTED],
            "findings": self.findings[: MAX_LISTED * 5],
            "modules": dict(sorted(self.modules.items())[:200]),
            "path": self.path,
            "plugins": self.plugins,
            "exit_code": exit_code,
        }
        rewritten = _rewritten_reports(self.reports, junit)
        if rewritten:
            out["reports_rewritten"] = rewritten
        if self.forged:
            out["forged"] = self.forged
        if self.overflow:
            out["overflow"] = True
        return out


def _rewritten_reports(reports: list[dict[str, Any]], junit: Path | None) -> list[str]:
    """Reports pytest wrote whose bytes are not the ones bosun reads now."""
    out = []
    for report in reports:
        path = Path(report["path"])
        if junit is not None and path != junit:
            continue
        try:
            now = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            now = None
        if report.get("sha256") and now != report["sha256"]:
            out.append(str(path.name))
    return out


def _literal(body: bytes) -> Any:
    # JSON, not ``ast.literal_eval``: this runs in the reader's thread while gates parse Python in
    # another, and CPython 3.11's AST conversion keeps its recursion count in shared state.
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _strings(value: object) -> list[str]:
    return [str(v)[:300] for v in value][:60] if isinstance(value, list) else []
