"""Processes left in a worktree: found by their cwd or an open file inside it, within the worker's window."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from bosun.isolation.lingering import boot_clock, processes_in, stop_lingering


def _start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(args, cwd=cwd)
    time.sleep(0.2)  # exec'd and holding what it holds
    return proc


def test_a_process_is_found_by_its_cwd_or_an_open_file_within_the_window(tmp_path: Path) -> None:
    wt, elsewhere = tmp_path / "wt", tmp_path / "elsewhere"
    wt.mkdir()
    elsewhere.mkdir()
    (wt / "held.txt").write_text("x\n")
    began = boot_clock()
    in_cwd = _start(["sleep", "30"], wt)
    holding = _start(["sh", "-c", f"exec 3<{wt / 'held.txt'}; exec sleep 30"], elsewhere)
    outside = _start(["sleep", "30"], elsewhere)
    try:
        window = (began, boot_clock())
        found = set(processes_in(wt, window))
        assert {in_cwd.pid, holding.pid} <= found and outside.pid not in found
        assert {in_cwd.pid, holding.pid} <= set(processes_in(wt))  # no window: any start time
        before = (began - 100, began - 50)  # a window that ended before they started
        assert not {in_cwd.pid, holding.pid} & set(processes_in(wt, before))
        killed = stop_lingering(wt, window)
        assert len(killed) >= 2
        assert in_cwd.wait(timeout=5) is not None and holding.wait(timeout=5) is not None
    finally:
        for p in (in_cwd, holding, outside):
            p.kill()
            p.wait()
