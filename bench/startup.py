"""Startup time of the read-only CLI paths: `bosun --help`, `bosun show RUN --json`, `bosun list --json`,
and the verbs that show settings or totals: `workers`, `models`, `pool status` and `savings` (``--json``).

"Cold" means a fresh process each time, not a cold disk cache: the first run is discarded (hyperfine
``--warmup 1``, or the fallback loop's first iteration) so the page cache holds the interpreter, the
venv and bosun's .pyc files. Bytecode is cached under the temp dir (PYTHONPYCACHEPREFIX), as it is
next to the sources on a normal install; PYTHONDONTWRITEBYTECODE is dropped from the
environment. ``python -c pass`` with the same interpreter is the floor.

The target is relative, so that one run on any machine decides it: each bosun command's median may
be at most ``TARGET_OVER_FLOOR_MS`` above the floor's median measured in the same run; the ratio to
the floor is reported too.

Uses hyperfine (``--shell=none``) when it is installed, else a loop of subprocess runs (median of at
least 20) that takes the commands in turn, so a change of load hits them all alike. Run on its own:
``.venv/bin/python bench/startup.py [--runs 30] [--python-loop]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_OVER_FLOOR_MS = 30.0  # a bosun command's median minus `python -c pass`'s median, same run
FLOOR = "python -c pass"
MIN_RUNS = 20


def bosun_argv() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m bosun``."""
    script = Path(sys.executable).parent / "bosun"
    return [str(script)] if script.exists() else [sys.executable, "-m", "bosun"]


def isolated_env(tmp: Path) -> dict[str, str]:
    """The benchmark's environment: its own BOSUN_HOME, no user config, a fixed git identity."""
    env = dict(os.environ)
    gitconfig = tmp / "gitconfig"
    if not gitconfig.exists():
        gitconfig.write_text("[user]\n\tname = bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    env.update(
        BOSUN_HOME=str(tmp / "bosun-home"),
        BOSUN_CONFIG=str(tmp / "no-user-config.toml"),
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
    )
    for key in ("PARENT_AGENT", "BOSUN_PROFILE", "BOSUN_MAX_CONCURRENT_RUNS"):
        env.pop(key, None)
    # Bytecode is cached as on any normal install (the first, discarded run writes it), but in the
    # temp dir: nothing is written next to the sources. An inherited PYTHONDONTWRITEBYTECODE would
    # make every run recompile all of bosun.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def seed_runs(tmp: Path, env: dict[str, str], count: int = 3) -> str:
    """A tiny repository and ``count`` delegated runs, so `show` and `list` have something to read.

    `workers`, `models` and `pool status` validate the repository's settings on their first, discarded
    run and read them from the settings cache after that, as they do between two edits of the config."""
    repo = tmp / "startup-repo"
    repo.mkdir()
    (repo / "README.md").write_text("# startup fixture\n")
    (repo / "bosun.toml").write_text('[profiles.noop]\nadapter = "command"\ncommand = ["true"]\n')
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    task = tmp / "startup-task.json"
    task.write_text(json.dumps({"title": "startup fixture", "prompt": "nothing", "verify": ["true"]}))
    run_id = ""
    for _ in range(count):
        res = subprocess.run(
            [*bosun_argv(), "delegate", str(task), "--profile", "noop", "--json", "--repo", str(repo)],
            env=env, capture_output=True, text=True, check=False,
        )
        run_id = json.loads(res.stdout)["id"]
    return run_id


def _hyperfine(cmds: dict[str, list[str]], env: dict[str, str], runs: int, tmp: Path) -> dict[str, dict]:
    out = tmp / "hyperfine.json"
    argv = ["hyperfine", "--shell=none", "--warmup", "1", "--runs", str(runs), "--style", "none",
            "--export-json", str(out)]
    for name, cmd in cmds.items():
        argv += ["--command-name", name, shlex.join(cmd)]
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    results = json.loads(out.read_text())["results"]
    return {r["command"]: _stats([t * 1000 for t in r["times"]]) for r in results}


def _loop(cmds: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, dict]:
    """Wall time and CPU time (user + sys, from wait4) of each run. On a busy machine the wall time
    mostly measures the wait for a core; the CPU time is what the command itself costs."""
    wall: dict[str, list[float]] = {name: [] for name in cmds}
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    for i in range(runs + 1):
        for name, cmd in cmds.items():  # in turn: the floor and each command see the same load
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, _, usage = os.wait4(proc.pid, 0)
            proc.returncode = 0  # reaped by wait4
            elapsed = (time.perf_counter() - t0) * 1000
            if i:  # the first round only warms the page cache
                wall[name].append(elapsed)
                cpu[name].append((usage.ru_utime + usage.ru_stime) * 1000)
    return {name: {**_stats(wall[name]), "cpu_median_ms": statistics.median(cpu[name])} for name in cmds}


def _stats(times_ms: list[float]) -> dict:
    return {
        "median_ms": statistics.median(times_ms),
        "min_ms": min(times_ms),
        "mean_ms": statistics.fmean(times_ms),
        "stdev_ms": statistics.stdev(times_ms) if len(times_ms) > 1 else 0.0,
        "runs": len(times_ms),
    }


def import_costs(cmd: list[str], env: dict[str, str], top: int = 15) -> list[tuple[str, float, int]]:
    """The ``top`` slowest imports of one run of ``cmd`` under ``-X importtime``: (module, cumulative ms, depth).

    Only the first two levels of the import tree are kept, so a parent and its children are not all
    listed; depth 0 is a top-level import.
    """
    rest = cmd[1:] if cmd[0] == sys.executable else cmd
    res = subprocess.run([sys.executable, "-X", "importtime", *rest], env=env, capture_output=True, text=True, check=False)
    rows = []
    for line in res.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)", line)
        if m:
            depth = (len(m.group(3)) - 1) // 2
            if depth <= 1:
                rows.append((m.group(4), int(m.group(2)) / 1000, depth))
    return sorted(rows, key=lambda r: -r[1])[:top]


def run_startup(tmp: Path, env: dict[str, str], run_id: str, runs: int = 30, force_loop: bool = False) -> dict:
    runs = max(runs, MIN_RUNS)
    bosun = bosun_argv()
    repo = str(tmp / "startup-repo")
    cmds = {
        FLOOR: [sys.executable, "-c", "pass"],
        "bosun --help": [*bosun, "--help"],
        "bosun show RUN --json": [*bosun, "show", run_id, "--json"],
        "bosun list --json": [*bosun, "list", "--json"],
        "bosun workers --json": [*bosun, "workers", "--json", "--repo", repo],
        "bosun models --json": [*bosun, "models", "--json", "--repo", repo],
        "bosun pool status --json": [*bosun, "pool", "status", "--json", "--repo", repo],
        "bosun savings --json": [*bosun, "savings", "--json", "--repo", repo],
    }
    use_hyperfine = shutil.which("hyperfine") is not None and not force_loop
    load_before = os.getloadavg()
    stats = _hyperfine(cmds, env, runs, tmp) if use_hyperfine else _loop(cmds, env, runs)
    if use_hyperfine:
        method = f"hyperfine --shell=none --warmup 1 --runs {runs}"
    else:
        method = f"subprocess loop, {runs} runs after 1 discarded"
    floor = stats[FLOOR]["median_ms"]
    cpu_floor = stats[FLOOR].get("cpu_median_ms")
    for name, st in stats.items():
        st["over_floor_ms"] = None if name == FLOOR else st["median_ms"] - floor
        if cpu_floor is not None and name != FLOOR:
            st["cpu_over_floor_ms"] = st["cpu_median_ms"] - cpu_floor
        st["ratio"] = None if name == FLOOR else st["median_ms"] / floor
        st["target_ms"] = None if name == FLOOR else floor + TARGET_OVER_FLOOR_MS
        st["met"] = None if st["target_ms"] is None else st["median_ms"] <= st["target_ms"]
    missed = [name for name, st in stats.items() if st["met"] is False]
    imports = {name: import_costs(cmds[name], env) for name in missed}
    return {"method": method, "stats": stats, "imports": imports, "load": [load_before, os.getloadavg()]}


def format_startup(result: dict) -> str:
    load = result.get("load")
    where = f"; load average {load[0][0]:.2f} before, {load[1][0]:.2f} after" if load else ""
    lines = [f"startup ({result['method']}; fresh process each run, warm page cache{where})", ""]
    lines.append(f"{'command':<26}{'median ms':>10}{'min ms':>9}{'over floor':>11}{'ratio':>7}  "
                 f"met (<= {TARGET_OVER_FLOOR_MS:.0f} ms over the floor)")
    for name, st in result["stats"].items():
        over = "-" if st.get("over_floor_ms") is None else f"{st['over_floor_ms']:.1f}"
        ratio = "-" if st.get("ratio") is None else f"{st['ratio']:.2f}"
        met = "-" if st["met"] is None else ("yes" if st["met"] else "NO")
        lines.append(f"{name:<26}{st['median_ms']:>10.1f}{st['min_ms']:>9.1f}{over:>11}{ratio:>7}  {met}")
    if any("cpu_median_ms" in st for st in result["stats"].values()):
        lines += ["", f"{'CPU time (user+sys)':<26}{'median ms':>10}{'over floor':>11}{'ratio':>7}"]
        cpu_floor = result["stats"][FLOOR]["cpu_median_ms"]
        for name, st in result["stats"].items():
            over = "-" if name == FLOOR else f"{st['cpu_median_ms'] - cpu_floor:.1f}"
            ratio = "-" if name == FLOOR else f"{st['cpu_median_ms'] / cpu_floor:.2f}"
            lines.append(f"{name:<26}{st['cpu_median_ms']:>10.1f}{over:>11}{ratio:>7}")
    for name, rows in result["imports"].items():
        lines += ["", f"top import costs of `{name}` (python -X importtime, cumulative ms):"]
        lines += [f"  {ms:8.1f}  {'  ' * depth}{mod}" for mod, ms, depth in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30, help=f"timed runs per command (at least {MIN_RUNS})")
    ap.add_argument("--python-loop", action="store_true", help="time with a subprocess loop even if hyperfine exists")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bosun-bench-startup-") as d:
        tmp = Path(d)
        env = isolated_env(tmp)
        run_id = seed_runs(tmp, env)
        result = run_startup(tmp, env, run_id, args.runs, args.python_loop)
    print(format_startup(result))
    return 0 if all(st["met"] is not False for st in result["stats"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
