"""bosun's own time around a real worker CLI: `delegate` and `delegate --auto-approve` against the bare CLI.

A generated repository has a one-line bug and a pytest verify command. The scripted model server
(``bosun.replay.ReplayServer``) has the CLI read the file, fix the line and say so. Each round runs,
in an order that rotates, for every CLI asked for:

- **bare**: the CLI alone doing the same scripted edit in a copy of the repository (its own recipe
  from docs/workers.md, a fresh HOME), timed from outside;
- **delegate**: ``bosun delegate TASK --profile P --json`` in a fresh process;
- **auto**: the same with ``--auto-approve`` (approve, land, report, clean up).

bosun's **own time** = the delegate's wall time - the worker process's wall time (bosun's record of it:
``worker.process`` in the run's data) - the verify commands' wall time (``process_s`` of each command
in ``verification.json``; for ``auto`` also ``reverification.json``, integration's second
verification, which the target excludes). Each round commits a new start tree first, so the
fail-to-pass baseline is taken every time (nothing is served from its cache).

Every delegate runs under a launcher that wraps bosun's phases in wall-clock timers; the own time is
split into *before* the worker process starts, *after* it stops, and *waiting* (time bosun spends
blocked: the worker's pipes and containment after its exit, the baseline's thread, the run's final
joins). ``--cprofile`` also prints a cProfile of one delegate (the top functions by own time).

``--warm`` instead times each delegation twice per round, interleaved: the ordinary way (``cold``) and
through ``bosun warm`` (``warm``: the command runs in a fork of a process with bosun, pydantic and the
tokenizer already imported), both as plain ``python -m bosun`` processes without the launcher.

    BOSUN_CLI_BIN="$(scripts/install-worker-clis.sh | tail -n 1)" \\
        .venv/bin/python bench/real_cli.py [--rounds 5] [--clis opencode codex] [--cprofile]

Targets: own time <= 0.3 s for ``delegate``, <= 0.4 s for ``--auto-approve`` (medians of the paired
per-run figures). Exit status 1 when one is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from bosun.replay import ReplayServer  # noqa: E402

TARGETS = {"delegate": 0.3, "auto": 0.4}
KEY_ENV = "BENCH_MODEL_KEY"
FIX = [
    {"read": "src/calc.py"},
    {"edit": "src/calc.py", "old": "return a - b  # bug", "new": "return a + b"},
    {"say": "Fixed add() in src/calc.py."},
]
PROMPT = "add() in src/calc.py subtracts; make it add. Change nothing else."
API = {"opencode": "opencode", "codex": "codex", "claude": "claude"}
MODEL = {"opencode": "mock-model", "codex": "gpt-5.5", "claude": "mock-model"}

# Run inside every timed delegate: wall-clock timers around bosun's phases, written as JSON when the
# process ends. Only the outermost call of a label is timed; each label keeps every (start, end).
LAUNCHER = r"""
import time
_T0 = time.time()
import atexit, functools, importlib.abc, json, os, sys, threading
_marks = {"launch_py": _T0}
_spans = []
_probes = {}
for _m, _p, _l in json.loads(os.environ["BOSUN_BENCH_PROBES"]):
    _probes.setdefault(_m, []).append((_p, _l))
def _wrap(module, path, label):
    owner = module
    *parents, attr = path.split(".")
    for name in parents:
        owner = getattr(owner, name)
    original = getattr(owner, attr)
    @functools.wraps(original)
    def timed(*a, **k):
        t0 = time.time()
        try:
            return original(*a, **k)
        finally:
            _spans.append((label, t0, time.time(), threading.current_thread() is threading.main_thread()))
    setattr(owner, attr, timed)
class _Probing(importlib.abc.MetaPathFinder):
    # Wraps a module's probes right after bosun imports it, so every import happens where it would.
    def find_spec(self, name, path, target=None):
        if name not in _probes:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None:
                break
        else:
            return None
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            for p, l in _probes[name]:
                _wrap(module, p, l)
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _Probing())
def _dump():
    _marks["atexit"] = time.time()
    with open(os.environ["BOSUN_BENCH_TIMELINE"], "w") as fh:
        json.dump({"marks": _marks, "spans": _spans}, fh)
atexit.register(_dump)
from bosun.cli.main import main
_marks["imported_main"] = _marks["main"] = time.time()
code = main(sys.argv[1:])
_marks["main_done"] = time.time()
sys.exit(code)
"""

# (module, attribute, label). Labels with the same prefix before ":" are one phase.
PROBES = [
    ("bosun.engine.delegation", "delegate", "delegate"),
    ("bosun.engine.phases", "prepare", "prepare"),
    ("bosun.engine.preflight", "check_task", "prepare: preflight"),
    ("bosun.isolation.snapshot", "uncommitted_state", "prepare: user tree status"),
    ("bosun.isolation.workspace", "open_worktree", "prepare: worktree"),
    ("bosun.isolation.change", "create_view", "prepare: view"),
    ("bosun.isolation.workspace", "set_up_run", "prepare: set-up"),
    ("bosun.engine.phases", "attempt", "work"),
    ("bosun.isolation.guard", "install_guard", "work: git guard"),
    ("bosun.engine.baseline", "start_baseline", "work: baseline start"),
    ("bosun.engine.baseline", "run_baseline", "baseline (thread)"),
    ("bosun.engine.baseline", "BaselineJob.wait", "work: baseline wait"),
    ("bosun.workers.cli_worker", "CliWorker.prepare", "work: CLI config"),
    ("bosun.proc", "run_supervised", "supervised"),
    ("bosun.proc", "reap_strays", "work: stray scan"),
    ("bosun.isolation.gitwatch", "take", "work: user git dir saved"),
    ("bosun.isolation.gitwatch", "changes", "work: user git dir compared"),
    ("bosun.engine.phases", "verify", "verify"),
    ("bosun.isolation.lingering", "stop_lingering", "verify: lingering scan"),
    ("bosun.engine.checking", "read_run_change", "verify: scan"),
    ("bosun.isolation.verification", "verify_change", "verify: verify_change"),
    ("bosun.isolation.verify_commands", "run_verification", "verify: commands"),
    ("bosun.isolation.verification", "gates_for_tree", "verify: gates"),
    ("bosun.engine.lifecycle", "approve", "approve"),
    ("bosun.engine.lifecycle", "integrate", "integrate"),
    ("bosun.engine.lifecycle", "report", "report"),
    ("bosun.engine.run_report", "write_report", "report: write"),
    ("bosun.engine.metrics", "count_tokens", "report: tokens"),
    ("bosun.engine.teardown", "cleanup", "cleanup"),
    ("bosun.engine.notify", "notify_run", "notify"),
]


def git(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def make_repo(repo: Path, env: dict[str, str]) -> None:
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a - b  # bug\n")
    (repo / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    (repo / "README.md").write_text("A calculator.\n")
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    git(["init", "-q", "-b", "main"], repo, env)
    git(["add", "-A"], repo, env)
    git(["commit", "-qm", "init"], repo, env)


def new_start(repo: Path, env: dict[str, str], n: int) -> None:
    """The bug back in place (an auto-approved run landed the fix) and a new start tree."""
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a - b  # bug\n")
    (repo / "NOTES.md").write_text(f"round {n}\n")
    git(["add", "-A"], repo, env)
    git(["commit", "-qm", f"round {n}"], repo, env)


def user_config(path: Path, binaries: dict[str, str], servers: dict[str, str]) -> None:
    lines = []
    for cli, binary in binaries.items():
        lines += [f"[profiles.{cli}]", f'adapter = "{cli}"', f'model = "{MODEL[cli]}"',
                  f'base_url = "{servers[cli]}"', f'api_key_env = "{KEY_ENV}"', f"binary = {json.dumps(binary)}",
                  "timeout_s = 180", ""]
    path.write_text("\n".join(lines))


# ---------------------------------------------------------------------------------------------
# bare CLIs (the recipes of docs/workers.md, a fresh HOME each)


def bare_command(cli: str, binary: str, base_url: str, home: Path) -> tuple[list[str], dict[str, str], bytes | None]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(home / "tmp"), KEY_ENV: "dummy",
           "LANG": os.environ.get("LANG", "C.UTF-8")}
    (home / "tmp").mkdir(parents=True)
    if cli == "opencode":
        config = {"provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                                        "options": {"baseURL": base_url, "apiKey": "dummy"},
                                        "models": {"mock-model": {"name": "Mock", "tool_call": True,
                                                                  "limit": {"context": 128000, "output": 8192}}}}},
                  "model": "mock/mock-model", "small_model": "mock/mock-model", "autoupdate": False,
                  "share": "disabled", "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"}}
        env.update(OPENCODE_CONFIG_CONTENT=json.dumps(config), OPENCODE_DISABLE_MODELS_FETCH="1",
                   OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
                   OPENCODE_DISABLE_LSP_DOWNLOAD="1", OPENCODE_DISABLE_SHARE="1")
        return [binary, "run", "--format", "json", "-m", "mock/mock-model", PROMPT], env, None
    if cli == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            f'model = "{MODEL[cli]}"\nmodel_provider = "mock"\napproval_policy = "never"\n'
            'sandbox_mode = "workspace-write"\ncheck_for_update_on_startup = false\n'
            f'[model_providers.mock]\nname = "mock"\nbase_url = "{base_url}"\nenv_key = "{KEY_ENV}"\n'
            'wire_api = "responses"\n')
        env["CODEX_HOME"] = str(codex_home)
        return [binary, "exec", "--json", "--skip-git-repo-check", "--disable", "plugins", "--disable",
                "remote_plugin", "--disable", "apps", "-"], env, PROMPT.encode()
    if cli == "claude":
        env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="dummy", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1")
        return [binary, "-p", "--model", MODEL[cli], "--output-format", "stream-json", "--verbose",
                "--permission-mode", "acceptEdits", PROMPT], env, None
    raise SystemExit(f"no bare recipe for {cli}")


def time_bare(cli: str, binary: str, repo: Path, tmp: Path, n: int) -> float:
    work = tmp / f"bare-{cli}-{n}"
    shutil.copytree(repo, work / "repo", ignore=shutil.ignore_patterns(".git"))
    with ReplayServer(FIX) as srv:
        argv, env, stdin = bare_command(cli, binary, srv.base_url(API[cli]), work / "home")
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=work / "repo", env=env, input=stdin, stdin=None if stdin else subprocess.DEVNULL,
                       capture_output=True, timeout=300, check=False)
        wall = time.perf_counter() - t0
        errors = list(srv.errors)
    if "return a + b" not in (work / "repo" / "src" / "calc.py").read_text() or errors:
        raise SystemExit(f"bare {cli} did not make the edit: {errors}")
    return wall


# ---------------------------------------------------------------------------------------------
# delegations


def run_data(home: Path, run_id: str) -> dict[str, Any]:
    con = sqlite3.connect(home / "bosun.db")
    try:
        (data,) = con.execute("SELECT data FROM runs WHERE id = ?", (run_id,)).fetchone()
    finally:
        con.close()
    return json.loads(data)


def commands_s(doc: dict[str, Any] | None) -> float:
    cmds = (doc or {}).get("commands") or []
    return sum(float(c.get("process_s", c.get("duration_s")) or 0.0) for c in cmds)


def time_delegate(cli: str, mode: str, repo: Path, task: Path, env: dict[str, str], tmp: Path, n: int,
                  cprofile: Path | None = None, tree: str = "this", src: Path = ROOT / "src",
                  how: str = "launcher") -> dict[str, Any]:
    """One delegation. ``how``: "launcher" (timed phases, the ordinary path), "cold" (plain `python -m
    bosun`, the ordinary path) or "warm" (plain `python -m bosun`, through the warm process)."""
    timeline = tmp / f"timeline-{cli}-{mode}-{n}.json"
    args = ["delegate", str(task), "--repo", str(repo), "--profile", cli, "--json"]
    args += ["--auto-approve"] if mode == "auto" else []
    if cprofile is not None:
        argv = [sys.executable, "-m", "cProfile", "-o", str(cprofile), "-m", "bosun", *args]
    elif how in ("cold", "warm"):
        argv = [sys.executable, "-m", "bosun", *args]
    else:
        argv = [sys.executable, "-c", os.environ.get("BENCH_LAUNCHER_CODE") or LAUNCHER, *args]
    penv = {**env, "BOSUN_BENCH_TIMELINE": str(timeline), "BOSUN_BENCH_PROBES": json.dumps(PROBES),
            "PYTHONPATH": str(src), "BOSUN_WARM": "1" if how == "warm" else "0"}
    with ReplayServer(FIX) as srv:
        user_config(Path(env["BOSUN_CONFIG"]), {cli: env[f"BENCH_BIN_{cli}"]}, {cli: srv.base_url(API[cli])})
        launched = time.time()
        t0 = time.perf_counter()
        res = subprocess.run(argv, cwd=repo, env=penv, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        ended = launched + wall
        errors = list(srv.errors)
    try:
        out = json.loads(res.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"bosun delegate printed no JSON (exit {res.returncode}):\n{res.stderr[-3000:]}") from None
    want = "cleaned" if mode == "auto" else "verified"
    if out.get("state") != want or errors:
        raise SystemExit(f"{cli} {mode}: ended {out.get('state')} {out.get('error')} {errors}")
    rdir = Path(out["run_dir"])
    data = run_data(Path(env["BOSUN_HOME"]), out["id"])
    process = data["worker"]["process"]
    verification = json.loads((rdir / "verification.json").read_text())
    reverify = rdir / "reverification.json"
    second = json.loads(reverify.read_text()) if reverify.exists() else None
    verify_s = commands_s(verification)
    reverify_s = commands_s(second) if mode == "auto" else 0.0
    before = process["started_at"] - launched
    after = ended - process["exited_at"] - verify_s - reverify_s
    row = {"cli": cli, "mode": mode, "round": n, "tree": tree, "wall": wall, "worker": process["wall_s"], "verify": verify_s,
           "reverify": reverify_s, "before": before, "after": after, "own": before + after,
           "launched": launched, "ended": ended, "process": process}
    baseline = rdir / "baseline.json"
    if baseline.exists():
        doc = json.loads(baseline.read_text())
        row["baseline"] = {"error": doc.get("error"), "cached": bool((doc.get("verification") or {}).get("cached"))}
    if timeline.exists():
        row["timeline"] = json.loads(timeline.read_text())
    return row


# ---------------------------------------------------------------------------------------------
# the breakdown of one run's own time


def spans(row: dict[str, Any], label: str, lo: float = 0.0, hi: float = float("inf")) -> list[tuple[float, float]]:
    return [(s, e) for lab, s, e, _main in row["timeline"]["spans"] if lab == label and lo <= s and e <= hi]


def total(row: dict[str, Any], label: str, lo: float = 0.0, hi: float = float("inf")) -> float:
    return sum(e - s for s, e in spans(row, label, lo, hi))


def first(row: dict[str, Any], label: str) -> tuple[float, float]:
    found = spans(row, label)
    assert found, label
    return min(found)


def breakdown(row: dict[str, Any]) -> dict[str, float]:
    """Seconds per part of one delegate's own time, from its timeline (every part is a wall-clock span
    of the main thread; the parts of each phase add up to the phase)."""
    marks, proc_ = row["timeline"]["marks"], row["process"]
    launched, start, exit_ = row["launched"], proc_["started_at"], proc_["exited_at"]
    prepare, work, verify, delegate = (first(row, x) for x in ("prepare", "work", "verify", "delegate"))
    out: dict[str, float] = {}

    def phase(prefix: str, lo: float, hi: float, parts: dict[str, float], exclude: float = 0.0) -> None:
        for key, value in parts.items():
            out[f"{prefix}{key}"] = value
        out[f"{prefix}rest"] = (hi - lo) - exclude - sum(parts.values())

    out["before: interpreter start, bosun.cli.main imported"] = marks["imported_main"] - launched
    out["before: CLI parse, task load, settings"] = prepare[0] - marks["main"]
    phase("before: prepare: ", *prepare, {
        part: total(row, f"prepare: {part}") for part in ("preflight", "user tree status", "worktree", "view", "set-up")})
    out["before: between prepare and work"] = work[0] - prepare[1]
    phase("before: work: ", work[0], start, {
        "git guard": total(row, "work: git guard", hi=start),
        "baseline thread started, user git dir saved": total(row, "work: baseline start") + total(
            row, "work: user git dir saved"),
        "CLI argv, env, config files": total(row, "work: CLI config", hi=start),
    })
    step = [(s, e) for lab, s, e, main in row["timeline"]["spans"] if lab == "supervised" and main and s <= start <= e]
    step_end = step[0][1] if step else exit_
    out["waiting: worker's pipes and containment after its exit"] = step_end - exit_
    phase("after: work: ", step_end, work[1], {
        "stray scan": total(row, "work: stray scan", lo=exit_),
        "waiting: baseline thread": total(row, "work: baseline wait", *work),
        "user git dir compared": total(row, "work: user git dir compared"),
    })
    out["after: between work and verify"] = verify[0] - work[1]
    phase("after: verify: ", *verify, {
        "lingering processes scan": total(row, "verify: lingering scan", *verify),
        "scan (the change as a tree)": total(row, "verify: scan", *verify),
        "verification around its commands (materialize, HOME, sandbox, supervision)":
            total(row, "verify: verify_change", *verify) - row["verify"] - total(row, "work: baseline wait", *verify),
        "waiting: baseline thread, after the change's verification": total(row, "work: baseline wait", *verify),
        "gates (with the diff)": total(row, "verify: gates", *verify),
    }, exclude=row["verify"])
    if row["mode"] == "auto":
        for label in ("approve", "report"):
            out[f"after: {label}"] = total(row, label)
        out["after: integrate (the reverification's commands excluded)"] = total(row, "integrate") - row["reverify"]
        tail_from = max(e for _, e in spans(row, "report"))
    else:
        out["after: report"] = total(row, "report: write", lo=verify[1])
        tail_from = verify[1] + out["after: report"]
    out["after: of which tokens (tokenizer)"] = total(row, "report: tokens")
    out["after: rest of delegate (notify, locks)"] = delegate[1] - tail_from
    out["after: result printed, interpreter exit"] = row["ended"] - delegate[1]
    return out


# ---------------------------------------------------------------------------------------------


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(rows: list[dict[str, Any]], bare: dict[str, list[float]], args: argparse.Namespace,
           loads: list[str]) -> int:
    trees = ["cold", "warm"] if args.warm else ["this"] + (["compared"] if args.compare else [])
    main_tree, other_tree = ("warm", "cold") if args.warm else ("this", "compared")
    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{platform.platform()}")
    print(f"load average (1, 5, 15 min): at start {loads[0]}, at end {loads[-1]}")
    print(f"command: .venv/bin/python bench/real_cli.py {' '.join(sys.argv[1:])}\n")
    print("| CLI | run | code | wall | worker process | verify cmds | own: before worker | after | **own** (min-max) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    missed = 0
    for cli in args.clis:
        if bare[cli]:
            print(f"| {cli} | bare CLI | | {median(bare[cli]):.2f} s | | | | | |")
        for mode in ("delegate", "auto"):
            for tree in trees:
                rs = [r for r in rows if r["cli"] == cli and r["mode"] == mode and r["tree"] == tree]
                if not rs:
                    continue
                own = [r["own"] for r in rs]
                name = "delegate" if mode == "delegate" else "delegate --auto-approve"
                print(f"| {cli} | {name} | {tree} | {median([r['wall'] for r in rs]):.2f} s "
                      f"| {median([r['worker'] for r in rs]):.2f} s "
                      f"| {median([r['verify'] + r['reverify'] for r in rs]):.2f} s "
                      f"| {median([r['before'] for r in rs]):.3f} s | {median([r['after'] for r in rs]):.3f} s "
                      f"| **{median(own):.3f} s** ({min(own):.3f}-{max(own):.3f}) |")
                if tree == main_tree and median(own) > TARGETS[mode]:
                    missed += 1
    print("\nown time = wall - worker process - verify commands (for --auto-approve also the reverification's);"
          " medians of per-run figures")
    if args.compare or args.warm:
        print(f"\npaired per round: the {other_tree} figure - the {main_tree} one (positive: {main_tree} is faster)\n")
        print("| CLI | run | own: median | min | max | wall: median | min | max |\n|---|---|---:|---:|---:|---:|---:|---:|")
        for cli in args.clis:
            for mode in ("delegate", "auto"):
                pairs: dict[str, dict[str, dict[str, Any]]] = {}
                for r in rows:
                    if r["cli"] == cli and r["mode"] == mode:
                        pairs.setdefault(r["pair"], {})[r["tree"]] = r
                both = [d for d in pairs.values() if len(d) == 2]
                if not both:
                    continue
                own = [d[other_tree]["own"] - d[main_tree]["own"] for d in both]
                wall = [d[other_tree]["wall"] - d[main_tree]["wall"] for d in both]
                print(f"| {cli} | {mode} | {median(own):.3f} s | {min(own):.3f} | {max(own):.3f} "
                      f"| {median(wall):.2f} s | {min(wall):.2f} | {max(wall):.2f} |")
    for tree in trees:
        for cli in args.clis:
            for mode in ("delegate", "auto"):
                rs = [r for r in rows if r["cli"] == cli and r["mode"] == mode and r["tree"] == tree and "timeline" in r]
                if not rs:
                    continue
                parts = [breakdown(r) for r in rs]
                print(f"\n{cli}, {'delegate' if mode == 'delegate' else 'delegate --auto-approve'} ({tree} code): "
                      f"where the own time goes (median of {len(parts)} runs, ms)\n")
                print("| part | ms |\n|---|---:|")
                for key in parts[0]:
                    print(f"| {key} | {1000 * median([p[key] for p in parts]):.0f} |")
    return 1 if missed else 0


def print_cprofile(path: Path, limit: int = 30) -> None:
    import pstats

    stats = pstats.Stats(str(path))
    print(f"\ncProfile of one delegate: bosun's functions, top {limit} by cumulative time (waits included):\n")
    stats.sort_stats("cumulative").print_stats("bosun/", limit)
    print(f"\ntop {limit} by own time:\n")
    stats.sort_stats("tottime").print_stats(limit)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clis", nargs="+", default=["opencode", "codex"], choices=sorted(API))
    ap.add_argument("--modes", nargs="+", default=["bare", "delegate", "auto"], choices=["bare", "delegate", "auto"])
    ap.add_argument("--cprofile", action="store_true", help="also print a cProfile of one delegate")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--cprofile-out", type=Path, help="keep the cProfile data here")
    ap.add_argument("--compare", type=Path, metavar="DIR",
                    help="also time the bosun whose sources are DIR/src (e.g. `git archive main src`), interleaved")
    ap.add_argument("--warm", action="store_true",
                    help="time each delegation twice, interleaved: the ordinary way and through `bosun warm`")
    args = ap.parse_args()
    if args.warm and args.compare:
        ap.error("--warm and --compare each pair two variants; pass one")
    sys.path.insert(0, str(ROOT))
    from tests.e2e.cli_support import cli_binary

    binaries = {cli: cli_binary(cli) for cli in args.clis}
    loads = [loadavg()]
    rows: list[dict[str, Any]] = []
    bare: dict[str, list[float]] = {cli: [] for cli in args.clis}
    with tempfile.TemporaryDirectory(prefix="bosun-bench-realcli-") as t:
        tmp = Path(t)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x",
                   GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"), BOSUN_HOME=str(tmp / "home"),
                   BOSUN_CONFIG=str(tmp / "config.toml"), BOSUN_CACHE_DIR=str(tmp / "cache"),
                   PYTHONPYCACHEPREFIX=str(tmp / "pycache"), PYTHONPATH=str(ROOT / "src"), **{KEY_ENV: "dummy"})
        env.update({f"BENCH_BIN_{c}": b for c, b in binaries.items()})
        (tmp / "gitconfig").write_text("[user]\n\tname = b\n\temail = b@x\n")
        repo = tmp / "repo"
        make_repo(repo, env)
        task = tmp / "task.json"
        task.write_text(json.dumps({"title": "fix add", "prompt": PROMPT, "scope": ["src/**"],
                                    "verify": [f"{sys.executable} -m pytest -q -p no:cacheprovider tests"],
                                    "timeout_s": 180}))
        n = 0
        # One warm-up of each (bytecode, the CLI's profile cache, the tokenizer's cache): not counted.
        for cli in args.clis:
            for src in [ROOT / "src"] + ([args.compare / "src"] if args.compare else []):
                new_start(repo, env, n := n + 1)
                time_delegate(cli, "delegate", repo, task, env, tmp, n, src=src)
        trees = [("this", ROOT / "src", "launcher")] + ([("compared", args.compare / "src", "launcher")]
                                                         if args.compare else [])
        if args.warm:
            trees = [("cold", ROOT / "src", "cold"), ("warm", ROOT / "src", "warm")]
            started = subprocess.run([sys.executable, "-m", "bosun", "warm", "start"], env=env, capture_output=True,
                                     text=True)
            if started.returncode != 0:
                raise SystemExit(f"bosun warm start failed: {started.stderr}")
            for cli in args.clis:  # the warm process's first copy, not counted either
                new_start(repo, env, n := n + 1)
                time_delegate(cli, "delegate", repo, task, env, tmp, n, how="warm")
        for k in range(args.rounds):
            for cli in args.clis:
                modes = args.modes[k % len(args.modes):] + args.modes[:k % len(args.modes)]
                for mode in modes:
                    if mode == "bare":
                        bare[cli].append(time_bare(cli, binaries[cli], repo, tmp, k))
                        continue
                    for tree, src, how in trees if k % 2 == 0 else trees[::-1]:
                        new_start(repo, env, n := n + 1)
                        row = time_delegate(cli, mode, repo, task, env, tmp, n, tree=tree, src=src, how=how)
                        row["pair"] = f"{k}-{cli}-{mode}"
                        rows.append(row)
                        print(f"round {k + 1} {cli:9} {mode:8} {tree:8} wall {row['wall']:.2f}  worker {row['worker']:.2f}"
                              f"  verify {row['verify'] + row['reverify']:.2f}  own {row['own']:.3f} (before "
                              f"{row['before']:.3f}, after {row['after']:.3f})  load {loadavg()}", flush=True)
        loads.append(loadavg())
        if args.warm:
            subprocess.run([sys.executable, "-m", "bosun", "warm", "stop"], env=env, capture_output=True)
        if args.cprofile:
            new_start(repo, env, n := n + 1)
            prof = args.cprofile_out or tmp / "delegate.prof"
            time_delegate(args.clis[0], "delegate", repo, task, env, tmp, n, cprofile=prof)
            print_cprofile(prof)
    if args.json_out:
        args.json_out.write_text(json.dumps({"rows": rows, "bare": bare, "loads": loads}, indent=1))
    return report(rows, bare, args, loads)


if __name__ == "__main__":
    raise SystemExit(main())
