"""bosun's own view of a worker's change: a tree computed from the bytes on disk, by rules the worker cannot touch.

Invariant: the change is a git tree that bosun builds itself; every byte that is verified, gated,
approved and merged comes from that tree object, never from the worker's directory again.

How the worker is kept out of the computation, by construction rather than by a list of tricks:

* **A private git dir per run** (``runs/<id>/view.git``). bosun never discovers the repository from the
  worktree's ``.git`` file (the worker can rewrite it) and never reads the worktree's index (the worker
  can forge it). The view has its own config (no filters, no hooks, no fsmonitor), its own index and
  its own ``info/attributes``, which outranks every ``.gitattributes`` in the tree and switches off
  filters, end-of-line conversion, ``ident`` and re-encoding: blobs hold exactly the bytes on disk.
  Objects go to the user's object store (content-addressed; nothing else of theirs is written).
* **No environment of bosun's or the user's**: git runs with an allowlisted environment, no system or
  global config, and an empty HOME.
* **Ignore rules from the start tree only.** Which untracked files are left out is decided by the
  ``.gitignore`` files of the start commit (plus the user's ``info/exclude`` at prepare), translated
  once into one root-anchored exclude file. A ``.gitignore`` the worker writes is just another file of
  the change (and a locked one), so it cannot hide anything.
* **Fail closed** on what cannot be represented faithfully: a changed ``.git`` pointer, a nested
  repository, a gitlink.

``materialize`` then makes the worktree hold exactly the tree (files that differ rewritten from the
blobs, everything else removed), which is what verification runs on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bosun import proc
from bosun.core.changes import FileChange
from bosun.core.errors import BosunError
from bosun.isolation.blobs import BlobReader
from bosun.isolation.git import GitError

VIEW_DIR = "view.git"

# Highest-precedence attributes: exact bytes in, exact bytes out, binary detection by content.
_ATTRIBUTES = "* -text -filter -ident !eol !diff !merge !working-tree-encoding !whitespace\n"

_CONFIG = """[core]
\trepositoryformatversion = {format_version}
\tfilemode = true
\tbare = false
\tlogallrefupdates = false
\tsymlinks = true
\tignorecase = false
\tprecomposeunicode = false
\tautocrlf = false
\tsafecrlf = false
\tfsmonitor = false
\thooksPath = /dev/null
\ttrustctime = true
\tcheckStat = default
\tsplitIndex = false
\tuntrackedCache = false
\tsparseCheckout = false
\tquotePath = true
[gc]
\tauto = 0
[maintenance]
\tauto = false
[diff]
\tnoprefix = false
{extensions}"""

# Options that make diff output independent of every diff.* knob: the engine hashes it.
DIFF_OPTS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--full-index",
    "--binary",
    "-M",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)

# Variables that may pass from bosun's environment to its own git calls on the view.
_ENV_KEEP = ("PATH", "TZ")


class ChangeProblem(BosunError):
    """The worker's directory holds something bosun cannot turn into a faithful change."""

    code = "CHANGE_UNREPRESENTABLE"


@dataclass(frozen=True)
class Problem:
    """A reason to fail closed, as a gate code and the words that say what the worker did."""

    code: str
    detail: str


@dataclass(frozen=True)
class View:
    """Where bosun's view of one run's worktree lives, and what it was at the start."""

    git_dir: Path
    worktree: Path
    objects: Path
    start: str

    @property
    def home(self) -> Path:
        return self.git_dir / "home"

    @property
    def excludes(self) -> Path:
        return self.git_dir / "info" / "start-excludes"

    @property
    def environment(self) -> Path:
        """Root-anchored patterns of the paths set-up owns (:mod:`bosun.isolation.setup`): never part
        of the change, kept by ``materialize``."""
        return self.git_dir / "info" / "environment"

    def environment_patterns(self) -> list[str]:
        try:
            return [ln for ln in self.environment.read_text("utf-8").splitlines() if ln]
        except FileNotFoundError:
            return []

    @property
    def gitfile_record(self) -> Path:
        return self.git_dir / "worktree-gitfile"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k in _ENV_KEEP}
        env.update(
            LC_ALL="C",
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home),
            GIT_DIR=str(self.git_dir),
            GIT_WORK_TREE=str(self.worktree),
            GIT_INDEX_FILE=str(self.git_dir / "index"),
            GIT_OBJECT_DIRECTORY=str(self.objects),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL="/dev/null",
            GIT_ATTR_NOSYSTEM="1",
            GIT_NO_REPLACE_OBJECTS="1",
            GIT_TERMINAL_PROMPT="0",
            GIT_OPTIONAL_LOCKS="0",
            GIT_LITERAL_PATHSPECS="1",
        )
        if extra:
            env.update(extra)
        return env

    def git(self, args: list[str], *, input: bytes | None = None, check: bool = True,
            index: Path | None = None, env: Mapping[str, str] | None = None) -> bytes:
        """Run git on the view; stdout as bytes. Never honours the worktree's ``.git``.
        ``index`` selects another index file than the view's own (for trees built aside); ``env``
        overrides some of the view's variables."""
        env = self.env({**(env or {}), **({"GIT_INDEX_FILE": str(index)} if index is not None else {})})
        res = proc.run_quick(["git", *args], cwd=self.worktree, env=env, input=input, text=False)
        if check and res.returncode != 0:
            stderr = res.stderr.decode("utf-8", "replace") if isinstance(res.stderr, bytes) else res.stderr
            raise GitError.from_failure(args, res.returncode, stderr, self.worktree)
        return res.stdout  # type: ignore[return-value]


def view_for(run_dir: Path, worktree: Path, objects: Path, start: str) -> View:
    return View(run_dir / VIEW_DIR, worktree, objects, start)


def create_view(run_dir: Path, worktree: Path, repo: Path, start: str, *, seed: bool = True) -> View:
    """Set up the private git dir right after ``git worktree add``, before any worker runs.

    With ``seed``, the freshly checked-out worktree index is copied as a stat cache (bosun wrote it a
    moment ago; the worker never had a chance to). Without it, or if that copy is unusable, the first
    scan hashes every file.
    """
    from bosun.isolation.git import git, git_path

    # One git process for three answers (rev-parse prints them in the order asked).
    asked = git(["rev-parse", "--path-format=absolute", "--git-path", "objects", "--git-path", "info/exclude",
                 "--show-object-format"], repo).stdout.split("\n")
    objects, user_exclude, fmt = Path(asked[0]), Path(asked[1]), asked[2].strip() or "sha1"
    view = view_for(run_dir, worktree, objects, start)
    gd = view.git_dir
    if gd.exists():
        shutil.rmtree(gd)
    for sub in ("refs", "info", "home", "objects"):
        (gd / sub).mkdir(parents=True, exist_ok=True)
    (gd / "HEAD").write_text(start + "\n")
    extensions = "" if fmt == "sha1" else f"[extensions]\n\tobjectFormat = {fmt}\n"
    (gd / "config").write_text(_CONFIG.format(format_version=0 if fmt == "sha1" else 1, extensions=extensions))
    (gd / "info" / "attributes").write_text(_ATTRIBUTES)
    gitfile = worktree / ".git"
    view.gitfile_record.write_bytes(gitfile.read_bytes() if gitfile.is_file() else b"")
    seed_index = git_path(worktree, "index") if seed else None
    if seed_index is not None and seed_index.is_file():
        shutil.copyfile(seed_index, gd / "index")
        ok = view.git(["write-tree"], check=False).strip().decode()
        if ok != view.git(["rev-parse", f"{start}^{{tree}}"]).strip().decode():
            (gd / "index").unlink(missing_ok=True)
    if not (gd / "index").is_file():
        view.git(["read-tree", start])
    # The index holds exactly the start tree now (checked above), so its .gitignore entries are the tree's.
    excludes = start_excludes(view, user_exclude.read_text("utf-8", "replace") if user_exclude.is_file() else "")
    view.excludes.write_text(excludes)
    return view


def set_environment(view: View, paths: list[str]) -> None:
    """Record the worktree paths set-up owns: the change leaves them out, ``materialize`` keeps them."""
    view.environment.write_text("".join("/" + _escape_pattern(p) + "\n" for p in paths))


def _escape_pattern(path: str) -> str:
    # A literal path as a gitignore pattern: glob characters and a leading "!" or "#" escaped.
    return "".join("\\" + c if c in "*?[]\\!#" else c for c in path)


# ---------------------------------------------------------------------------------------------
# ignore rules of the start tree


def start_excludes(view: View, user_exclude: str = "") -> str:
    """One root-anchored exclude file equivalent to the start tree's ``.gitignore`` files.

    Read from the view's index, which holds exactly the start tree when this runs (a pathspec picks
    the few ``.gitignore`` entries out of tens of thousands without listing the tree). Files are
    concatenated shallow to deep, so a deeper file's rules come later and win, as git's own
    precedence has it; within a file the last matching line wins in both.
    """
    listing = view.git(["ls-files", "-s", "-z", "--", ":(glob).gitignore", ":(glob)**/.gitignore"],
                       env={"GIT_LITERAL_PATHSPECS": "0"})
    files: list[tuple[str, str]] = []
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, sha, _stage = meta.split(b" ")
        name = os.fsdecode(path)
        if mode in (b"100644", b"100755") and (name == ".gitignore" or name.endswith("/.gitignore")):
            files.append((name, sha.decode()))
    files.sort(key=lambda item: (item[0].count("/"), item[0]))
    out = ["# bosun: ignore rules of the start tree, anchored at the root"]
    out += [ln for ln in user_exclude.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    with BlobReader(view.worktree, view.env()) as blobs:  # a monorepo has hundreds: one process
        for name, blob in files:
            base = name[: -len(".gitignore")]
            text = (blobs.read_object(blob) or b"").decode("utf-8", "replace")
            out += [anchored for ln in text.splitlines() if (anchored := anchor_pattern(ln, base))]
    return "\n".join(out) + "\n"


def anchor_pattern(line: str, base: str) -> str | None:
    """Rewrite one ``.gitignore`` line of directory ``base`` ("" or "a/b/") to the same rule at the root."""
    if not line.strip() or line.startswith("#"):
        return None
    if not base:
        return line
    negate = line.startswith("!")
    pat = line[1:] if negate else line
    # A trailing "/" only says "directories"; a slash anywhere else anchors to the file's directory.
    body = pat[:-1] if pat.endswith("/") and not pat.endswith("\\/") else pat
    anchored = base + pat.lstrip("/") if "/" in body else base + "**/" + pat
    return ("!" if negate else "") + anchored


# ---------------------------------------------------------------------------------------------
# reading the change


@dataclass(frozen=True)
class Change:
    """The worker's change: the tree bosun built, its canonical diff and files, and reasons to refuse."""

    tree: str
    diff: bytes
    changes: list[FileChange]
    problems: list[Problem] = field(default_factory=list)


def read_change(view: View) -> Change:
    """Build the change from the worktree's bytes. Never trusts anything the worker wrote about them."""
    tree, problems = read_tree(view)
    changes = tree_changes(view, view.start, tree)
    return Change(tree, tree_diff(view, view.start, tree), changes, problems + _gitlink_problems(changes))


def read_tree(view: View) -> tuple[str, list[Problem]]:
    """The worktree's bytes as a tree (and the problems seen on the way), without diffing it: what
    the worktree holds is decided by the tree's id, the diffs are for a tree not seen before."""
    problems = _pointer_problems(view)
    # Tracked paths first: the index holds the previous scan (or the start tree), and its stat cache
    # spares unchanged files. Deleted files leave the index here.
    view.git(["add", "-u", "--", "."])
    env_rules = [f"--exclude-from={view.environment}"] if view.environment.is_file() else []
    others = [p for p in view.git(["ls-files", "-z", "--others", f"--exclude-from={view.excludes}", *env_rules])
              .split(b"\0") if p]
    keep = []
    for raw in others:
        name = os.fsdecode(raw)
        if name.endswith("/") or ".git" in name.split("/"):
            where = name.rstrip("/")
            problems.append(Problem("NESTED_REPOSITORY", f"{where} is a git repository inside the worktree"))
            continue
        keep.append(raw)
    if keep:
        view.git(["update-index", "--add", "-z", "--stdin"], input=b"\0".join(keep) + b"\0")
    return view.git(["write-tree"]).strip().decode(), problems


def _pointer_problems(view: View) -> list[Problem]:
    gitfile = view.worktree / ".git"
    try:
        now = gitfile.read_bytes() if gitfile.is_file() and not gitfile.is_symlink() else None
    except OSError:
        now = None
    if now != view.gitfile_record.read_bytes():
        return [Problem("GIT_POINTER_CHANGED",
                        "the worktree's .git file was replaced or changed: the worker pointed git at another repository")]
    return []


def restore_pointer(view: View) -> bool:
    """Put back the worktree's ``.git`` file as bosun created it (so git can remove the worktree).
    Returns True when something had to be restored."""
    gitfile = view.worktree / ".git"
    if not view.worktree.is_dir() or not _pointer_problems(view):
        return False
    if gitfile.is_dir() and not gitfile.is_symlink():
        shutil.rmtree(gitfile)
    else:
        gitfile.unlink(missing_ok=True)
    gitfile.write_bytes(view.gitfile_record.read_bytes())
    return True


def _gitlink_problems(changes: list[FileChange]) -> list[Problem]:
    return [Problem("NESTED_REPOSITORY", f"{c.path} changed as a gitlink (a repository inside the tree)")
            for c in changes if c.new_mode == "160000"]


def tree_diff(view: View, a: str, b: str) -> bytes:
    """The canonical binary diff between two trees (same trees, same bytes)."""
    return view.git(["diff-tree", "-r", "-p", *DIFF_OPTS, a, b, "--"])


def tree_changes(view: View, a: str, b: str) -> list[FileChange]:
    from bosun.isolation.worktree import _parse_numstat, _parse_raw

    raw = view.git(["diff-tree", "-r", "--raw", "-z", "-M", a, b, "--"])
    num = view.git(["diff-tree", "-r", "--numstat", "-z", "-M", a, b, "--"])
    counts = _parse_numstat(num)
    changes = []
    for status, old_mode, new_mode, old_path, path in _parse_raw(raw):
        added, deleted, binary = counts.get(path, (0, 0, False))
        changes.append(FileChange(path=path, status=status, added=added, deleted=deleted, binary=binary,
                                  old_path=old_path, old_mode=old_mode, new_mode=new_mode))
    return changes


def edit_tree(view: View, tree: str, put: dict[str, tuple[str, str]], remove: list[str]) -> str:
    """A new tree: ``tree`` with ``put`` entries (path -> (mode, object id)) set and ``remove`` paths gone.
    Built in an index of its own; the view's index and the worktree are untouched."""
    index = view.git_dir / "edit.index"
    index.unlink(missing_ok=True)
    try:
        view.git(["read-tree", tree], index=index)
        if remove:
            view.git(["update-index", "--force-remove", "-z", "--stdin"], index=index,
                     input=b"".join(os.fsencode(p) + b"\0" for p in remove))
        if put:
            info = b"".join(f"{mode} {sha}\t".encode() + os.fsencode(p) + b"\0" for p, (mode, sha) in put.items())
            view.git(["update-index", "--add", "-z", "--index-info"], index=index, input=info)
        return view.git(["write-tree"], index=index).strip().decode()
    finally:
        index.unlink(missing_ok=True)


def tree_entries(view: View, tree: str) -> dict[str, tuple[str, str]]:
    """Every file of ``tree``: path -> (mode, object id)."""
    out: dict[str, tuple[str, str]] = {}
    for rec in view.git(["ls-tree", "-r", "-z", "--full-tree", tree]).split(b"\0"):
        if rec:
            meta, path = rec.split(b"\t", 1)
            mode, _kind, sha = meta.decode().split(" ")
            out[os.fsdecode(path)] = (mode, sha)
    return out


# ---------------------------------------------------------------------------------------------
# materializing


def materialize(view: View, tree: str) -> None:
    """Make the worktree hold exactly ``tree``: differing files rewritten from blobs, all else removed.

    When the view's index already holds ``tree`` (it does right after a scan, and after verify
    commands that ran on the tree materialized before them), ``diff-files`` compares every entry's
    stat data with the disk (racily-clean entries by content; a path under a directory that became a
    symlink counts as gone) and only what differs is written again from the index's blobs. Otherwise
    ``read-tree --reset -u`` moves the index and the disk to ``tree``, with the same comparison.
    ``clean -ffdx`` then removes every file the tree does not hold, ignored ones included, except the
    paths set-up owns (``environment``), and every ``.git`` below the top goes. A nested repository is
    refused before this point.
    """
    if view.git(["write-tree"], check=False).strip().decode() == tree:
        _rewrite_differing(view)  # stray .git entries go while it reads
        _clean(view)
    else:
        view.git(["read-tree", "--reset", "-u", tree])
        _clean(view)
        _remove_nested_git_entries(view.worktree)


def _clean(view: View) -> None:
    keep = [arg for pattern in view.environment_patterns() for arg in ("-e", pattern)]
    view.git(["clean", "-ffdxq", *keep])


def _rewrite_differing(view: View) -> None:
    """Write again, from the index, every tracked file whose disk entry is not the index's (changed,
    gone, of another type or mode), and record the new stat data: the index is the tree already, so
    only the disk moves. One stat pass instead of ``read-tree``'s tree walk and index rebuild.

    The stray ``.git`` entries are removed while ``diff-files`` runs: it only reads, a tree never
    holds a ``.git``, and nothing after this creates one (``checkout-index`` writes tree paths,
    ``clean`` only removes).
    """
    args = ["diff-files", "--name-only", "-z", "--ignore-submodules=none"]
    comparing = subprocess.Popen(["git", *args], cwd=view.worktree, env=view.env(), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _remove_nested_git_entries(view.worktree)
        differing, stderr = comparing.communicate(timeout=proc.QUICK_TIMEOUT_S)
    finally:
        if comparing.returncode is None:  # the walk failed or git hung: it is not left running
            comparing.kill()
            comparing.communicate()
    if comparing.returncode != 0:
        raise GitError.from_failure(args, comparing.returncode, stderr.decode("utf-8", "replace"), view.worktree)
    if differing.strip(b"\0"):
        view.git(["checkout-index", "-f", "-u", "-z", "--stdin"], input=differing)


def _remove_nested_git_entries(worktree: Path) -> None:
    """git never lists nor cleans an entry named ``.git``, and a tree cannot hold one: any below the
    top is the worker's (a stray gitfile, say) and goes, so the directory is exactly the tree.
    One ``scandir`` per directory, symlinks never followed (the d_type of each entry, no stat)."""
    top = str(worktree)
    pending = [top]
    while pending:
        where = pending.pop()
        try:
            with os.scandir(where) as entries:
                for entry in entries:
                    if entry.name == ".git":
                        if where != top:
                            _remove_entry(Path(entry.path))
                    elif entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:
            continue


def _remove_entry(target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target, ignore_errors=True)
    else:
        target.unlink(missing_ok=True)
