"""What bosun leaves on disk is what docs/architecture.md says ("Data on disk"), and every JSON
document it writes there carries ``format_version``. Read from real runs, so neither can drift."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import ROOT
from tests.e2e.test_plans import check, make_plan_repo, task, write_plan

DOC = (ROOT / "docs" / "architecture.md").read_text()
LAYOUT = DOC.split("## Data on disk", 1)[1].split("```", 2)[1]
# Under a run's worker HOME live the worker CLI's own files, in its own formats.
FOREIGN = re.compile(r"^runs/[^/]+/(home|tmp|guard)/")


def _generic(rel: str) -> str:
    """A path with its run id, plan id, task id and hashes replaced by the names the doc uses."""
    rel = re.sub(r"\bp-\d{8}-\d{6}-[0-9a-f]{6}\b", "<id>", rel)
    rel = re.sub(r"\b\d{8}-\d{6}-[0-9a-f]{6}\b", "<id>", rel)
    rel = re.sub(r"\b[0-9a-f]{64}\b", "<sha256>", rel)
    rel = re.sub(r"\.land-[0-9a-f]+\.lock$", ".land-<key>.lock", rel)
    return re.sub(r"verify-wave-\d+", "verify-wave-<n>", rel)


def _names(home: Path) -> set[str]:
    """Each file's and directory's name (the last part of its generic path) outside foreign trees."""
    out = set()
    for path in home.rglob("*"):
        rel = _generic(str(path.relative_to(home)))
        if FOREIGN.match(rel + "/") and rel.count("/") > 2:
            continue
        if "/view.git/" in rel or "/worktrees/" in "/" + rel:
            continue  # git's own layout inside bosun's private git dir, and the worker's checkout
        out.add(rel.rsplit("/", 1)[-1] + ("/" if path.is_dir() else ""))
    return out


def _run_everything(cli, repo: Path, task_file: Path, tmp_path: Path) -> None:
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--auto-approve", "--json")
    assert code == 0, res
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 3, res  # the fix is merged already: nothing left to change, and the run stays
    prepo = make_plan_repo(tmp_path / "prepo")
    plan = write_plan(tmp_path / "p.json", [task("a", "@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt")])],
                      verify=[check("out/a.txt")])
    code, res = cli("plan", "run", str(plan), "--repo", str(prepo), "--no-merge", "--json")
    assert code == 0, res


def test_every_json_document_on_disk_carries_format_version(cli, repo, task_file, tmp_path, isolated_home):
    _run_everything(cli, repo, task_file, tmp_path)
    checked = []
    for path in sorted(isolated_home.rglob("*")):
        rel = str(path.relative_to(isolated_home))
        if not path.is_file() or FOREIGN.match(rel) or path.suffix not in (".json", ".lock"):
            continue
        if path.suffix == ".lock" and path.name.startswith(".") and path.stat().st_size == 0:
            continue  # an flock target: held, never written
        doc = json.loads(path.read_text("utf-8"))
        assert isinstance(doc, dict) and "format_version" in doc, rel
        checked.append(rel)
    assert len(checked) > 10, checked


def test_data_on_disk_names_everything_bosun_leaves(cli, repo, task_file, tmp_path, isolated_home):
    _run_everything(cli, repo, task_file, tmp_path)
    missing = sorted(n for n in _names(isolated_home) if n not in LAYOUT and n.rstrip("/") not in LAYOUT)
    assert not missing, f"add these to the 'Data on disk' section of docs/architecture.md: {missing}"

