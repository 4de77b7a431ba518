"""A landing of bosun's that does not queue, as a plan's or a bosun from before the landing queue
lands: ``unqueued_landing.py RUN [--die-after-move]``, run as its own process.

It builds and moves exactly as ``integrate`` does (``landing_pending`` recorded before the branch
moves), without holding the branch's queue. ``--die-after-move`` exits right after the branch moved,
before the landing's record is finished: what a process SIGKILLed at that moment leaves.
"""

from __future__ import annotations

import os
import sys

from bosun.core import paths
from bosun.engine.context import RunContext, load_task
from bosun.engine.integration import _land, record_landing
from bosun.store.db import open_store

run_id = sys.argv[1]
ctx = RunContext(open_store())
run = ctx.store.require_run(run_id)
found = _land(ctx, run, load_task(run_id), False, paths.run_dir(run_id) / "scratch")
if "--die-after-move" in sys.argv:
    os._exit(0)
ctx.store.update_run(run_id, merged_commit=found.merged)
record_landing(ctx.store, run_id, found.landing)
ctx.store.transition(run_id, "approved", "integrated", "landed without the queue")
