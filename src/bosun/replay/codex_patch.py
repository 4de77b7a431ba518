"""Patches in Codex's ``apply_patch`` format ("*** Begin Patch" ... "*** End Patch").

Codex matches the ``-`` lines of a hunk against whole lines of the file, so a script's ``old`` that is
only part of a line is widened to whole lines when the file can be read (``root`` known).
"""

from __future__ import annotations

from pathlib import Path


def edit_patch(rel_path: str, old: str, new: str, file_text: str | None = None) -> str:
    if old.endswith("\n") and new.endswith("\n"):
        old, new = old[:-1], new[:-1]
    if file_text is not None:
        old, new = _widen_to_lines(file_text, old, new)
    body = _minus(old) + _plus(new)
    return _wrap(f"*** Update File: {rel_path}\n@@\n{body}")


def write_patch(rel_path: str, content: str, existing: str | None = None) -> str:
    """Add the file, or replace its whole content when it already exists."""
    if existing is None:
        return _wrap(f"*** Add File: {rel_path}\n{_plus(content.removesuffix(chr(10)))}")
    old = existing.removesuffix("\n")
    return _wrap(f"*** Update File: {rel_path}\n@@\n{_minus(old)}{_plus(content.removesuffix(chr(10)))}")


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _widen_to_lines(text: str, old: str, new: str) -> tuple[str, str]:
    idx = text.find(old) if old else -1
    if idx < 0:
        return old, new
    start = text.rfind("\n", 0, idx) + 1
    end = text.find("\n", idx + len(old))
    end = len(text) if end < 0 else end
    prefix, suffix = text[start:idx], text[idx + len(old) : end]
    return prefix + old + suffix, prefix + new + suffix


def _minus(text: str) -> str:
    return "".join(f"-{line}\n" for line in text.split("\n"))


def _plus(text: str) -> str:
    # An empty replacement deletes the lines: no "+" line at all.
    return "".join(f"+{line}\n" for line in text.split("\n")) if text else ""


def _wrap(body: str) -> str:
    return f"*** Begin Patch\n{body}*** End Patch"
