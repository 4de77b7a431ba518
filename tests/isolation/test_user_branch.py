"""Moving a user's branch wherever it is checked out: the primary checkout, another worktree of the
repository (`git worktree add`), or nowhere. The checkout moves with the branch, its uncommitted work
in other files kept; where that cannot be done safely, the move is refused naming the worktree, and
nothing changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bosun.core.errors import Conflict
from bosun.isolation.user_branch import check_move, holder_of, move_branch
from tests.conftest import git


@pytest.fixture
def two_checkouts(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """``main`` checked out in a second worktree while the primary checkout is on ``side``; ``new`` is
    a commit on ``main`` that changes a.py."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("A = 1\n")
    (repo / "b.py").write_text("B = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    old = git(repo, "rev-parse", "HEAD").strip()
    (repo / "a.py").write_text("A = 2\n")
    git(repo, "commit", "-qam", "a is 2")
    new = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "reset", "-q", "--hard", old)  # ``new`` is a commit no ref points at yet
    git(repo, "switch", "-qc", "side")
    other = tmp_path / "wt-main"
    git(repo, "worktree", "add", "-q", str(other), "main")
    return repo, other, old, new


def test_the_branch_checked_out_in_another_worktree_moves_with_its_files(two_checkouts):
    repo, other, old, new = two_checkouts
    (other / "b.py").write_text("B = 'mine'\n")  # the user's edit there, in a file the move leaves alone
    (other / "notes.txt").write_text("untracked\n")
    holder = move_branch(repo, "main", old, new, message="test")
    assert holder is not None and holder.path.resolve() == other.resolve() and not holder.primary
    assert git(repo, "rev-parse", "main").strip() == new
    assert (other / "a.py").read_text() == "A = 2\n"
    # Only the user's own work shows in that worktree: no staged undo of the change.
    assert sorted(git(other, "status", "--porcelain").splitlines()) == [" M b.py", "?? notes.txt"]
    assert (other / "b.py").read_text() == "B = 'mine'\n"
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "side"
    assert git(repo, "status", "--porcelain") == ""


def test_an_overlap_in_that_worktree_refuses_naming_it_and_changes_nothing(two_checkouts):
    repo, other, old, new = two_checkouts
    (other / "a.py").write_text("A = 'mine'\n")
    with pytest.raises(Conflict) as err:
        move_branch(repo, "main", old, new, message="test", again="run `bosun integrate x` again")
    assert err.value.code == "OVERLAPS_UNCOMMITTED"
    assert str(other) in err.value.message and "a.py" in err.value.message
    assert str(other) in err.value.hint and "bosun integrate x" in err.value.hint
    assert git(repo, "rev-parse", "main").strip() == old
    assert (other / "a.py").read_text() == "A = 'mine'\n"


def test_a_branch_being_rebased_or_in_a_missing_worktree_is_refused(two_checkouts, tmp_path):
    repo, other, old, new = two_checkouts
    git(other, "switch", "-q", "--detach")
    admin = Path(git(other, "rev-parse", "--absolute-git-dir").strip())
    (admin / "rebase-merge").mkdir()
    (admin / "rebase-merge" / "head-name").write_text("refs/heads/main\n")
    with pytest.raises(Conflict) as err:
        check_move(repo, "main", old, new)
    assert "being rebased" in err.value.message and str(other) in err.value.message
    shutil.rmtree(admin / "rebase-merge")
    assert holder_of(repo, "main") is None
    git(other, "switch", "-q", "main")
    moved = tmp_path / "elsewhere"
    other.rename(moved)
    with pytest.raises(Conflict) as err:
        move_branch(repo, "main", old, new, message="test")
    assert "missing" in err.value.message and "git worktree prune" in err.value.hint
    assert git(repo, "rev-parse", "main").strip() == old


def test_a_branch_checked_out_nowhere_moves_only_its_ref(two_checkouts):
    repo, other, old, new = two_checkouts
    git(other, "switch", "-q", "--detach")
    assert move_branch(repo, "main", old, new, message="test") is None
    assert git(repo, "rev-parse", "main").strip() == new
    assert git(other, "status", "--porcelain") == "" and (other / "a.py").read_text() == "A = 1\n"


def test_the_primary_checkout_moves_as_before(two_checkouts):
    repo, other, old, new = two_checkouts
    git(other, "switch", "-q", "--detach")
    git(repo, "switch", "-q", "main")
    holder = move_branch(repo, "main", old, new, message="test")
    assert holder is not None and holder.primary
    assert (repo / "a.py").read_text() == "A = 2\n" and git(repo, "status", "--porcelain") == ""
