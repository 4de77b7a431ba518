"""A cross-review round's own overhead: its wall time beyond the reviewer CLI's process.

In one run, side by side (alternating, so the machine's drift hits both alike), ``bosun delegate``
in a fresh process on a generated repository of 100 files, with a worker that appends a line to
README.md, and a reviewer that reads its prompt and answers a one-finding JSON report:

* **with review** (``review: {profile: rev, rounds: 1}``): the round's ``duration_s`` (bosun's
  ``review_once`` plus recording it) minus the reviewer process's own ``wall_s``, from
  ``cross_review.json``. This is the target: at most 0.3 s.
* **paired**: the wall time of the delegation with review minus the one without, minus the
  reviewer's process time: everything the review adds to a delegation, bosun's share only.

BOSUN_HOME, the user config and the git config are temp files; nothing outside the temp dir is
touched.

    .venv/bin/python bench/review_round.py [--pairs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.3
WORKER = ["sh", "-c", "cat >/dev/null; echo 'touched by the benchmark' >> README.md"]
ANSWER = json.dumps({"findings": [{"severity": "P3", "path": "README.md", "line": 1, "claim": "a nit",
                                   "suggested_fix": "none"}], "summary": "fine"})
REVIEWER = ["sh", "-c", "cat >/dev/null; printf '%s\\n' '" + ANSWER + "'"]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    for i in range(100):
        d = repo / f"pkg{i % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i}.py").write_text(f"VALUE_{i} = {i}\n")
    (repo / "README.md").write_text("# bench\n")
    toml = ['default_profile = "touch"', "", "[profiles.touch]", 'adapter = "command"',
            f"command = {json.dumps(WORKER)}", "", "[profiles.rev]", 'adapter = "command"',
            f"command = {json.dumps(REVIEWER)}", ""]
    (repo / "bosun.toml").write_text("\n".join(toml))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    return repo


def delegate(repo: Path, task: Path, env: dict[str, str]) -> tuple[float, dict]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "bosun", "delegate", str(task), "--repo", str(repo), "--json"],
                          env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t0
    out = json.loads(proc.stdout)
    if "id" not in out:
        raise SystemExit(f"delegate failed: {proc.stdout} {proc.stderr}")
    return wall, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bosun-review-bench-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "BOSUN_HOME": str(root / "home"), "BOSUN_CONFIG": str(root / "none.toml"),
               "GIT_CONFIG_GLOBAL": str(root / "gitconfig"), "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x",
               "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x", "PYTHONPATH": str(ROOT / "src")}
        repo = make_repo(root)
        base = {"title": "bench", "prompt": "append a line", "verify": ["true"], "proof": "not-required"}
        plain, reviewed = root / "plain.json", root / "reviewed.json"
        plain.write_text(json.dumps(base))
        reviewed.write_text(json.dumps({**base, "review": {"profile": "rev", "rounds": 1}}))
        delegate(repo, plain, env)  # warm the caches (pyc, git) once, uncounted
        own, paired, process = [], [], []
        for _ in range(args.pairs):
            subprocess.run(["sync"], check=False)
            time.sleep(0.3)
            wall_plain, _ = delegate(repo, plain, env)
            subprocess.run(["sync"], check=False)
            time.sleep(0.3)
            wall_rev, out = delegate(repo, reviewed, env)
            doc = json.loads((root / "home" / "runs" / out["id"] / "cross_review.json").read_text())
            (rnd,) = doc["rounds"]
            assert rnd["status"] == "findings" and out["verdict"]["outcome"] == "landable", (rnd, out["verdict"])
            proc_s = float(rnd["reviewer_process_s"] or 0.0)
            own.append(rnd["duration_s"] - proc_s)
            paired.append(wall_rev - wall_plain - proc_s)
            process.append(proc_s)
    med = statistics.median
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"pairs: {args.pairs}")
    print(f"reviewer process wall: median {med(process):.3f} s")
    print(f"round's own time beyond the reviewer process: median {med(own):.3f} s, "
          f"min {min(own):.3f}, max {max(own):.3f}  (target <= {TARGET_S} s: {'met' if med(own) <= TARGET_S else 'NOT met'})")
    print(f"paired: delegate with review - without - reviewer process: median {med(paired):.3f} s, "
          f"min {min(paired):.3f}, max {max(paired):.3f}")


if __name__ == "__main__":
    main()
