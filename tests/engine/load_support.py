"""A repository for tests under load: ``count`` modules, each with its own one-line bug, so that
tasks fixing them change different files and their landings never conflict.

Module ``src/m<i>.py`` holds ``VALUE = 0  # bug``; its fix is ``VALUE = <i + 1>``. The worker is
``tests/workers/plan_worker.py ok`` (a real process through the ``command`` adapter), told by the
task's prompt how long to take and what to write. The verify command is ``tests/check.py`` of the
repository, which takes ``CHECK_S`` seconds (a window a test can hit) and fails until the fix is in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, git

WORKER = ROOT / "tests" / "workers" / "plan_worker.py"
PY = sys.executable
CHECK_S = 0.3

CHECK = f'''import importlib
import sys
import time

sys.path.insert(0, "src")
time.sleep({CHECK_S})
name, want = sys.argv[1], int(sys.argv[2])
got = importlib.import_module(name).VALUE
print(f"{{name}}.VALUE = {{got}}, want {{want}}")
sys.exit(0 if got == want else 1)
'''

TEST_ALL = '''import importlib
import sys

sys.path.insert(0, "src")
COUNT = {count}


def test_every_value_is_fixed():
    for i in range(COUNT):
        assert importlib.import_module(f"m{{i}}").VALUE == i + 1
'''


def make_load_repo(path: Path, count: int, cap: int = 4, extra_toml: str = "") -> Path:
    path.mkdir(parents=True)
    (path / "src").mkdir()
    (path / "tests").mkdir()
    for i in range(count):
        (path / "src" / f"m{i}.py").write_text("VALUE = 0  # bug\n")
    (path / "tests" / "check.py").write_text(CHECK)
    (path / "tests" / "test_all.py").write_text(TEST_ALL.format(count=count))
    (path / "README.md").write_text("# load test repo\n")
    (path / "staged.txt").write_text("committed\n")
    (path / ".gitignore").write_text("__pycache__/\n*.pyc\n.pytest_cache/\n")
    cmd = json.dumps([PY, str(WORKER), "ok"])
    (path / "bosun.toml").write_text(
        f'default_profile = "fixer"\nmax_concurrent_runs = {cap}\n{extra_toml}\n'
        f'[profiles.fixer]\nadapter = "command"\ncommand = {cmd}\n'
    )
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def dirty_the_user_tree(repo: Path) -> None:
    """Work of the user's that no landing may touch: an unstaged edit, a staged one, an untracked file."""
    (repo / "README.md").write_text("# load test repo\n\nmy notes, not committed\n")
    (repo / "staged.txt").write_text("staged by me\n")
    git(repo, "add", "staged.txt")
    (repo / "untracked.txt").write_text("mine alone\n")


def task_file(tmp: Path, i: int, sleep_s: float = 0.0, name: str | None = None,
              extra_verify: tuple[str, ...] = ()) -> Path:
    """The task that fixes module ``i``, its worker ending ``sleep_s`` seconds after the fix."""
    doc = {
        "title": f"Fix m{i}",
        "prompt": f"m{i}.VALUE must be {i + 1}.\n@write src/m{i}.py VALUE = {i + 1}\n@sleep {sleep_s}\n",
        "verify": [f"{PY} tests/check.py m{i} {i + 1}", *extra_verify],
        "locked": ["tests/**"],
        "timeout_s": 60,
    }
    path = tmp / (name or f"task-{i}.json")
    path.write_text(json.dumps(doc))
    return path


def bosun_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.update(extra)
    return env


def start_bosun(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A bosun process of its own session (a test can signal it alone), its output captured."""
    return subprocess.Popen([PY, "-m", "bosun", *args], env=env or bosun_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, dict, str]:
    """The exit code, the one JSON object on stdout (``{}`` when there is none) and stderr."""
    out, err = proc.communicate(timeout=timeout)
    try:
        doc = json.loads(out) if out.strip() else {}
    except json.JSONDecodeError:
        doc = {"unparsed": out}
    return proc.returncode, doc, err


def landings_of(repo: Path, branch: str = "main") -> dict[str, int]:
    """How many commits on ``branch`` carry each run's change (the ``Bosun-Run`` trailer of a landing
    commit; merges that bring one in say ``Merge bosun run``)."""
    out = git(repo, "log", "--format=%(trailers:key=Bosun-Run,valueonly)", branch)
    counts: dict[str, int] = {}
    for line in out.split():
        counts[line] = counts.get(line, 0) + 1
    return counts


def registered_worktrees(repo: Path, settled: bool = True) -> list[str]:
    """``git worktree list`` of ``repo``. While bosun adds a worktree, git may fail to read its half-made
    entry (``failed to read .../commondir``): a test polling then passes ``settled=False`` (an empty list)."""
    res = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=repo, capture_output=True, text=True)
    if res.returncode != 0 and not settled:
        return []
    assert res.returncode == 0, res.stderr
    out = res.stdout
    return [ln[len("worktree "):] for ln in out.splitlines() if ln.startswith("worktree ")]


def wait_until(check, timeout: float = 60, step: float = 0.05):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(step)
    raise AssertionError("timed out waiting")
