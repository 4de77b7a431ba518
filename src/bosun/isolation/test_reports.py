"""What a verify command's test runner said about each test, read from the runner's own report.

Invariant: **a test's outcome, and the files tests ran from, are what the runner reported for this
run, never what a file is named.** Three sources, one shape:

* pytest: the JUnit XML bosun asks every pytest process for (``--junitxml`` into the verification's
  own HOME, ``-o junit_family=xunit1`` so each ``<testcase>`` names its ``file``); a command's own
  ``--junitxml PATH`` is read instead when it overrides bosun's;
* a verify entry's ``junit: PATH`` (other runners);
* ``python -m unittest``: its summary (``Ran N tests`` and ``OK``/``FAILED (...)``), each test when
  it prints them (``-v``), and the files it discovers, read as its discovery reads them.

A report file inside the tree is removed before the command runs, so a report the worker planted is
never read as the command's. The shape, stored as a command entry's ``tests``::

    {"source": "junit" | "unittest", "count": N, "ids": true | false,
     "passed": [id], "failed": [id], "skipped": [id],        # skipped includes xfailed
     "files": [path], "collect_errors": [path], "messages": {id: "first line of the failure"},
     "counts": {"passed": n, "failed": n, "skipped": n}}

A test id is ``path::Class::test[params]`` with ``path`` relative to the repository (pytest's node id
from the repository root), or the runner's own ``classname::name`` when the file cannot be found.
``files`` are the repository files tests ran from (the collecting module and, for an inherited
test, the one defining it); doctest items do not make their module a test file. ``ids`` is false
when the runner gave counts only (unittest without ``-v``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MAX_TEST_IDS = 5000
MAX_MESSAGES = 300
MAX_FILES = 2000
_COLLECTION_FAILURE = "collection failure"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def report_path(argv: list[str]) -> str | None:
    """The report a pytest argv writes itself (``--junitxml PATH`` / ``--junit-xml=PATH``), or None."""
    for i, word in enumerate(argv):
        for flag in ("--junitxml", "--junit-xml"):
            if word == flag and i + 1 < len(argv):
                return argv[i + 1]
            if word.startswith(flag + "="):
                return word.split("=", 1)[1]
    return None


def clear_report(path: Path, worktree: Path) -> None:
    """Remove a report file inside the tree before the command runs: only what it writes is read."""
    if path.is_symlink() or (path.exists() and _inside(path, worktree)):
        path.unlink(missing_ok=True)


def read_junit(path: Path, worktree: Path | None = None, cwd: Path | None = None) -> dict[str, Any] | None:
    """The report of a JUnit XML file, or None when there is none (or it does not parse).

    ``worktree`` and ``cwd`` let a testcase's file (relative to pytest's rootdir, an ancestor of the
    command's directory) be named relative to the repository."""
    import xml.etree.ElementTree as ET

    try:
        if path.is_symlink():
            return None  # a link is not a report the runner wrote
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    resolver = _Resolver(worktree, cwd)
    out = _empty("junit")
    for case in root.iter("testcase"):
        _add_case(out, case, resolver)
    return _finish(out)


def _empty(source: str) -> dict[str, Any]:
    return {"source": source, "count": 0, "ids": True, "passed": [], "failed": [], "skipped": [],
            "files": [], "collect_errors": [], "messages": {}}


def _finish(out: dict[str, Any]) -> dict[str, Any]:
    # An id reported twice (a test that passed and then failed in teardown) keeps its worst outcome.
    failed = set(out["failed"])
    skipped = set(out["skipped"]) - failed
    out["passed"] = [t for t in dict.fromkeys(out["passed"]) if t not in failed and t not in skipped][:MAX_TEST_IDS]
    out["failed"] = list(dict.fromkeys(out["failed"]))[:MAX_TEST_IDS]
    out["skipped"] = [t for t in dict.fromkeys(out["skipped"]) if t in skipped][:MAX_TEST_IDS]
    out["files"] = sorted(set(out["files"]))[:MAX_FILES]
    out["collect_errors"] = sorted(set(out["collect_errors"]))
    out.setdefault("counts", {k: len(out[k]) for k in ("passed", "failed", "skipped")})
    out["count"] = max(out["count"], sum(out["counts"].values()))
    return out


def _add_case(out: dict[str, Any], case: Any, resolver: _Resolver) -> None:
    classname, name = case.get("classname") or "", case.get("name") or ""
    problems = [c for c in case if c.tag in ("failure", "error")]
    skipped = any(c.tag == "skipped" for c in case)
    file = resolver.file(case.get("file"))
    if not classname and problems and problems[0].get("message") == _COLLECTION_FAILURE:
        where = file or resolver.module(name) or name
        out["collect_errors"].append(where)
        out["files"].append(where)  # a module that failed to import ran as a test module
        return
    test_id, module = resolver.test_id(classname, name, file)
    out["count"] += 1
    if not _is_doctest(name):
        out["files"] += [p for p in (module, file) if p]
    if problems:
        out["failed"].append(test_id)
        if len(out["messages"]) < MAX_MESSAGES:
            message = problems[0].get("message") or problems[0].tag
            out["messages"][test_id] = message.strip().splitlines()[0][:300] if message.strip() else problems[0].tag
    elif skipped:
        out["skipped"].append(test_id)
    else:
        out["passed"].append(test_id)


def _is_doctest(name: str) -> bool:
    """A doctest item is named after the dotted object it documents (``calc.add``); a test is not."""
    return "." in name.partition("[")[0]


class _Resolver:
    """Names files the runner reported relative to the repository: pytest's are relative to its
    rootdir, which is the command's directory or one of its ancestors inside the tree."""

    def __init__(self, worktree: Path | None, cwd: Path | None) -> None:
        self.worktree = worktree
        self.roots: list[str] = []
        if worktree is not None:
            rel = (cwd or worktree).resolve().relative_to(worktree.resolve()).as_posix() if cwd else "."
            parts = [] if rel == "." else rel.split("/")
            self.roots = ["/".join(parts[:i]) for i in range(len(parts), -1, -1)]

    def file(self, reported: str | None) -> str | None:
        if not reported or self.worktree is None:
            return None
        for root in self.roots:
            candidate = _join(root, reported)
            if candidate is not None and (self.worktree / candidate).is_file():
                return candidate
        return None

    def module(self, dotted: str) -> str | None:
        """The file of a dotted module name (``tests.test_x``), or None."""
        found = self._split(dotted.split("."))
        return found[0] if found else None

    def test_id(self, classname: str, name: str, file: str | None) -> tuple[str, str | None]:
        """``(id, the collecting module's path)`` of a testcase."""
        parts = [p for p in classname.split(".") if p]
        if file and file.endswith(".py"):
            dotted = file.removesuffix(".py").split("/")
            # The classname starts with the module's path from the rootdir: find where it ends.
            for k in range(len(parts), 0, -1):
                if dotted[-k:] == parts[:k]:
                    return "::".join([file, *parts[k:], name]), file
        found = self._split(parts)
        if found:
            path, rest = found
            return "::".join([path, *rest, name]), path
        return f"{classname}::{name}".lstrip(":"), None

    def _split(self, parts: list[str]) -> tuple[str, list[str]] | None:
        if self.worktree is None:
            return None
        for k in range(len(parts), 0, -1):
            for root in self.roots:
                candidate = _join(root, "/".join(parts[:k]) + ".py")
                if candidate is not None and (self.worktree / candidate).is_file():
                    return candidate, parts[k:]
        return None


def _join(root: str, rel: str) -> str | None:
    """``root/rel`` normalized, or None when it leaves the repository."""
    import posixpath

    joined = posixpath.normpath(posixpath.join(root, rel)) if root else posixpath.normpath(rel)
    if joined.startswith("../") or joined == ".." or joined.startswith("/"):
        return None
    return joined


# -- unittest ----------------------------------------------------------------------------------------

_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s\s*$", re.MULTILINE)
_STATUS = re.compile(r"^(OK|FAILED|NO TESTS RAN)(?: \(([^)]*)\))?\s*$", re.MULTILINE)
# "test_x (pkg.mod.Class.test_x) ... ok" (3.11+) or "test_x (pkg.mod.Class) ... ok"; a docstring line
# may sit between the name and the outcome.
_VERBOSE = re.compile(r"^(\w+) \(([\w.]+)\)(?:\n[^\n]*?)? \.\.\. (ok|FAIL|ERROR|skipped\b.*|expected failure|"
                      r"unexpected success)$", re.MULTILINE)


def read_unittest(output: str, worktree: Path | None = None, cwd: Path | None = None,
                  files: list[str] | None = None) -> dict[str, Any] | None:
    """The report of unittest's own summary at the end of ``output``, or None when it printed none;
    ``files`` are the ones it discovered (:func:`unittest_files`), kept when it names no test."""
    ran = list(_RAN.finditer(output))
    status = _STATUS.search(output, ran[-1].end()) if ran else None
    if status is None:
        return None
    last = ran[-1]
    count = int(last.group(1))
    detail = dict(_pairs(status.group(2) or ""))
    failed = detail.get("failures", 0) + detail.get("errors", 0) + detail.get("unexpected successes", 0)
    if status.group(1) == "FAILED":
        failed = max(failed, 1)
    skipped = detail.get("skipped", 0) + detail.get("expected failures", 0)
    out = _empty("unittest")
    out["count"] = count
    out["counts"] = {"passed": max(count - failed - skipped, 0), "failed": failed, "skipped": skipped}
    resolver = _Resolver(worktree, cwd)
    for m in _VERBOSE.finditer(output[: last.start()]):
        method, where, word = m.groups()
        parts = where.split(".")
        if parts[-1] != method:
            parts.append(method)  # 3.10 and older print the class only
        test_id, module = resolver.test_id(".".join(parts[:-1]), method, None)
        key = "passed" if word == "ok" else "failed" if word in ("FAIL", "ERROR", "unexpected success") else "skipped"
        out[key].append(test_id)
        if module:
            out["files"].append(module)
    listed = len(out["passed"]) + len(out["failed"]) + len(out["skipped"])
    if listed != count:  # not verbose, or the output's middle was not kept: the counts are all there is
        out.update(ids=False, passed=[], failed=[], skipped=[], files=[])
    out["files"] += files or []
    return _finish(out)


_DISCOVER_OPTIONS = {"-s": "start", "--start-directory": "start", "-p": "pattern", "--pattern": "pattern",
                     "-t": "top", "--top-level-directory": "top"}


def unittest_files(args: list[str], worktree: Path, cwd: Path) -> list[str]:
    """The files ``python -m unittest ARGS`` runs tests from, read as unittest reads them: discovery
    (``discover``, or no test names) walks the start directory's packages for the pattern
    (``test*.py``); named modules (``pkg.test_x``, ``tests/test_x.py``) are those files."""
    import fnmatch
    import os

    words = [w for w in args if w not in ("-v", "--verbose", "-q", "--quiet", "-b", "--buffer", "-c", "--catch",
                                          "-f", "--failfast", "--locals", "--durations")]
    named = [w for w in words if not w.startswith("-")]
    if named and named[0] != "discover":
        resolver = _Resolver(worktree, cwd)
        found = [resolver.file(w) if w.endswith(".py") else resolver.module(w.split(":")[0]) for w in named]
        return sorted({f for f in found if f})
    found_opts = {"start": ".", "pattern": "test*.py"}
    positional = []
    rest = words[1:] if named else words
    i = 0
    while i < len(rest):
        if rest[i] in _DISCOVER_OPTIONS and i + 1 < len(rest):
            found_opts[_DISCOVER_OPTIONS[rest[i]]] = rest[i + 1]
            i += 2
            continue
        if not rest[i].startswith("-"):
            positional.append(rest[i])
        i += 1
    for key, value in zip(("start", "pattern"), positional, strict=False):
        found_opts[key] = value
    start = (cwd / found_opts["start"]).resolve()
    root = worktree.resolve()
    if not start.is_dir() or not _inside(start, root):
        return []
    out: list[str] = []
    for here, dirs, files in os.walk(start):
        # Discovery recurses only into packages below the start directory.
        dirs[:] = [d for d in dirs if (Path(here) / d / "__init__.py").is_file()]
        out += [(Path(here) / f).relative_to(root).as_posix() for f in files
                if f.endswith(".py") and fnmatch.fnmatch(f, found_opts["pattern"])]
    return sorted(out)[:MAX_FILES]


def _pairs(text: str) -> list[tuple[str, int]]:
    out = []
    for part in text.split(","):
        key, _, value = part.strip().partition("=")
        if value.strip().isdigit():
            out.append((key.strip(), int(value)))
    return out
