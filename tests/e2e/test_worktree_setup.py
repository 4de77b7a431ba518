"""Worktree set-up: included ignored files, read-only links, set-up commands, ports.

A sample repository with ignored ``node_modules``, ``.venv`` and ``.env`` made here; real git, real
runs through the ``command`` adapter; hostile workers with the kernel sandbox on and off.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from bosun.sandbox import probe
from tests.conftest import ROOT, git, make_repo, task_yaml

SECRET = "topsecretvalue16"
pytestmark = pytest.mark.slow

ENVWORKER = ROOT / "tests" / "workers" / "envworker.py"

CHECK_ENV = '''import os, pathlib, sys
problems = []
def expect(path, text):
    p = pathlib.Path(path)
    got = p.read_text() if p.exists() else None
    if got != text:
        problems.append(f"{path}: {got!r}")
expect("node_modules/pkg/index.js", "module.exports = 'ok';\\n")
expect(".env", "TOKEN=user\\n")
expect("build/out.txt", "made by setup secret=yes\\n")
if not pathlib.Path(".venv/marker").exists() or pathlib.Path(".venv/evil.pth").exists():
    problems.append(".venv is not the user's")
if pathlib.Path("node_modules/pkg/evil.js").exists():
    problems.append("node_modules/pkg/evil.js")
if not os.environ.get("BOSUN_PORT"):
    problems.append("no BOSUN_PORT")
print("\\n".join(problems) or "environment as set up")
sys.exit(1 if problems else 0)
'''

SETUP = (
    "import os, pathlib; pathlib.Path('build').mkdir(); "
    "pathlib.Path('build/out.txt').write_text('made by setup secret=' + "
    "('yes' if len(os.environ.get('SETUP_SECRET', '')) == 16 else 'no') + chr(10)); "
    "print('the secret is', os.environ.get('SETUP_SECRET')); "
    "pathlib.Path('gen').mkdir(); pathlib.Path('gen/cache.txt').write_text('port=' + os.environ.get('BOSUN_PORT', ''))"
)


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def setup_repo(path: Path, sandbox: str = "auto", setup: list[str] | None = None, extra: str = "") -> Path:
    repo = make_repo(path)
    with (repo / ".gitignore").open("a") as fh:
        fh.write("node_modules/\n.venv/\n.env\nbuild/\n")
    (repo / "check_env.py").write_text(CHECK_ENV)
    lines = [f'sandbox = "{sandbox}"', (repo / "bosun.toml").read_text()]
    for mode in ("record", "hostile", "slow_record"):
        lines += [f"[profiles.env_{mode}]", 'adapter = "command"',
                  f"command = {_toml_list([sys.executable, str(ENVWORKER), mode])}", ""]
    setup_argv = setup if setup is not None else [sys.executable, "-c", SETUP]
    lines += ["[worktree]", 'include = [".env"]', 'symlink = ["node_modules", ".venv"]',
              f"setup = [{{ run = {_toml_list(setup_argv)}, timeout_s = 60, secrets = [\"SETUP_SECRET\"] }}]",
              "ports = 5", extra]
    (repo / "bosun.toml").write_text("\n".join(lines) + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "set-up config")
    # The user's ignored environment, made by the test.
    (repo / "node_modules" / "pkg").mkdir(parents=True)
    (repo / "node_modules" / "pkg" / "index.js").write_text("module.exports = 'ok';\n")
    (repo / ".venv").mkdir()
    (repo / ".venv" / "marker").write_text("venv\n")
    (repo / ".env").write_text("TOKEN=user\n")
    return repo


def env_task(tmp_path: Path) -> Path:
    return task_yaml(tmp_path / "task.json",
                     verify=[f"{sys.executable} -m pytest -q tests", f"{sys.executable} check_env.py"])


def _changed_paths(res: dict) -> list[str]:
    import re

    diff = (Path(res["run_dir"]) / "diff.patch").read_text()
    return sorted(re.findall(r"^diff --git a/(\S+) b/", diff, flags=re.M))


def _facts(res: dict) -> dict:
    return json.loads((Path(res["worktree"]) / "facts.json").read_text())


@pytest.fixture
def env_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SETUP_SECRET", SECRET)
    return setup_repo(tmp_path / "repo")


@pytest.mark.parametrize("reads", ["all", "worktree"])
def test_worker_and_verification_get_the_same_set_up(cli, env_repo, tmp_path, reads):
    if reads == "worktree":
        if probe().landlock_abi == 0:
            pytest.skip("this kernel has no Landlock")
        # Reads confined to the worktree: what set-up linked in stays readable.
        (env_repo / "bosun.toml").write_text('sandbox_reads = "worktree"\n' + (env_repo / "bosun.toml").read_text())
        git(env_repo, "commit", "-qam", "private reads")
    code, res = cli("delegate", str(env_task(tmp_path)), "--repo", str(env_repo), "--profile", "env_record", "--json")
    assert code == 0, res
    assert res["state"] == "verified", res["gates"]
    facts = _facts(res)
    assert facts["node_modules"] == "module.exports = 'ok';\n"
    assert facts["env_file"] == "TOKEN=user\n" and facts["venv_marker"] is True
    assert facts["setup_output"] == "made by setup secret=yes\n"  # the secret reached the set-up ...
    assert facts["setup_secret"] is None  # ... and never the worker
    first, last = (int(p) for p in facts["port_range"].split("-"))
    assert int(facts["port"]) == first and last - first == 4
    # Set-up output, links and copies are environment: never in the change.
    assert res["files_changed"] == 2  # src/calc.py and the worker's facts.json
    assert _changed_paths(res) == ["facts.json", "src/calc.py"]
    wt = Path(res["worktree"])
    assert (wt / "node_modules").is_symlink() and (wt / "gen").is_symlink()
    assert (wt / "gen" / "cache.txt").read_text() == f"port={first}"
    env = json.loads((Path(res["run_dir"]) / "environment.json").read_text())
    assert env["outputs"] == ["build", "gen"] and env["copies"] == [".env"]
    assert SECRET not in (Path(res["run_dir"]) / "environment.json").read_text()


@pytest.mark.skipif(probe().landlock_abi == 0, reason="this kernel has no Landlock")
def test_a_sandboxed_worker_cannot_write_through_a_link(cli, env_repo, tmp_path):
    code, res = cli("delegate", str(env_task(tmp_path)), "--repo", str(env_repo), "--profile", "env_hostile",
                    "--json")
    facts = _facts(res)
    assert facts["through_link"].startswith("refused") and facts["new_in_link"].startswith("refused")
    assert facts["through_output"].startswith("refused")
    assert (env_repo / "node_modules" / "pkg" / "index.js").read_text() == "module.exports = 'ok';\n"
    assert not (env_repo / "node_modules" / "pkg" / "evil.js").exists()
    # What it could do inside its worktree (edit its .env copy, replace the .venv link) was put back
    # before verification, and is not part of the change.
    assert code == 0 and res["state"] == "verified", res["gates"]
    assert res["verification"]["passed"] is True
    assert _changed_paths(res) == ["facts.json", "src/calc.py"]
    assert (env_repo / ".env").read_text() == "TOKEN=user\n"


def test_without_the_sandbox_a_write_through_a_link_is_refused_and_not_verified(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SETUP_SECRET", SECRET)
    repo = setup_repo(tmp_path / "repo", sandbox="off")
    code, res = cli("delegate", str(env_task(tmp_path)), "--repo", str(repo), "--profile", "env_hostile", "--json")
    facts = _facts(res)
    assert facts["through_link"] == "written"  # nothing stops it without the kernel sandbox ...
    assert code == 3 and res["state"] == "rejected"
    gate = next(g for g in res["gates"] if g["code"] == "ENVIRONMENT_CHANGED")
    assert gate["ok"] is False and "node_modules" in gate["detail"]
    assert res["verification"]["commands"] == []  # ... but nothing is verified in a changed environment
    assert _changed_paths(res) == ["facts.json", "src/calc.py"]


def test_two_parallel_runs_get_different_ports(env_repo, tmp_path):
    from tests.conftest import run_bosun

    task = env_task(tmp_path)
    results: list[dict] = []

    def one() -> None:
        proc = run_bosun("delegate", str(task), "--repo", str(env_repo), "--profile", "env_slow_record", "--json",
                         "--wait", env={"SETUP_SECRET": SECRET})
        results.append(json.loads(proc.stdout))

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r["state"] for r in results] == ["verified", "verified"], results
    ranges = [_facts(r)["port_range"] for r in results]
    (a1, a2), (b1, b2) = (tuple(int(p) for p in r.split("-")) for r in ranges)
    assert a2 < b1 or b2 < a1, ranges


def test_a_failing_or_tracked_file_changing_set_up_stops_the_run_before_the_worker(cli, tmp_path):
    repo = setup_repo(tmp_path / "slow", setup=[sys.executable, "-c", "import time; time.sleep(30)"],
                      extra="")
    text = (repo / "bosun.toml").read_text().replace("timeout_s = 60", "timeout_s = 0.5")
    (repo / "bosun.toml").write_text(text)
    git(repo, "commit", "-qam", "short timeout")
    code, res = cli("delegate", str(env_task(tmp_path)), "--repo", str(repo), "--profile", "env_record", "--json")
    assert code != 0 and res["error"]["code"] == "SETUP_FAILED" and "timed out" in res["error"]["message"]

    repo2 = setup_repo(tmp_path / "tracked", setup=[sys.executable, "-c",
                                                    "open('src/calc.py', 'a').write('# set-up was here')"])
    code, res = cli("delegate", str(env_task(tmp_path)), "--repo", str(repo2), "--profile", "env_record", "--json")
    assert code != 0 and res["error"]["code"] == "SETUP_FAILED" and "src/calc.py" in res["error"]["message"]


def test_worktreeinclude_and_a_tasks_own_set_up(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SETUP_SECRET", SECRET)
    repo = setup_repo(tmp_path / "repo")
    with (repo / ".gitignore").open("a") as fh:
        fh.write("local/\n*.txt\n*.log\nconf/\n")
    (repo / ".worktreeinclude").write_text("# local settings\nlocal\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "worktreeinclude")
    (repo / "local").mkdir()
    (repo / "local" / "settings.json").write_text("{}\n")
    (repo / "notes.txt").write_text("ignored, matches the task's include\n")
    (repo / "debug.log").write_text("ignored, matches no include: not copied\n")
    (repo / "conf").mkdir()
    (repo / "conf" / "a.json").write_text("{}\n")
    (repo / "conf" / "b.yaml").write_text("b: 1\n")
    task = task_yaml(tmp_path / "t.json", verify=[f"{sys.executable} -m pytest -q tests"],
                     worktree={"include": ["*.txt", "conf/*.json"], "ports": 3})
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "env_record", "--json")
    assert code == 0, res
    wt = Path(res["worktree"])
    assert (wt / "local" / "settings.json").read_text() == "{}\n"
    assert (wt / "notes.txt").is_file() and not (wt / "debug.log").exists()
    assert (wt / "conf" / "a.json").is_file() and not (wt / "conf" / "b.yaml").exists()
    first, last = (int(p) for p in _facts(res)["port_range"].split("-"))
    assert last - first == 2
