"""A run's worktree made ready to work in: ignored files copied in, directories linked, set-up run.

Everything set-up produces is **environment, not change**:

* ``include`` globs (and the repository's ``.worktreeinclude``, one glob a line) name ignored files and
  directories of the user's tree. They are copied once into the run's environment directory, and from
  there into the worktree; the worker may edit its copy, verification gets a fresh one.
* ``symlink`` directories of the user's tree (``node_modules``, ``.venv``) are linked, not copied.
* ``setup`` commands run in the worktree before the worker, each with its own timeout and only the
  secrets it names. Whatever they create is moved into the environment directory and linked back, so
  the worktree holds a link where ``npm ci`` left ``node_modules``.

The worker's sandbox may write only beneath the worktree: a write through a link lands outside it and
is refused by the kernel. Without the sandbox, a fingerprint of everything linked (taken after set-up,
compared before each verification) turns such a write into ``ENVIRONMENT_CHANGED``, and no verify
command runs. The paths set-up owns are written to the view (:mod:`bosun.isolation.change`): the
change never counts them, ``materialize`` keeps them, and :func:`restore` puts back what the worker
replaced before a verify command runs, so verification sees exactly the set-up the worker started with.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bosun import proc
from bosun.core.errors import BadInput, BosunError
from bosun.core.worktree_config import WorktreeConfig

MANIFEST = "environment.json"
INCLUDE_FILE = ".worktreeinclude"
OUTPUT_TAIL_CHARS = 4000


class SetupFailed(BosunError):
    code = "SETUP_FAILED"


@dataclass
class Environment:
    """What set-up put into one worktree (``runs/<id>/environment.json``)."""

    env_dir: str
    links: dict[str, str] = field(default_factory=dict)  # worktree path -> absolute target
    copies: list[str] = field(default_factory=list)  # worktree paths copied from env_dir/include
    outputs: list[str] = field(default_factory=list)  # set-up outputs, kept in env_dir/outputs
    ports: dict[str, int] | None = None
    setup_key: str = ""
    commands: list[dict[str, Any]] = field(default_factory=list)
    fingerprint: str = ""
    reused: bool = False

    @property
    def paths(self) -> list[str]:
        """Every worktree path set-up owns."""
        return sorted({*self.links, *self.copies})

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": 1, "env_dir": self.env_dir, "links": self.links, "copies": self.copies,
                "outputs": self.outputs, "ports": self.ports, "setup_key": self.setup_key,
                "commands": self.commands, "fingerprint": self.fingerprint, "reused": self.reused}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Environment:
        return cls(env_dir=doc["env_dir"], links=dict(doc.get("links") or {}), copies=list(doc.get("copies") or []),
                   outputs=list(doc.get("outputs") or []), ports=doc.get("ports"),
                   setup_key=doc.get("setup_key") or "", commands=list(doc.get("commands") or []),
                   fingerprint=doc.get("fingerprint") or "", reused=bool(doc.get("reused")))


def worktree_include_globs(repo: Path) -> list[str]:
    """The repository's ``.worktreeinclude``: one glob a line, ``#`` comments."""
    path = repo / INCLUDE_FILE
    try:
        text = path.read_text("utf-8") if path.is_file() else ""
    except OSError:
        return []
    return [ln.strip().rstrip("/") for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def effective(base: WorktreeConfig, task: WorktreeConfig | None, repo: Path) -> WorktreeConfig:
    cfg = base.plus(task)
    extra = worktree_include_globs(repo)
    return cfg.model_copy(update={"include": [*cfg.include, *extra]}) if extra else cfg


def setup_key(cfg: WorktreeConfig, repo: Path, start: str) -> str:
    """What the set-up commands' result depends on: the commands and the start tree's content.

    Two runs with the same key can share set-up outputs (the warm pool reuses them)."""
    from bosun.isolation.git import tree_of

    doc = json.dumps({"setup": [c.model_dump() for c in cfg.setup], "tree": tree_of(repo, start)}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# set-up


def _ignored_entries(repo: Path) -> list[str]:
    """Ignored files and directories of the user's tree (an ignored directory as one entry)."""
    from bosun.isolation.git import git

    out: bytes = git(["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
                     repo, text=False).stdout  # type: ignore[assignment]
    return [os.fsdecode(p).rstrip("/") for p in out.split(b"\0") if p]


def _included(repo: Path, patterns: list[str]) -> list[str]:
    """Ignored files and directories of the user's tree that ``patterns`` name. An ignored directory
    is one entry (matched as a whole); its files are looked at one by one only when a pattern names
    something inside it (``config/*.json`` for an ignored ``config/``), so a name pattern never walks
    ``node_modules``."""
    from bosun.core import globs

    out: list[str] = []
    for rel in _ignored_entries(repo):
        if globs.match_any(rel, patterns):
            out.append(rel)
        elif (repo / rel).is_dir() and any(p.startswith(rel + "/") for p in patterns):
            for dirpath, _dirs, files in os.walk(repo / rel):
                for name in files:
                    inner = os.path.relpath(os.path.join(dirpath, name), repo)
                    if globs.match_any(inner, patterns):
                        out.append(inner)
    return out


def _tracked(repo: Path, start: str, rel: str) -> bool:
    from bosun.isolation.git import git

    return bool(git(["ls-tree", "--name-only", start, "--", rel], repo).stdout.strip())


def _copy(src: Path, dst: Path) -> None:
    _remove(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy2(src, dst, follow_symlinks=False)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _link(worktree: Path, rel: str, target: str) -> None:
    dst = worktree / rel
    if dst.is_symlink() and os.readlink(dst) == target:
        return
    _remove(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, dst)


def set_up(
    cfg: WorktreeConfig, repo: Path, worktree: Path, start: str, env_dir: Path, *,
    ports_env: dict[str, str], setup_home: Path, reuse_outputs: list[str] | None = None,
    key: str = "",
) -> Environment:
    """Put the environment into a freshly checked-out ``worktree``; raises ``SetupFailed``.

    ``reuse_outputs``: set-up outputs already in ``env_dir`` from an earlier run with the same key
    (a pooled worktree): linked again instead of running the set-up commands."""
    env = Environment(env_dir=str(env_dir), setup_key=key)
    env_dir.mkdir(parents=True, exist_ok=True)
    links = [s for s in cfg.symlink]
    for rel in links:
        if _tracked(repo, start, rel):
            raise BadInput(f"[worktree] symlink {rel!r} is tracked by git", "link only ignored directories "
                           "(node_modules, .venv); tracked files are the worker's to change")
        src = repo / rel
        if src.is_dir():
            env.links[rel] = str(src.resolve())
    if cfg.include:
        inc_root = env_dir / "include"
        shutil.rmtree(inc_root, ignore_errors=True)
        for rel in _included(repo, cfg.include):
            if any(rel == s or rel.startswith(s + "/") for s in links):
                continue
            _copy(repo / rel, inc_root / rel)
            env.copies.append(rel)
    for rel, target in env.links.items():
        _link(worktree, rel, target)
    for rel in env.copies:
        _copy(env_dir / "include" / rel, worktree / rel)
    if reuse_outputs is not None:
        env.reused = True
        env.outputs = [o for o in reuse_outputs if (env_dir / "outputs" / o).exists()]
    elif cfg.setup:
        shutil.rmtree(env_dir / "outputs", ignore_errors=True)  # a pooled worktree's outputs of other inputs
        env.outputs = _run_setup(cfg, repo, worktree, start, env_dir, ports_env, setup_home, env)
    for rel in env.outputs:
        env.links[rel] = str(env_dir / "outputs" / rel)
        _link(worktree, rel, env.links[rel])
    env.fingerprint = fingerprint(env)
    return env


def _untracked(worktree: Path, repo: Path, start: str) -> set[str]:
    """Untracked and ignored entries of the worktree (directories as one entry), by the start tree."""
    from bosun.isolation.git import git

    out: bytes = git(["ls-files", "-z", "--others", "--directory"], worktree, text=False).stdout  # type: ignore[assignment]
    return {os.fsdecode(p).rstrip("/") for p in out.split(b"\0") if p}


def _modified_tracked(worktree: Path) -> list[str]:
    from bosun.isolation.git import git

    git(["update-index", "-q", "--refresh"], worktree, check=False)
    out = git(["diff-files", "--name-only"], worktree).stdout
    return [ln for ln in out.splitlines() if ln]


def _run_setup(cfg: WorktreeConfig, repo: Path, worktree: Path, start: str, env_dir: Path,
               ports_env: dict[str, str], home: Path, env: Environment) -> list[str]:
    before = _untracked(worktree, repo, start)
    home.mkdir(parents=True, exist_ok=True)
    (home / "tmp").mkdir(exist_ok=True)
    for cmd in cfg.setup:
        child_env = proc.allowlisted_env(
            extra_keys=cmd.secrets,
            overrides={"HOME": str(home), "TMPDIR": str(home / "tmp"), "CI": "true", **ports_env},
        )
        child_env.update({k: v for k, v in cmd.env.items() if k not in ("HOME", "TMPDIR")})
        missing = [s for s in cmd.secrets if s not in os.environ]
        entry: dict[str, Any] = {"argv": cmd.run, "timeout_s": cmd.timeout_s, "secrets": list(cmd.secrets)}
        began = time.monotonic()
        try:
            res = proc.run_supervised(cmd.run, cwd=worktree, env=child_env, timeout_s=cmd.timeout_s,
                                      stdout_grace_s=1.0)
        except (FileNotFoundError, PermissionError) as exc:
            entry.update(exit_code=127, duration_s=round(time.monotonic() - began, 3), output_tail=str(exc))
            env.commands.append(entry)
            raise SetupFailed(f"set-up command {cmd.run[0]!r} could not start: {exc}",
                              "fix [worktree] setup in bosun.toml (or the task's worktree.setup)") from None
        entry.update(exit_code=res.exit_code, duration_s=round(res.duration_s, 3), timed_out=res.timed_out,
                     output_tail=_redact(res.output_tail(OUTPUT_TAIL_CHARS), cmd.secrets))
        env.commands.append(entry)
        if not res.ok:
            why = f"timed out after {cmd.timeout_s:g}s" if res.timed_out else f"exited {res.exit_code}"
            hint = "its output is in the run's environment.json; fix the command or raise its timeout_s"
            if missing:
                hint = f"{', '.join(missing)} is not set in bosun's environment; " + hint
            raise SetupFailed(f"set-up command {' '.join(cmd.run)[:120]!r} {why}", hint)
    changed = _modified_tracked(worktree)
    if changed:
        raise SetupFailed(f"set-up changed tracked files: {', '.join(changed[:8])}",
                          "set-up may only create files (dependencies, build outputs); a change to tracked "
                          "files is the worker's job, or commit it first")
    created = sorted(_untracked(worktree, repo, start) - before)
    out_root = env_dir / "outputs"
    for rel in created:
        dst = out_root / rel
        _remove(dst) if dst.exists() or dst.is_symlink() else None
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(worktree / rel), str(dst))
    return created


def _redact(text: str, secrets: list[str]) -> str:
    for name in secrets:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, f"[{name}]")
    return text


# ---------------------------------------------------------------------------------------------
# keeping it: fingerprint, restore


def fingerprint(env: Environment) -> str:
    """A digest of every file set-up put in place (names, types, sizes, modes, mtimes, link targets),
    walked without following links."""
    h = hashlib.sha256()
    roots = [Path(env.env_dir) / "include", *(Path(t) for t in env.links.values())]
    for root in roots:
        h.update(b"\0root\0" + os.fsencode(str(root)))
        if not os.path.lexists(root):
            continue
        if not root.is_dir():
            st = root.stat()
            h.update(f"{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
            continue
        for dirpath, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
                p = os.path.join(dirpath, name)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                link = os.readlink(p) if os.path.islink(p) else ""
                h.update(f"{os.path.relpath(p, root)}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{link}\n".encode())
    return h.hexdigest()


def restore(env: Environment, worktree: Path) -> None:
    """Put the environment back into ``worktree`` exactly as set-up left it (links re-made, copies
    re-copied), whatever the worker did to those paths."""
    for rel, target in env.links.items():
        _link(worktree, rel, target)
    for rel in env.copies:
        _copy(Path(env.env_dir) / "include" / rel, worktree / rel)


def changed_since_setup(env: Environment) -> bool:
    return bool(env.fingerprint) and fingerprint(env) != env.fingerprint


def read_manifest(run_dir: Path) -> Environment | None:
    try:
        doc = json.loads((run_dir / MANIFEST).read_text("utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return Environment.from_dict(doc)



def linked_reads(run_dir: Path) -> tuple[Path, ...]:
    """What set-up linked into the run's worktree: a process whose reads are confined may still read it."""
    env = read_manifest(run_dir)
    return tuple(Path(t) for t in env.links.values()) if env else ()

def write_manifest(run_dir: Path, env: Environment) -> None:
    from bosun.core.fileio import write_text_atomic

    write_text_atomic(run_dir / MANIFEST, json.dumps(env.to_dict(), indent=2))
