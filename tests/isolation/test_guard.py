"""bosun.isolation.guard: a worker in its worktree can read and stage, never move refs or push."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from bosun import proc
from bosun.isolation.guard import PUSH_BLOCK_KEY, find_real_git, install_guard
from bosun.isolation.worktree import create_worktree

IDENTITY = "[user]\n\tname = Test\n\temail = test@example.com\n"


def _isolate(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests must not depend on the machine's git config or identity."""
    cfg = tmp_path_factory.mktemp("gitconfig") / "config"
    cfg.write_text(IDENTITY + "[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    _isolate(tmp_path_factory, monkeypatch)


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> proc.QuickResult:
    return proc.run_quick(["git", *args], cwd=cwd, env=env)


def ok(cwd: Path, *args: str) -> str:
    res = run(cwd, *args)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


class Setup:
    def __init__(self, tmp_path: Path) -> None:
        self.repo = tmp_path / "repo"
        self.repo.mkdir()
        ok(self.repo, "init", "-q")
        (self.repo / "a.txt").write_text("a\n")
        ok(self.repo, "add", "a.txt")
        ok(self.repo, "commit", "-qm", "first")
        (self.repo / "a.txt").write_text("a\nb\n")
        ok(self.repo, "commit", "-qam", "second")
        ok(self.repo, "branch", "keep")
        ok(self.repo, "tag", "v0")
        self.bare = tmp_path / "remote.git"
        ok(tmp_path, "init", "-q", "--bare", str(self.bare))
        ok(self.repo, "remote", "add", "origin", str(self.bare))
        ok(self.repo, "push", "-q", "origin", "main", "keep")
        ok(self.repo, "update-ref", "refs/stash", ok(self.repo, "rev-parse", "HEAD~1"))
        self.wt = tmp_path / "run" / "wt"
        create_worktree(self.repo, self.wt, "bosun/run1", ok(self.repo, "rev-parse", "HEAD"))
        (self.wt / "a.txt").write_text("worker edit\n")
        (self.wt / "new.txt").write_text("new\n")
        self.guard = install_guard(tmp_path / "guard")
        self.real_git = find_real_git()
        # The worker's environment: the shim first on PATH, the guard's config for every git.
        self.env = {**os.environ, **self.guard}
        self.env["PATH"] = self.guard["BOSUN_GUARD_BIN"] + os.pathsep + os.environ["PATH"]

    def fingerprint(self) -> dict[str, str]:
        """Every ref of the repo and the remote, both HEADs and the stash."""
        return {
            "refs": ok(self.repo, "for-each-ref", "--format=%(refname) %(objectname)"),
            "remote": ok(self.bare, "for-each-ref", "--format=%(refname) %(objectname)"),
            "head": ok(self.repo, "rev-parse", "HEAD") + ok(self.repo, "symbolic-ref", "HEAD"),
            "wt_head": ok(self.wt, "rev-parse", "HEAD") + ok(self.wt, "symbolic-ref", "HEAD"),
            "stash": ok(self.repo, "stash", "list"),
            "config": (self.repo / ".git" / "config").read_text(),
        }

    def worker(self, *args: str) -> proc.QuickResult:
        """``git args`` as the worker runs it: through whatever git is first on its PATH."""
        return proc.run_quick(["git", *args], cwd=self.wt, env=self.env)

    def bypass(self, *args: str) -> proc.QuickResult:
        """The real git by absolute path, skipping the shim but not the guard's env config."""
        return proc.run_quick([self.real_git, *args], cwd=self.wt, env=self.env)


@pytest.fixture
def s(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    """One setup for the shim tests: each asserts that it changed nothing, so they can share it."""
    with pytest.MonkeyPatch.context() as mp:
        _isolate(tmp_path_factory, mp)
        yield Setup(tmp_path_factory.mktemp("shared"))


def test_install_guard_writes_executables_and_env(tmp_path: Path) -> None:
    env = install_guard(tmp_path / "g", real_git="/usr/bin/git")
    shim = tmp_path / "g" / "bin" / "git"
    hook = tmp_path / "g" / "hooks" / "reference-transaction"
    for path in (shim, hook, tmp_path / "g" / "hooks" / "pre-push"):
        assert path.stat().st_mode & stat.S_IXUSR
    assert shim.read_text().startswith("#!/bin/sh\n")
    assert "REAL_GIT='/usr/bin/git'" in shim.read_text()
    assert env["BOSUN_GUARD_BIN"] == str((tmp_path / "g" / "bin").resolve())
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    config = {
        env[f"GIT_CONFIG_KEY_{n}"]: env[f"GIT_CONFIG_VALUE_{n}"] for n in range(int(env["GIT_CONFIG_COUNT"]))
    }
    assert config == {"core.hooksPath": str((tmp_path / "g" / "hooks").resolve()), PUSH_BLOCK_KEY: ""}


def test_find_real_git_skips_the_shim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = find_real_git()
    env = install_guard(tmp_path / "g")
    monkeypatch.setenv("PATH", env["BOSUN_GUARD_BIN"] + os.pathsep + os.environ["PATH"])
    assert find_real_git() == real
    assert install_guard(tmp_path / "g2") == install_guard(tmp_path / "g2")  # reinstalling is harmless
    assert f"REAL_GIT='{real}'" in (tmp_path / "g2" / "bin" / "git").read_text()


REFUSED = [
    ["commit", "-qam", "x"],
    ["-C", ".", "-c", "user.name=x", "commit", "-qam", "x"],
    ["--no-pager", "commit", "--allow-empty", "-m", "x"],
    ["push", "origin", "HEAD:main"],
    ["pull", "origin", "main"],
    ["fetch", "origin"],
    ["reset", "--hard", "HEAD~1"],
    ["checkout", "keep"],
    ["checkout", "--", "a.txt"],
    ["switch", "-c", "other"],
    ["rebase", "keep"],
    ["merge", "keep"],
    ["stash"],
    ["stash", "list"],
    ["clean", "-fd"],
    ["tag", "v1"],
    ["cherry-pick", "keep"],
    ["revert", "HEAD"],
    ["am", "/dev/null"],
    ["update-ref", "refs/heads/keep", "HEAD~1"],
    ["symbolic-ref", "HEAD", "refs/heads/keep"],
    ["filter-branch", "-f", "HEAD"],
    ["replace", "HEAD", "HEAD~1"],
    ["notes", "add", "-m", "x"],
    ["worktree", "add", "../elsewhere"],
    ["gc"],
    ["prune"],
    ["remote", "add", "x", "/tmp/x"],
    ["remote", "set-url", "origin", "/tmp/x"],
    ["config", "user.name", "worker"],
    ["config", "--unset", "remote.origin.url"],
    ["config", "--add", "core.hooksPath", "/tmp"],
    ["branch", "new-branch"],
    ["branch", "-D", "keep"],
    ["branch", "-vd", "keep"],
    ["branch", "--delete", "keep"],
    ["branch", "-m", "keep", "moved"],
    ["branch", "-f", "keep", "HEAD~1"],
    ["branch", "--copy", "keep", "copied"],
    ["--git-dir=../../repo/.git", "branch", "-D", "keep"],
    ["-c", "core.hooksPath=/dev/null", "status"],
    ["-c", "url.x.pushInsteadOf=y", "status"],
    ["-c", "alias.ci=commit", "ci", "-m", "x"],
    ["reflog", "expire", "--all"],
]


@pytest.mark.parametrize("args", REFUSED, ids=" ".join)
def test_shim_refuses_and_changes_nothing(shared: Setup, args: list[str]) -> None:
    s = shared
    before = s.fingerprint()
    files = (s.wt / "a.txt").read_text(), (s.wt / "new.txt").read_text()
    res = s.worker(*args)
    assert res.returncode == 1
    assert res.stderr.startswith("bosun: git ") and "is not allowed for workers (" in res.stderr
    assert s.fingerprint() == before
    assert ((s.wt / "a.txt").read_text(), (s.wt / "new.txt").read_text()) == files


ALLOWED = [
    ["status", "--short"],
    ["diff"],
    ["add", "-A"],
    ["rm", "-q", "--cached", "a.txt"],
    ["log", "--oneline", "-3"],
    ["show", "--stat", "HEAD"],
    ["rev-parse", "HEAD"],
    ["ls-files"],
    ["blame", "a.txt"],
    ["grep", "-n", "a", "HEAD"],
    ["restore", "--staged", "."],
    ["branch"],
    ["branch", "-a", "-v"],
    ["branch", "--show-current"],
    ["branch", "--list", "ke*"],
    ["branch", "--contains", "HEAD"],
    ["branch", "--sort", "-committerdate"],
    ["remote"],
    ["remote", "-v"],
    ["remote", "get-url", "origin"],
    ["config", "--get", "remote.origin.url"],
    ["config", "remote.origin.url"],
    ["config", "--list"],
    ["-C", ".", "--no-pager", "log", "-1"],
    ["--version"],
]


@pytest.mark.parametrize("args", ALLOWED, ids=" ".join)
def test_shim_allows_reading_and_staging(shared: Setup, args: list[str]) -> None:
    s = shared
    before = s.fingerprint()
    res = s.worker(*args)
    assert res.returncode == 0, res.stderr
    assert "bosun:" not in res.stderr
    assert s.fingerprint() == before


def test_allowed_commands_do_their_job(s: Setup) -> None:
    assert "a.txt" in s.worker("status", "--short").stdout
    assert "+worker edit" in s.worker("diff").stdout
    assert s.worker("add", "-A").returncode == 0
    assert "new.txt" in s.worker("diff", "--cached", "--name-only").stdout
    assert s.worker("log", "--format=%s").stdout.split() == ["second", "first"]
    assert s.worker("branch", "--show-current").stdout.strip() == "bosun/run1"


@pytest.mark.parametrize(
    "args",
    [
        ["commit", "-qam", "x"],
        ["reset", "--hard", "HEAD~1"],
        ["branch", "-D", "keep"],
        ["branch", "new-branch"],
        ["tag", "v1"],
        ["tag", "-d", "v0"],
        ["stash"],
        ["update-ref", "refs/heads/keep", "HEAD~1"],
        ["checkout", "-b", "escape"],
    ],
    ids=" ".join,
)
def test_hook_stops_ref_updates_by_absolute_path(s: Setup, args: list[str]) -> None:
    before = s.fingerprint()
    res = s.bypass(*args)
    assert res.returncode != 0
    assert "bosun: workers may not change" in res.stderr
    assert s.fingerprint() == before


def test_push_by_absolute_path_is_broken_by_push_instead_of(s: Setup) -> None:
    # pushInsteadOf alone, without the hooks, so this proves the URL rewrite itself.
    env = {
        **os.environ,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": PUSH_BLOCK_KEY,
        "GIT_CONFIG_VALUE_0": "",
    }
    before = s.fingerprint()
    for target in ("origin", str(s.bare), f"file://{s.bare}", os.path.relpath(s.bare, s.wt)):
        res = proc.run_quick([s.real_git, "push", target, "HEAD:refs/heads/pushed"], cwd=s.wt, env=env)
        assert res.returncode != 0
        assert "bosun-push-blocked" in res.stderr
    assert s.fingerprint() == before


def test_push_with_full_guard_env(s: Setup) -> None:
    before = s.fingerprint()
    res = s.bypass("push", "origin", "HEAD:refs/heads/pushed")
    assert res.returncode != 0
    assert s.fingerprint() == before


def test_pre_push_hook_catches_an_explicit_pushurl(s: Setup) -> None:
    # pushInsteadOf is not applied to remote.<name>.pushurl; the pre-push hook still refuses.
    ok(s.repo, "config", "remote.origin.pushurl", str(s.bare))
    before = s.fingerprint()
    res = s.bypass("push", "origin", "HEAD:refs/heads/pushed")
    assert res.returncode != 0
    assert "bosun: git push is not allowed for workers" in res.stderr
    assert s.fingerprint() == before


def test_shim_refuses_switching_the_hooks_off(s: Setup) -> None:
    # -c given to git by absolute path would win over the env config (a known limit); the shim refuses it.
    res = s.worker("-c", "core.hooksPath=/dev/null", "tag", "v1")
    assert res.returncode == 1
    assert "v1" not in ok(s.repo, "tag")
