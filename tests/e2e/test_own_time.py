"""What bosun does around the worker, and when: nothing computed twice, overlapping work started once
the worker runs, and a process that exits without collecting what it loaded.

None of these is timed: each checks the shape that makes bosun's own time short (bench/real_cli.py
measures it)."""

from __future__ import annotations

import subprocess
import sys
import threading

from bosun import proc
from bosun.core import quick_exit
from bosun.engine import lifecycle, metrics, phases, record
from bosun.isolation.blobs import BlobReader
from tests.conftest import ROOT


def delegate(cli, repo, task, *extra: str) -> dict:
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix", "--json", *extra)
    assert code == 0, res
    return res


def test_the_change_is_diffed_and_read_once(cli, repo, task_file, monkeypatch):
    # Every git process bosun starts goes through proc.run_quick; wrapped to list them (the reason).
    argvs: list[list[str]] = []
    run_quick = proc.run_quick

    def listed(argv, *a, **k):
        argvs.append([str(x) for x in argv])
        return run_quick(argv, *a, **k)

    monkeypatch.setattr(proc, "run_quick", listed)
    # Blobs are read through one batch process per reader: its reads are listed the same way.
    reads: list[str] = []
    read_object = BlobReader.read_object

    def read(self, spec):
        reads.append(spec)
        return read_object(self, spec)

    monkeypatch.setattr(BlobReader, "read_object", read)
    res = delegate(cli, repo, task_file)
    assert res["state"] == "verified"
    patches = [a for a in argvs if a[1:4] == ["diff-tree", "-r", "-p"]]
    assert len(patches) == 1, patches  # the scan's diff is the one the gates judge
    assert not [a for a in argvs if a[1:3] == ["cat-file", "blob"]]  # no process per file
    tree = record.read_doc(res["id"], record.VERIFICATION)["tree"]
    assert reads.count(f"{tree}:src/calc.py") == 1, reads  # every gate judged the bytes read once
    heads = [a for a in argvs if a[-1] == "HEAD^{commit}"]
    assert len(heads) == 1, heads  # the base (HEAD) is resolved once, in the pre-flight


def test_the_tokenizer_loads_while_the_worker_runs_not_before(cli, repo, task_file, monkeypatch):
    metrics._loaded.clear()
    seen = {}
    attempt = phases.attempt

    def observed(*a, **k):  # wrapped to look at the moment the attempt phase begins (the reason)
        seen["loading"] = any(t.name.startswith("bosun-") for t in threading.enumerate()) or bool(metrics._loaded)
        return attempt(*a, **k)

    monkeypatch.setattr(phases, "attempt", observed)
    delegate(cli, repo, task_file)
    assert seen == {"loading": False}  # prepare's git work did not share the interpreter with it
    assert metrics._loaded  # and the receipt had it


GATES_AT_WORKER_START = """import json, sys
import bosun.engine.attempts as attempts
run_attempts = attempts.run_attempts
def observed(*a, **k):  # the moment the worker is about to start
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("bosun.gates"))), file=sys.stderr)
    return run_attempts(*a, **k)
attempts.run_attempts = observed
from bosun.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_gates_are_not_loaded_before_the_worker_starts(repo, task_file, tmp_path):
    # The largest import of a delegation; nothing before the worker needs it (a task without holdout files).
    import json
    import os

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    res = subprocess.run([sys.executable, "-c", GATES_AT_WORKER_START, "delegate", str(task_file), "--repo", str(repo),
                          "--profile", "fix", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert json.loads(res.stdout)["state"] == "verified", res.stderr
    assert json.loads(res.stderr.strip().splitlines()[-1]) == []


def test_on_worker_start_runs_once_the_worker_process_exists(repo, task_file):
    from bosun.core.contract import load_contract
    from bosun.engine.attempts import run_attempts
    from bosun.engine.context import RunContext
    from bosun.store.db import open_store

    ctx = RunContext(open_store())
    run = lifecycle.prepare(ctx, load_contract(task_file), repo, "fix")
    calls = []
    settings = ctx.settings(repo)

    def started() -> None:
        calls.append(ctx.store.require_run(run.id).data.worker_pid)

    outcome = run_attempts(ctx, settings, run, load_contract(task_file), on_worker_start=started)
    assert outcome.result.ok
    assert len(calls) == 1 and isinstance(calls[0], int)  # after the pid was recorded, once
    assert outcome.result.process and outcome.result.process["exited_at"] >= outcome.result.process["started_at"]


def test_a_delegating_process_exits_without_the_final_collection(cli, repo, task_file):
    delegate(cli, repo, task_file)
    assert quick_exit.registered()


def test_skip_final_collection_freezes_at_exit_only():
    code = ("import atexit, gc\n"
            "atexit.register(lambda: print('at exit', gc.get_freeze_count() > 0))\n"
            "from bosun.core.quick_exit import skip_final_collection\n"
            "skip_final_collection(); skip_final_collection()\n"
            "print('before exit', gc.get_freeze_count() > 0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src")}).stdout
    assert out == "before exit False\nat exit True\n"
