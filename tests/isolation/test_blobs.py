"""bosun.isolation.blobs: one batch process reads what a process per file read, byte for byte."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from bosun import proc
from bosun.isolation.blobs import BlobReader

IDENTITY = "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"


def git(cwd: Path, *args: str) -> bytes:
    res = proc.run_quick(["git", *args], cwd=cwd, text=False)
    assert res.returncode == 0, res.stderr
    return res.stdout  # type: ignore[return-value]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cfg = tmp_path / "gitconfig"
    cfg.write_text(IDENTITY)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    r = tmp_path / "repo"
    (r / "dir with space").mkdir(parents=True)
    (r / "text.py").write_text("print('hi')\n")
    (r / "empty").write_bytes(b"")
    (r / "no newline at end").write_bytes(b"last line")
    (r / "dir with space" / "ünï ✓.txt").write_text("unicode\n")
    (r / "binary.bin").write_bytes(random.Random(1).randbytes(300_000) + b"\n")
    (r / "looks like a header").write_bytes(b"0123456789abcdef0123456789abcdef01234567 blob 5\nfake\n")
    (r / "new\nline").write_text("a name with a newline\n")
    (r / "link").symlink_to("text.py")
    git(r, "init", "-q")
    git(r, "add", "-A")
    git(r, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},vendored")
    git(r, "commit", "-qm", "base")
    return r


def test_every_file_reads_as_git_cat_file_blob_reads_it(repo: Path) -> None:
    names = [os.fsdecode(n) for n in git(repo, "ls-tree", "-r", "-z", "--name-only", "HEAD").split(b"\0") if n]
    files = [n for n in names if n != "vendored"]
    assert len(files) == 8
    with BlobReader(repo, os.environ) as blobs:
        for name in files * 2:  # twice: the stream stays in step after every kind of object
            assert blobs.read("HEAD", name) == git(repo, "cat-file", "blob", f"HEAD:{name}"), name
        tree = git(repo, "rev-parse", "HEAD^{tree}").decode().strip()
        assert blobs.read(tree, "text.py") == b"print('hi')\n"


def test_what_is_not_a_file_reads_as_none_and_the_next_read_still_works(repo: Path) -> None:
    with BlobReader(repo, os.environ) as blobs:
        for name in ("missing.txt", "dir with space", "vendored", "text.py/inside", ""):
            assert blobs.read("HEAD", name) is None, name
            assert blobs.read("HEAD", "text.py") == b"print('hi')\n"
        assert blobs.read("no-such-rev", "text.py") is None
        assert blobs.read("HEAD", "text.py") == b"print('hi')\n"


def test_a_batch_process_that_dies_is_replaced(repo: Path) -> None:
    with BlobReader(repo, os.environ) as blobs:
        assert blobs.read("HEAD", "empty") == b""
        batch = blobs._proc
        assert batch is not None
        batch.kill()
        batch.wait()
        assert blobs.read("HEAD", "text.py") == b"print('hi')\n"
        assert blobs.read("HEAD", "no newline at end") == b"last line"
    assert blobs._proc is None  # closed with the block


def test_a_blob_is_read_by_its_object_id_too(repo: Path) -> None:
    oid = git(repo, "rev-parse", "HEAD:text.py").decode().strip()
    tree = git(repo, "rev-parse", "HEAD^{tree}").decode().strip()
    with BlobReader(repo, os.environ) as blobs:
        assert blobs.read_object(oid) == b"print('hi')\n"
        assert blobs.read_object(tree) is None  # a tree is not a file
        assert blobs.read_object("0" * 40) is None
