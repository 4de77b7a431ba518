"""A landing on a branch that has not moved lands the tree that was verified, byte for byte, so it does
not run the verify commands again: the passed verification stands for it, and the run's events say why.
A landing whose branch moved is verified again on the merged result. Observed with a verify command
that counts its own runs in a file outside the repository (the sandbox off, so that it may write there:
this is about what runs, not what it may touch)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import git
from tests.engine.load_support import make_load_repo, task_file

UNCONFINED = 'sandbox = "off"'
COUNT = "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write('ran\\n')\n"


def _approved(cli, tmp_path: Path, repo: Path) -> tuple[str, Path]:
    counter = tmp_path / "runs-of-verify.txt"
    (tmp_path / "count.py").write_text(COUNT)
    task = task_file(tmp_path, 0, extra_verify=(f"{sys.executable} {tmp_path / 'count.py'} {counter}",))
    code, res = cli("delegate", str(task), "--repo", str(repo), "--json")
    assert code == 0 and res["state"] == "verified", res
    code, res = cli("approve", res["id"], "--json")
    assert code == 0 and res["state"] == "approved", res
    return res["id"], counter


def _runs(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def _events(home: Path, run_id: str) -> list[dict]:
    return [json.loads(line) for line in (home / "runs" / run_id / "events.jsonl").read_text().splitlines()]


def test_a_landing_on_an_unmoved_branch_does_not_verify_again(cli, tmp_path, isolated_home):
    repo = make_load_repo(tmp_path / "repo", 1, extra_toml=UNCONFINED)
    run_id, counter = _approved(cli, tmp_path, repo)
    before = _runs(counter)
    assert before >= 1  # the verify command did run, and can be counted

    code, res = cli("integrate", run_id, "--json")

    assert code == 0 and res["state"] == "cleaned", res
    assert _runs(counter) == before
    assert git(repo, "show", "main:src/m0.py") == "VALUE = 1\n"
    skipped = [e for e in _events(isolated_home, run_id) if e["type"] == "reverify_skipped"]
    assert len(skipped) == 1 and "has not moved" in skipped[0]["reason"], skipped
    checked = json.loads((isolated_home / "runs" / run_id / "reverification.json").read_text())
    assert checked["passed"] and checked["reused"] == skipped[0]["reason"]
    assert git(repo, "rev-parse", f"{checked['commit']}^{{tree}}") == git(repo, "rev-parse", "main^{tree}")


def test_a_landing_whose_branch_moved_verifies_the_merged_result_again(cli, tmp_path, isolated_home):
    repo = make_load_repo(tmp_path / "repo", 1, extra_toml=UNCONFINED)
    run_id, counter = _approved(cli, tmp_path, repo)
    before = _runs(counter)
    (repo / "other.txt").write_text("the user was here\n")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-qm", "mine")

    code, res = cli("integrate", run_id, "--json")

    assert code == 0 and res["state"] == "cleaned", res
    assert _runs(counter) == before + 1
    assert not [e for e in _events(isolated_home, run_id) if e["type"] == "reverify_skipped"]
    checked = json.loads((isolated_home / "runs" / run_id / "reverification.json").read_text())
    assert checked["passed"] and "reused" not in checked
    assert git(repo, "show", f"{checked['commit']}:other.txt") == "the user was here\n"
