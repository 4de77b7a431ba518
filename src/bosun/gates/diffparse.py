"""A parser for git's unified diff (``git diff --binary``), for gates that judge lines.

Gates such as SECRET_DETECTED must look only at lines the worker *added*, with the line number in
the new file so a detail can say "config.py:12". :func:`parse_diff` turns the diff into one
:class:`FileDiff` per file: its paths, status, modes, whether it is binary, and its added and
removed lines.

What it handles, because real diffs contain it: extended headers (new/deleted file, old/new mode,
similarity, rename/copy from/to, index), "Binary files ... differ" and "GIT binary patch" bodies,
``\\ No newline at end of file`` markers, C-quoted paths ("a/n\\303\\253w.txt", with escaped quotes),
the TAB git appends to names containing a space, and CRLF content. Hunk bodies are read by the
counts in their ``@@`` headers, never by their look: a removed line "-- x" appears as "--- x" and
must not be taken for a file header. Paths are expected with git's default "a/" and "b/" prefixes;
bytes that are not UTF-8 are decoded with replacement characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


@dataclass
class FileDiff:
    """One file's part of a diff.

    ``path`` is the new path (the old one for a deletion); ``old_path`` is set for renames and copies.
    ``status`` is A, M, D, R or C. ``added`` holds (new-file line number, text) and ``removed`` holds
    (old-file line number, text), texts without their line ending. ``blocks`` groups them into runs of
    changed lines between context lines, (removed texts, added texts) each: a block with both is a
    replacement, so a gate can tell rewritten lines from deleted ones.
    """

    path: str
    old_path: str | None = None
    status: str = "M"
    old_mode: str | None = None
    new_mode: str | None = None
    binary: bool = False
    added: list[tuple[int, str]] = field(default_factory=list)
    removed: list[tuple[int, str]] = field(default_factory=list)
    blocks: list[tuple[list[str], list[str]]] = field(default_factory=list)


def parse_diff(diff: bytes | str) -> list[FileDiff]:
    """Parse a whole ``git diff`` into per-file records, in diff order."""
    data = diff.encode("utf-8", "surrogateescape") if isinstance(diff, str) else diff
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the diff's own final newline, not an empty line
    files: list[FileDiff] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith(b"diff --git "):
            record, i = _parse_file(lines, i)
            files.append(record)
        else:
            i += 1  # preamble or noise between files
    return files


def _parse_file(lines: list[bytes], i: int) -> tuple[FileDiff, int]:
    """Parse one file starting at its "diff --git" line; returns the record and the next index."""
    old_name, new_name = _split_git_line(lines[i][len(b"diff --git ") :])
    rec = FileDiff(path=new_name or old_name or "")
    rename_from = rename_to = minus = plus = None
    i += 1
    while i < len(lines) and not lines[i].startswith(b"diff --git "):
        line = lines[i]
        if line.startswith(b"@@ "):
            i = _parse_hunk(lines, i, rec)
            continue
        text = _text(line)
        if text.startswith("new file mode "):
            rec.status, rec.new_mode = "A", text.split()[-1]
        elif text.startswith("deleted file mode "):
            rec.status, rec.old_mode = "D", text.split()[-1]
        elif text.startswith("old mode "):
            rec.old_mode = text.split()[-1]
        elif text.startswith("new mode "):
            rec.new_mode = text.split()[-1]
        elif text.startswith(("rename from ", "copy from ")):
            rename_from = _unquote(text.split(" ", 2)[2])
            rec.status = "R" if text.startswith("rename") else "C"
        elif text.startswith(("rename to ", "copy to ")):
            rename_to = _unquote(text.split(" ", 2)[2])
        elif text.startswith("index "):
            _index_mode(text, rec)
        elif text.startswith("Binary files ") or text == "GIT binary patch":
            rec.binary = True
            i = _skip_binary(lines, i + 1) if text == "GIT binary patch" else i + 1
            continue
        elif text.startswith("--- "):
            minus = _header_path(text[4:], "a/")
        elif text.startswith("+++ "):
            plus = _header_path(text[4:], "b/")
        i += 1
    _settle_paths(rec, old_name, new_name, rename_from, rename_to, minus, plus)
    return rec, i


def _settle_paths(
    rec: FileDiff,
    old_name: str | None,
    new_name: str | None,
    rename_from: str | None,
    rename_to: str | None,
    minus: str | None,
    plus: str | None,
) -> None:
    # Explicit headers beat the "diff --git" line, whose unquoted names are ambiguous with spaces.
    old = rename_from or minus or old_name
    new = rename_to or plus or new_name
    if rec.status == "D":
        rec.path = old or new or ""
    else:
        rec.path = new or old or ""
    if rec.status in ("R", "C"):
        rec.old_path = old


def _index_mode(text: str, rec: FileDiff) -> None:
    # "index abc..def 100644": one mode for both sides when it did not change.
    parts = text.split()
    if len(parts) == 3:
        if rec.status != "A":
            rec.old_mode = rec.old_mode or parts[2]
        if rec.status != "D":
            rec.new_mode = rec.new_mode or parts[2]


def _parse_hunk(lines: list[bytes], i: int, rec: FileDiff) -> int:
    m = _HUNK.match(lines[i])
    if m is None:
        return i + 1  # a malformed header: skip it rather than misread what follows
    old_no, new_no = int(m.group(1)), int(m.group(3))
    old_left = int(m.group(2)) if m.group(2) is not None else 1
    new_left = int(m.group(4)) if m.group(4) is not None else 1
    i += 1
    block: tuple[list[str], list[str]] | None = None
    while i < len(lines) and (old_left > 0 or new_left > 0):
        line = lines[i]
        tag, body = line[:1], _text(line[1:]).rstrip("\r")
        if tag in (b"+", b"-"):
            if block is None:
                block = ([], [])
                rec.blocks.append(block)
            if tag == b"+":
                rec.added.append((new_no, body))
                block[1].append(body)
                new_no, new_left = new_no + 1, new_left - 1
            else:
                rec.removed.append((old_no, body))
                block[0].append(body)
                old_no, old_left = old_no + 1, old_left - 1
        elif tag == b" " or line == b"":  # some tools strip the space of an empty context line
            block = None
            old_no, new_no = old_no + 1, new_no + 1
            old_left, new_left = old_left - 1, new_left - 1
        elif tag != b"\\":  # "\ No newline at end of file" counts as no line
            break  # a truncated hunk: stop here, the caller resumes on this line
        i += 1
    while i < len(lines) and lines[i].startswith(b"\\"):
        i += 1  # the marker after a hunk's last line
    return i


def _skip_binary(lines: list[bytes], i: int) -> int:
    # A binary patch is "literal N"/"delta N" blocks of base85 lines, each block ended by a blank line.
    while i < len(lines) and not lines[i].startswith(b"diff --git "):
        i += 1
    return i


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _header_path(raw: str, prefix: str) -> str | None:
    """The path of a "---"/"+++" header, or None for /dev/null."""
    raw = raw.rstrip("\t")  # git appends a TAB when the name has a space
    if raw == "/dev/null":
        return None
    return _strip_prefix(_unquote(raw), prefix)


def _strip_prefix(path: str, prefix: str) -> str:
    return path[len(prefix) :] if path.startswith(prefix) else path


def _split_git_line(raw: bytes) -> tuple[str | None, str | None]:
    """The two names of a "diff --git a/X b/Y" line, best effort (headers that follow win)."""
    text = _text(raw)
    if text.startswith('"'):
        first, rest = _take_quoted(text)
        second = _unquote(rest.strip())
        return _strip_prefix(first, "a/"), _strip_prefix(second, "b/")
    if text.endswith('"'):
        start = text.rfind(' "')
        return _strip_prefix(text[:start], "a/"), _strip_prefix(_unquote(text[start + 1 :]), "b/")
    # Unquoted names may contain " b/": when both halves name the same path (every change but a
    # rename), the split in the middle is the right one.
    half = (len(text) - 1) // 2
    if len(text) % 2 == 1 and text[half] == " " and text[2:half] == text[half + 3 :]:
        return text[2:half], text[half + 3 :]
    first, sep, second = text.partition(" b/")
    if not sep:
        return _strip_prefix(text, "a/"), None
    return _strip_prefix(first, "a/"), second


def _take_quoted(text: str) -> tuple[str, str]:
    """Split a leading C-quoted string off ``text``: (unquoted value, the rest)."""
    j = 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == '"':
            return _unquote(text[: j + 1]), text[j + 1 :]
        j += 1
    return _unquote(text), ""


def _unquote(name: str) -> str:
    """Undo git's C-style quoting ("\\303\\251", "\\"", "\\t"); unquoted names pass through."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    body, out, k = name[1:-1], bytearray(), 0
    while k < len(body):
        ch = body[k]
        if ch != "\\" or k + 1 >= len(body):
            out += ch.encode("utf-8")
            k += 1
            continue
        nxt = body[k + 1]
        if nxt in "01234567" and re.fullmatch(r"[0-7]{3}", body[k + 1 : k + 4]):
            out.append(int(body[k + 1 : k + 4], 8) & 0xFF)
            k += 4
        else:
            out += bytes([_ESCAPES[nxt]]) if nxt in _ESCAPES else nxt.encode("utf-8")
            k += 2
    return out.decode("utf-8", "replace")
