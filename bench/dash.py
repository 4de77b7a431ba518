"""Dashboard and history speed on a large store.

Fills a fresh store (in a temp BOSUN_HOME) with synthetic runs that look like real ones: a title and a
prompt of random words, data with usage, gates and verification, transitions, and for every 50th run
a run directory (task.json, events.jsonl of 200 events, a 20 KB diff, gates.json, verification.json,
metrics.json). Then it indexes the history (``bosun.engine.history.refresh``, the same lazy refresh the CLI
and the dashboard use) and times, in process through the ASGI app (starlette's TestClient: routing,
the guard, HTML rendering, no network):

* the runs page (``GET /``) and a filtered or searched runs table, 10,000 runs: target p95 < 100 ms;
* a run page (``GET /runs/ID``) with its diff, events, gates and receipt: target p95 < 100 ms;
* ``history.search`` over 100,000 runs (rare word, common word, with a state filter, with no
  match): target p95 < 50 ms.

    .venv/bin/python bench/dash.py [--runs 10000] [--history-runs 100000] [--repeat 40] [--write]

``--write`` replaces the generated section of docs/benchmarks.md. Exit status 1 means a target was missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

WORDS = ("parser lexer tokenizer cache retry timeout paginate config loader schema migration router handler "
         "session token upload download index search query filter render template widget layout theme button "
         "form field validate encode decode compress stream buffer socket client server worker queue job "
         "scheduler cron backup restore export import report metric counter gauge histogram trace span log").split()
STATES = ("verified", "rejected", "failed", "integrated", "cleaned", "reported", "approved", "cancelled")
PROFILES = ("cheap", "deepseek", "local", "codex", "pi", "opencode")
SECTION_START = "<!-- bench/dash.py: begin -->"
SECTION_END = "<!-- bench/dash.py: end -->"


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def fill(store: Any, count: int, seed: int, with_files_every: int = 50) -> list[str]:
    """Insert ``count`` runs in one transaction per 5,000 (the store's own insert is one per run)."""
    from bosun.store.db import RUN_COLUMNS

    rng = random.Random(seed)
    now = time.time()
    ids: list[str] = []
    cols = ", ".join(RUN_COLUMNS)
    marks = ", ".join("?" for _ in RUN_COLUMNS)
    batch: list[tuple[dict[str, Any], str]] = []
    for i in range(count):
        created = now - (count - i) * 37.0
        rid = time.strftime("%Y%m%d-%H%M%S", time.gmtime(created)) + f"-{i:06x}"
        state = rng.choice(STATES)
        data = {
            "usage": {"input_tokens": rng.randint(2000, 90000), "output_tokens": rng.randint(100, 6000),
                      "cached_input_tokens": 0, "reasoning_tokens": 0, "cost_usd": None},
            "verification_passed": state != "rejected", "gates_ok": state != "rejected",
            "worker": {"final_text": "Done: " + sentence(rng, 12)},
            "caller": rng.choice(("claude-code", "codex", None)),
        }
        if state in ("failed",):
            data["error"] = {"code": "TIMEOUT", "message": "worker hit the timeout " + sentence(rng, 4), "hint": ""}
        run = {
            "id": rid, "state": state, "title": sentence(rng, 5).capitalize(), "repo": f"/src/repo{i % 7}",
            "source_branch": "main", "base": "a" * 40, "start_commit": "a" * 40, "branch": f"bosun/{rid}",
            "worktree": f"/tmp/wt/{rid}", "profile": rng.choice(PROFILES), "profile_reason": "bench",
            "diff_sha256": "b" * 64, "files_changed": rng.randint(1, 9), "session_id": None, "merged_commit": None,
            "plan_id": None, "created_at": created, "updated_at": created + 60, "data": json.dumps(data),
        }
        batch.append((run, sentence(rng, 40)))
        ids.append(rid)
        if with_files_every and i % with_files_every == 0:
            write_run_files(rid, rng, run, state)
        if len(batch) >= 5000 or i == count - 1:
            with store.tx() as db:
                db.executemany(f"INSERT INTO runs ({cols}) VALUES ({marks})", [[r[c] for c in RUN_COLUMNS] for r, _ in batch])
                db.executemany(
                    "INSERT INTO transitions(run_id, from_state, to_state, at, pid, reason) VALUES (?,?,?,?,?,?)",
                    [(r["id"], s, t, r["created_at"] + k * 20, 1, "bench")
                     for r, _ in batch for k, (s, t) in enumerate(((None, "prepared"), ("prepared", "working"),
                                                                    ("working", r["state"])))],
                )
                db.executemany("INSERT INTO run_search(run_id, title, prompt) VALUES (?,?,?)",
                               [(r["id"], r["title"], p) for r, p in batch])
            batch = []
    return ids


def write_run_files(rid: str, rng: random.Random, run: dict[str, Any], state: str) -> None:
    from bosun.core.paths import run_dir

    rdir = run_dir(rid)
    rdir.mkdir(parents=True, exist_ok=True)
    (rdir / "task.json").write_text(json.dumps({"run_id": rid, "task": {"title": run["title"], "prompt": sentence(rng, 60),
                                                                        "verify": ["pytest -q"]}}))
    events = []
    for k in range(200):
        kind = ("message", "tool_call", "tool_result", "usage")[k % 4]
        ev: dict[str, Any] = {"seq": k + 1, "ts": run["created_at"] + k, "type": kind}
        if kind == "message":
            ev.update(role="assistant", text=sentence(rng, 30))
        elif kind == "tool_call":
            ev.update(tool="edit", input={"path": f"src/{rng.choice(WORDS)}.py"})
        elif kind == "tool_result":
            ev.update(tool="edit", ok=True, output=sentence(rng, 20))
        else:
            ev.update(input_tokens=1000, output_tokens=80)
        events.append(json.dumps(ev))
    (rdir / "events.jsonl").write_text("\n".join(events) + "\n")
    diff = []
    for f in range(4):
        name = f"src/{rng.choice(WORDS)}_{f}.py"
        diff += [f"diff --git a/{name} b/{name}", "index 1111111..2222222 100644", f"--- a/{name}", f"+++ b/{name}",
                 "@@ -1,60 +1,60 @@"]
        for line in range(60):
            diff.append(f"{rng.choice('+- ')}    value_{line} = compute('{rng.choice(WORDS)}', {line})  # {rng.choice(WORDS)}")
    (rdir / "diff.patch").write_text("\n".join(diff) + "\n")
    gates = [{"code": c, "ok": state != "rejected" or c != "LOCKED_PATH_CHANGED", "detail": sentence(rng, 6)}
             for c in ("NO_CHANGES", "VERIFY_FAILED", "LOCKED_PATH_CHANGED", "OUT_OF_SCOPE", "SECRET_DETECTED",
                       "TEST_WEAKENED", "DIFF_TOO_LARGE", "TOO_MANY_FILES")]
    (rdir / "gates.json").write_text(json.dumps({"gates": gates, "diff_sha256": "b" * 64}))
    (rdir / "verification.json").write_text(json.dumps({"passed": True, "commands": [
        {"argv": ["pytest", "-q"], "exit_code": 0, "duration_s": 2.1, "output_tail": "." * 60 + "\n60 passed"}]}))
    (rdir / "metrics.json").write_text(json.dumps({
        "duration_s": 40.0, "worker": {"usage": {"input_tokens": 5000, "output_tokens": 300}, "cost_usd": 0.002},
        "parent": {"parent_direct_tokens": 9000, "parent_actual_tokens": 600, "compression": 15.0,
                   "parent_direct_cost_usd": 0.03, "saving_usd": 0.025}}))


def timed(fn: Any, repeat: int) -> dict[str, float]:
    fn()  # warm
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return {"p50_ms": round(statistics.median(samples), 1),
            "p95_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.95))], 1),
            "max_ms": round(samples[-1], 1)}


def bench_dash(home: Path, runs: int, repeat: int) -> dict[str, Any]:
    os.environ["BOSUN_HOME"] = str(home)
    from bosun.engine.history import refresh
    from bosun.store.db import open_store

    store = open_store()
    t0 = time.perf_counter()
    ids = fill(store, runs, seed=1)
    filled = time.perf_counter() - t0
    t0 = time.perf_counter()
    refresh(store, batch=2000)
    indexed = time.perf_counter() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    from bosun.web.app import create_app

    client = TestClient(create_app("t", 8765), base_url="http://127.0.0.1:8765")

    def get(path: str) -> Any:
        def call() -> None:
            r = client.get(path)
            assert r.status_code == 200, (path, r.status_code)
        return call

    with_files = ids[0]
    results = {
        "runs page (GET /)": timed(get("/"), repeat),
        "runs table, page 20": timed(get("/fragments/runs?page=20"), repeat),
        "runs table, state + profile filter": timed(get("/fragments/runs?state=failed&profile=codex"), repeat),
        "runs table, text search": timed(get("/fragments/runs?q=tokenizer+cache"), repeat),
        "run page (GET /runs/ID)": timed(get(f"/runs/{with_files}"), repeat),
    }
    return {"runs": runs, "fill_s": round(filled, 1), "index_s": round(indexed, 1), "results": results}


def bench_history(home: Path, runs: int, repeat: int) -> dict[str, Any]:
    os.environ["BOSUN_HOME"] = str(home)
    from bosun.engine.history import refresh, search
    from bosun.store.db import open_store
    from bosun.store.history import RunFilter

    store = open_store()
    t0 = time.perf_counter()
    fill(store, runs, seed=2, with_files_every=0)
    filled = time.perf_counter() - t0
    t0 = time.perf_counter()
    refresh(store, batch=5000)
    indexed = time.perf_counter() - t0
    cases = {
        "rare words (two)": RunFilter(text="tokenizer histogram cron"),
        "common word": RunFilter(text="parser"),
        "common word + state filter": RunFilter(text="parser", state="failed"),
        "prefix": RunFilter(text="pars*"),
        "no match": RunFilter(text="xyzzy"),
        "error text": RunFilter(text="timeout", state="failed"),
    }
    results = {name: timed(lambda f=flt: search(store, f, limit=50), repeat) for name, flt in cases.items()}
    return {"runs": runs, "fill_s": round(filled, 1), "index_s": round(indexed, 1), "results": results}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, SQLite "
            f"{__import__('sqlite3').sqlite_version}, {platform.system()} {platform.release()}; load average {load:.2f}")


def render(dash: dict[str, Any], hist: dict[str, Any], argv: str) -> str:
    lines = [SECTION_START, "", f"Command: `{argv}`", "", f"Machine: {machine()}.", ""]
    lines += [f"Dashboard, {dash['runs']:,} runs (filled in {dash['fill_s']} s, indexed in {dash['index_s']} s), "
              "in process through the ASGI app, target p95 < 100 ms:", "",
              "| request | p50 | p95 | max |", "|---|---|---|---|"]
    for name, r in dash["results"].items():
        lines.append(f"| {name} | {r['p50_ms']} ms | {r['p95_ms']} ms | {r['max_ms']} ms |")
    lines += ["", f"`history` search, {hist['runs']:,} runs (filled in {hist['fill_s']} s, indexed in "
              f"{hist['index_s']} s), 50 results with snippets, target p95 < 50 ms:", "",
              "| query | p50 | p95 | max |", "|---|---|---|---|"]
    for name, r in hist["results"].items():
        lines.append(f"| {name} | {r['p50_ms']} ms | {r['p95_ms']} ms | {r['max_ms']} ms |")
    lines += ["", SECTION_END]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--history-runs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=40)
    ap.add_argument("--write", action="store_true", help="replace the generated section of docs/benchmarks.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bosun-bench-dash-") as tmp:
        os.environ["BOSUN_CONFIG"] = str(Path(tmp) / "none.toml")
        dash = bench_dash(Path(tmp) / "home-dash", args.runs, args.repeat)
        hist = bench_history(Path(tmp) / "home-history", args.history_runs, args.repeat)
    argv = "python bench/dash.py" + "".join(f" {a}" for a in sys.argv[1:] if a != "--write")
    text = render(dash, hist, argv)
    print(text)
    missed = [n for n, r in dash["results"].items() if r["p95_ms"] >= 100]
    missed += [n for n, r in hist["results"].items() if r["p95_ms"] >= 50]
    if args.write:
        doc = ROOT / "docs" / "benchmarks.md"
        current = doc.read_text()
        if SECTION_START in current:
            head, rest = current.split(SECTION_START, 1)
            current = head + text + rest.split(SECTION_END, 1)[1]
        else:
            current = current.rstrip("\n") + "\n\n## Dashboard and history\n\n" + text + "\n"
        doc.write_text(current)
    if missed:
        print("missed:", ", ".join(missed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
