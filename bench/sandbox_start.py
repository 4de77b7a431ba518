"""What the kernel sandbox adds to starting a worker process.

    .venv/bin/python bench/sandbox_start.py            # 200 paired starts, prints medians
    .venv/bin/python bench/sandbox_start.py --runs 50

Each round starts ``/bin/true`` twice the way ``proc.run_supervised`` does, once plain and once
with the Confinement a worker gets (its worktree, HOME and TMPDIR writable), in alternating order so
drift in machine load hits both alike, and times the start itself: from building the ruleset to the
return of ``subprocess.Popen`` (``sandbox.prepare`` + ``sandbox.spawn``), against a plain ``Popen``.
A second series times the whole ``run_supervised`` call both ways (dominated by its 50 ms exit poll
and the containment sweep, so only a sanity check). The target: applying the sandbox adds under
10 ms per worker start. Exit status 1 means the target was missed.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bosun import proc
from bosun.sandbox import Confinement, prepare, probe, spawn

TARGET_MS = 10.0


def _spawn(cwd: Path, env: dict[str, str], confine: Confinement | None) -> float:
    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(["/bin/true"], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, close_fds=True)

    t = time.perf_counter()
    if confine is None:
        child = start()
    else:
        prepared = prepare(confine)
        child = spawn(prepared, start)
        prepared.close()
    elapsed = time.perf_counter() - t
    child.communicate()
    assert child.returncode == 0
    return elapsed * 1000


def _start(cwd: Path, env: dict[str, str], confine: Confinement | None) -> float:
    t = time.perf_counter()
    res = proc.run_supervised(["/bin/true"], cwd=cwd, env=env, timeout_s=30, confine=confine, stdout_grace_s=0.5)
    elapsed = time.perf_counter() - t
    assert res.exit_code == 0, res.output_tail()
    return elapsed * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    support = probe()
    if support.mechanism == "none":
        print("this kernel has no Landlock: nothing to measure")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dirs = [root / name for name in ("worktree", "home", "tmp")]
        for d in dirs:
            d.mkdir()
        confine = Confinement(writable=tuple(dirs))
        env = proc.allowlisted_env()
        for _ in range(5):  # warm the page cache and the import of every module involved
            _start(dirs[0], env, None)
            _start(dirs[0], env, confine)
        plain, confined, delta, ruleset = [], [], [], []
        full_delta = []
        for i in range(args.runs):
            order = (None, confine) if i % 2 else (confine, None)
            times = {id(c): _spawn(dirs[0], env, c) for c in order}
            plain.append(times[id(None)])
            confined.append(times[id(confine)])
            delta.append(times[id(confine)] - times[id(None)])
            t = time.perf_counter()
            prepare(confine).close()
            ruleset.append((time.perf_counter() - t) * 1000)
            if i % 4 == 0:
                full = {id(c): _start(dirs[0], env, c) for c in order}
                full_delta.append(full[id(confine)] - full[id(None)])
    added = statistics.median(delta)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}, "
          f"Landlock ABI {support.landlock_abi}, Python {platform.python_version()}; load {os.getloadavg()[0]:.1f}")
    print(f"runs: {args.runs} paired starts of /bin/true")
    print(f"plain Popen:                        median {statistics.median(plain):.2f} ms")
    print(f"ruleset + confined spawn:           median {statistics.median(confined):.2f} ms")
    print(f"added by the sandbox:               median {added:.2f} ms (p90 {statistics.quantiles(delta, n=10)[8]:.2f} ms)")
    print(f"  of which building the ruleset:    median {statistics.median(ruleset):.2f} ms")
    print(f"whole run_supervised, added:        median {statistics.median(full_delta):.2f} ms "
          f"over {len(full_delta)} pairs (noisy: 50 ms exit poll)")
    met = added < TARGET_MS
    print(f"target: under {TARGET_MS:g} ms added per worker start: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
