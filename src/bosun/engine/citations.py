"""Checking the ``path:line`` citations in a worker's answer against a tree.

A parent delegates reading so that it does not have to read; an answer is only worth that when what it
cites is there. Every ``path:line``, ``path:start-end`` and ``path#L12-L20`` in the text is resolved the
way a careful reader would:

- an exact repository path first; then a bare file name (``calc.py``) or a trailing part of a path
  (``engine/x.py``) when exactly one file in the tree matches it;
- ``Class.method:12`` is a symbol, not a file: it is backed when the name occurs in the tree;
- the line (or every line of the range) must exist in the file;
- where the answer quotes code for a citation (an inline code span right after it, or a fenced block
  on the lines that follow), every quoted line must occur in the cited lines (whitespace-insensitive).

The tree is either a commit's tree read through git (the run's start tree: what explore and review
answers talk about) or a directory on disk (the worktree a self-review turn reads).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bosun.core.quoting import quoted

# path:12, path:12-20, path:12:5 (a column), path#L12, path#L12-L20
_CITE_RE = re.compile(
    r"(?<![\w./:@\-])(?P<target>[A-Za-z0-9_./\-]*[A-Za-z_][A-Za-z0-9_./\-]*)"
    r"(?::(?P<line>\d+)(?:\s?[-–]\s?(?P<end>\d+))?(?::\d+)?|#L(?P<lline>\d+)(?:-L?(?P<lend>\d+))?)"
    r"(?![\w/])"
)
_BARE_RE = re.compile(r"^(?P<target>[^:\s]+):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_SYMBOL_RE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_INLINE_CODE_RE = re.compile(r"`([^`\n]+)`")
# File name endings a symbol's last part never is: `calc.py:3` is a file, `Calc.add:3` a symbol.
COMMON_EXTENSIONS = frozenset(
    "py pyi js mjs cjs ts tsx jsx go rs java kt kts scala c h cc cpp hpp cs rb php swift m mm sh bash zsh "
    "md rst txt toml yaml yml json jsonl ini cfg conf xml html htm css scss sql proto gradle lock mk "
    "vue svelte lua pl r jl ex exs erl hs ml dart tf".split()
)
MAX_REPORTED = 20


class Tree(Protocol):
    """What the checker needs from a tree: its file paths and one file's lines."""

    def files(self) -> list[str]: ...

    def lines(self, path: str) -> list[str] | None: ...

    def has_word(self, word: str) -> bool: ...


class GitTree:
    """A commit's (or tree's) files, read with git: no checkout, nothing on disk involved."""

    def __init__(self, repo: Path | str, treeish: str) -> None:
        self.repo, self.treeish = repo, treeish
        self._files: list[str] | None = None

    def files(self) -> list[str]:
        from bosun.isolation.git import git

        if self._files is None:
            out = git(["ls-tree", "-r", "-z", "--name-only", self.treeish], self.repo).stdout
            self._files = [p for p in str(out).split("\0") if p]
        return self._files

    def lines(self, path: str) -> list[str] | None:
        from bosun.isolation.git import git

        res = git(["cat-file", "blob", f"{self.treeish}:{path}"], self.repo, check=False, text=False)
        data = res.stdout if isinstance(res.stdout, bytes) else str(res.stdout).encode()
        return _text_lines(data) if res.returncode == 0 else None

    def has_word(self, word: str) -> bool:
        from bosun.isolation.git import git

        res = git(["grep", "-q", "-w", "-F", "-e", word, self.treeish, "--"], self.repo, check=False)
        return res.returncode == 0


class DirTree:
    """The files of a directory on disk (``.git`` left out; nothing outside it is read)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._files: list[str] | None = None

    def files(self) -> list[str]:
        if self._files is None:
            found = []
            for p in self.root.rglob("*"):
                rel = p.relative_to(self.root)
                if ".git" in rel.parts or p.is_symlink() or not p.is_file():
                    continue
                found.append(rel.as_posix())
            self._files = sorted(found)
        return self._files

    def lines(self, path: str) -> list[str] | None:
        target = (self.root / path).resolve()
        if self.root not in target.parents or not target.is_file():
            return None
        try:
            return _text_lines(target.read_bytes())
        except OSError:
            return None

    def has_word(self, word: str) -> bool:
        rx = re.compile(r"\b" + re.escape(word) + r"\b")
        return any(rx.search("\n".join(self.lines(f) or [])) for f in self.files())


def _text_lines(data: bytes) -> list[str] | None:
    if b"\0" in data[:8192]:
        return None  # binary: no lines to cite
    return data.decode("utf-8", "replace").splitlines()


@dataclass(frozen=True)
class Citation:
    text: str  # as the answer wrote it
    target: str  # the path, file name or symbol
    start: int
    end: int
    quote: tuple[str, ...] = ()  # code the answer quotes for it, one entry per line


def extract(answer: str) -> list[Citation]:
    """Every citation in ``answer``, once each, in order, with the code quoted for it."""
    found: dict[tuple[str, tuple[str, ...]], Citation] = {}
    lines = answer.splitlines()
    in_fence = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        matches = [m for m in _CITE_RE.finditer(line) if _plausible(m.group("target"))]
        for m in matches:
            start = int(m.group("line") or m.group("lline"))
            end = int(m.group("end") or m.group("lend") or start)
            quote = _inline_quote(line, m.end())
            if not quote and len(matches) == 1:
                quote = _fenced_quote(lines, i + 1)
            cite = Citation(m.group(0), m.group("target"), start, end, quote)
            found.setdefault((cite.text, cite.quote), cite)
    return list(found.values())


def _plausible(target: str) -> bool:
    """A citation target names a path or a dotted symbol; ``localhost:80`` and ``12:30`` do not."""
    return ("." in target or "/" in target) and not target.endswith((".", "/"))


def _inline_quote(line: str, pos: int) -> tuple[str, ...]:
    """An inline code span right after the citation (`` `path:2`: `return x` ``) is a quote of it."""
    rest = line[pos:]
    rest = rest[1:] if rest.startswith("`") else rest  # the citation's own closing backtick
    m = re.match(r"\s*[:—–\-=(,]?\s*`([^`\n]+)`", rest)
    if not m or not m.group(1).strip() or _CITE_RE.search(m.group(1)):
        return ()
    return (m.group(1),)


def _fenced_quote(lines: list[str], i: int) -> tuple[str, ...]:
    """A fenced block starting on the next non-blank line is the code quoted for the citation."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not lines[i].lstrip().startswith("```"):
        return ()
    body: list[str] = []
    for line in lines[i + 1 :]:
        if line.lstrip().startswith("```"):
            return tuple(body)
        body.append(line)
    return ()  # an unclosed fence quotes nothing


def _norm(text: str) -> str:
    return " ".join(text.split())


@dataclass
class CheckedCitation:
    cite: str
    ok: bool
    resolved: str | None = None  # the repository path (or "symbol NAME") it was resolved to
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cite": self.cite}
        if self.resolved and self.resolved != self.cite.split(":")[0].split("#")[0]:
            out["resolved"] = self.resolved
        if self.problem:
            out["problem"] = self.problem
        return out


class Checker:
    """Resolves and checks citations against one tree (its file list is read once)."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self._by_name: dict[str, list[str]] | None = None

    def _names(self) -> dict[str, list[str]]:
        if self._by_name is None:
            self._by_name = {}
            for path in self.tree.files():
                self._by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
        return self._by_name

    def _extensions(self) -> set[str]:
        return {n.rsplit(".", 1)[-1].lower() for n in self._names() if "." in n} | set(COMMON_EXTENSIONS)

    def resolve(self, target: str) -> tuple[str | None, str | None]:
        """(path, None) when ``target`` names exactly one file; (None, problem) otherwise."""
        path = target.removeprefix("./")
        files = self.tree.files()
        if path in set(files):
            return path, None
        if "/" not in path:
            candidates = self._names().get(path, [])
        else:
            tail = "/" + path.lstrip("/")
            candidates = [f for f in files if f.endswith(tail)]
        if len(candidates) == 1:
            return candidates[0], None
        if len(candidates) > 1:
            listed = ", ".join(quoted(c) for c in candidates[:3]) + (", ..." if len(candidates) > 3 else "")
            return None, f"{quoted(target)} is ambiguous: {len(candidates)} files match ({listed})"
        return None, f"{quoted(target)} does not exist"

    def is_symbol(self, target: str) -> bool:
        return bool(_SYMBOL_RE.match(target)) and target.rsplit(".", 1)[-1].lower() not in self._extensions()

    def check(self, cite: Citation) -> CheckedCitation:
        path, problem = self.resolve(cite.target)
        if path is None:
            if self.is_symbol(cite.target):
                name = cite.target.rsplit(".", 1)[-1]
                if self.tree.has_word(name):
                    return CheckedCitation(cite.text, True, resolved=f"symbol {cite.target}")
                return CheckedCitation(cite.text, False,
                                       problem=f"symbol {quoted(cite.target)}: {quoted(name)} occurs nowhere in the tree")
            return CheckedCitation(cite.text, False, problem=problem)
        lines = self.tree.lines(path)
        if lines is None:
            return CheckedCitation(cite.text, False, path, f"{quoted(path)} is binary; it has no lines to cite")
        if cite.end < cite.start or not (1 <= cite.start and cite.end <= len(lines)):
            span = f"{cite.start}" if cite.start == cite.end else f"{cite.start}-{cite.end}"
            return CheckedCitation(cite.text, False, path, f"{quoted(path)}:{span} is out of range ({len(lines)} lines)")
        if cite.quote:
            cited = _norm(" ".join(lines[cite.start - 1 : cite.end]))
            for q in cite.quote:
                nq = _norm(q)
                if nq and nq not in ("...", "…", "# ...", "// ...") and nq not in cited:
                    return CheckedCitation(cite.text, False, path, f"the code quoted for {quoted(cite.text)} is not on "
                                           f"those lines: {quoted(q.strip(), 80)}")
        return CheckedCitation(cite.text, True, path)

    def check_text(self, cite_text: str) -> str | None:
        """None when a bare ``path:line`` string (a self-review evidence entry) is backed, else the problem."""
        text = str(cite_text).strip()
        m = _BARE_RE.match(text)
        cites = [Citation(text, m.group("target"), int(m.group("start")), int(m.group("end") or m.group("start")))] if m else extract(text)
        if not cites:
            return f"{quoted(cite_text)} is not path:line"
        checked = self.check(cites[0])
        return None if checked.ok else checked.problem


def check_answer(tree: Tree, answer: str | None) -> dict[str, Any]:
    """``{checked, valid, invalid: [{cite, problem}], backed: [cite, ...]}`` for one answer."""
    checker = Checker(tree)
    results = [checker.check(c) for c in extract(answer or "")]
    invalid = [r for r in results if not r.ok]
    return {
        "checked": len(results),
        "valid": len(results) - len(invalid),
        "invalid": [r.to_dict() for r in invalid[:MAX_REPORTED]],
        "backed": [r.to_dict() for r in results if r.ok][:MAX_REPORTED],
    }


def answer_verified(citations: dict[str, Any] | None) -> bool | None:
    """True when the answer cites and every citation is backed; False when any is not; None when it
    cites nothing (nothing could be checked, which is not the same as checked and backed)."""
    if not citations or not citations.get("checked"):
        return None
    return not citations.get("invalid")
