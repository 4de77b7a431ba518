"""`bosun demo`: the whole loop on a sample repo, with a scripted model instead of a paid one.

It creates a small Python package with a failing test, starts bosun's scripted model server with a
recorded session that fixes the bug, and runs `delegate --auto-approve` on the native worker: live
progress, the verification bosun ran itself, the gates, the merged commit and the receipt. No network,
no key. The model is a replay and the demo says so.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CART = '''"""A tiny shopping cart."""


def total(prices, discount=0.0):
    """Sum the prices and apply a fractional discount (0.1 = 10% off)."""
    subtotal = sum(prices)
    return round(subtotal * discount, 2)  # bug: should be subtotal * (1 - discount)
'''

TEST_CART = '''import unittest

from shop.cart import total


class TotalTest(unittest.TestCase):
    def test_no_discount(self):
        self.assertEqual(total([10.0, 5.5]), 15.5)

    def test_ten_percent_off(self):
        self.assertEqual(total([100.0]), 100.0)
        self.assertEqual(total([100.0], discount=0.1), 90.0)


if __name__ == "__main__":
    unittest.main()
'''

TASK = """title: Fix the discount in shop.cart.total
prompt: |
  tests/test_cart.py fails: total() multiplies the subtotal by the discount instead of
  taking the discount off. Fix shop/cart.py. Do not change the tests.
acceptance:
  - total([100.0], discount=0.1) == 90.0
  - the tests in tests/ pass
verify:
  - run: [{python}, -m, unittest, discover, -s, tests, -t, .]
scope: ["shop/**"]
locked: ["tests/**"]
difficulty: low
timeout_s: 120
"""

# A recorded session, as the scripted server replays it: read the file, fix it, answer.
SCRIPT: dict[str, Any] = {
    "turns": [
        {"read": "shop/cart.py", "say": "Let me look at the cart module.", "usage": {"input": 1850, "output": 42}},
        {
            "edit": "shop/cart.py",
            "old": "return round(subtotal * discount, 2)  # bug: should be subtotal * (1 - discount)",
            "new": "return round(subtotal * (1 - discount), 2)",
            "usage": {"input": 2210, "output": 96, "cached": 1792},
        },
        {
            "say": "Fixed total(): the discount is now taken off the subtotal (subtotal * (1 - discount)).",
            "usage": {"input": 2390, "output": 31, "cached": 2176},
        },
    ]
}

REAL_PROVIDER = """[profiles.cheap]
adapter = "native"
model = "deepseek-chat"
base_url = "https://api.deepseek.com/v1"
api_key_env = "DEEPSEEK_API_KEY"
prices = { input = 0.27, cached_input = 0.07, output = 1.10 }"""


def _git(repo: Path, *args: str) -> None:
    from bosun.isolation.git import git

    git(list(args), repo, env={"GIT_AUTHOR_NAME": "Demo User", "GIT_AUTHOR_EMAIL": "demo@example.com",
                               "GIT_COMMITTER_NAME": "Demo User", "GIT_COMMITTER_EMAIL": "demo@example.com"})


def make_sample_repo(root: Path, base_url: str) -> tuple[Path, Path]:
    repo = root / "sample-shop"
    (repo / "shop").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "shop" / "__init__.py").write_text("")
    (repo / "shop" / "cart.py").write_text(CART)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_cart.py").write_text(TEST_CART)
    (repo / ".gitignore").write_text("__pycache__/\n")
    (repo / "bosun.toml").write_text(
        'default_profile = "demo"\n\n[profiles.demo]\nadapter = "native"\n'
        'model = "deepseek-chat (scripted replay)"\n'
        f'base_url = "{base_url}"\n'
        "prices = { input = 0.27, cached_input = 0.07, output = 1.10 }\n"
    )
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "A cart with a discount bug")
    task = root / "task.yaml"
    task.write_text(TASK.replace("{python}", _yaml_str(sys.executable)))
    return repo, task


def _yaml_str(s: str) -> str:
    return json.dumps(s)


def run_demo(keep: bool = False, as_json: bool = False) -> int:
    """The demo, narrated on stdout; with ``as_json`` narrated on stderr and summed up as one JSON object."""
    from rich.console import Console

    console = Console(highlight=False, stderr=as_json)
    summary: dict[str, Any] = {}
    root = Path(tempfile.mkdtemp(prefix="bosun-demo-"))
    old_home = os.environ.get("BOSUN_HOME")
    os.environ["BOSUN_HOME"] = str(root / "bosun-home")
    started = time.monotonic()
    try:
        code = _run(console, root, started, summary, keep)
        if as_json:
            summary.update(ok=code == 0, kept=str(root) if keep else None)
            sys.stdout.write(json.dumps({"demo": summary}) + "\n")
        return code
    finally:
        if old_home is None:
            os.environ.pop("BOSUN_HOME", None)
        else:
            os.environ["BOSUN_HOME"] = old_home
        if keep:
            console.print(f"\nkept: {root} (the sample repo, its task and the run's record)")
        else:
            shutil.rmtree(root, ignore_errors=True)
            console.print(f"\nremoved {root}; `bosun demo --keep` keeps the sample repo to look around")


def _run(console: Any, root: Path, started: float, summary: dict[str, Any], keep: bool = False) -> int:
    from bosun.cli.render import describe_event
    from bosun.core.contract import load_contract
    from bosun.core.errors import BosunError
    from bosun.engine.context import RunContext
    from bosun.engine.delegation import delegate
    from bosun.engine.results import run_result
    from bosun.replay import ReplayServer
    from bosun.store.db import open_store

    console.rule("[bold]bosun demo")
    console.print(
        "[yellow]The model in this demo is a scripted replay[/] (bosun's scripted model server replays a "
        "recorded session over the OpenAI API on 127.0.0.1). Everything else is real: git worktree, "
        "worker loop, verification, gates, merge."
    )
    with ReplayServer(SCRIPT) as srv:
        repo, task_path = make_sample_repo(root, srv.base_url("openai"))
        gone = "kept after the demo" if keep else "removed when the demo ends; `bosun demo --keep` keeps it"
        console.print(f"sample repo: {repo} ({gone})\ntask: {task_path.name} (fix a failing test; tests are locked)\n")
        styles = {"message": "cyan", "tool_call": "yellow", "tool_result": "green", "error": "bold red", "usage": "dim"}

        def on_event(ev: dict[str, Any]) -> None:
            console.print("  " + describe_event(ev), style=styles.get(str(ev.get("type")), ""), markup=False)

        ctx = RunContext(open_store())
        console.print("[bold]worker[/] (native agent loop):")
        try:
            run = delegate(ctx, load_contract(task_path), repo, auto_approve=True, on_event=on_event)
        except BosunError as exc:
            console.print(f"[bold red]demo failed:[/] {exc.message}\n  {exc.hint}")
            summary["error"] = exc.to_dict()
            return 1
    result = run_result(run)
    summary.update(state=result["state"], run=result, seconds=round(time.monotonic() - started, 2))
    _show_result(console, result, repo)
    console.print(f"\n[bold]done in {time.monotonic() - started:.1f}s.[/] To use a real provider, put this in "
                  "your repo's bosun.toml and export the key:\n")
    console.print(REAL_PROVIDER, markup=False)
    return 0 if result["state"] == "cleaned" else 1


def _show_result(console: Any, r: Mapping[str, Any], repo: Path) -> None:
    from bosun.isolation.git import git

    console.print("\n[bold]verification[/] (bosun ran it itself; the worker's claims are not used):")
    for c in (r.get("verification") or {}).get("commands", []):
        mark = "[green]PASS[/]" if c["exit_code"] == 0 else "[red]FAIL[/]"
        console.print(f"  {mark} {' '.join(Path(a).name if a == sys.executable else a for a in c['argv'])}"
                      f" (exit {c['exit_code']}, {c['duration_s']}s)")
    console.print("[bold]gates:[/]")
    for g in r["gates"]:
        console.print(f"  {'[green]ok[/]  ' if g['ok'] else '[red]FAIL[/]'} {g['code']:<20} {g['detail']}", markup=True)
    from bosun.core.states import shown_label
    from bosun.engine.verdict import one_line

    verdict = r.get("verdict")
    console.print(f"[bold]verdict:[/] {one_line(verdict)}", markup=True)
    for reason in (verdict or {}).get("reasons") or []:
        console.print(f"  - {reason['code']}: {reason['sentence']}", markup=False)
    console.print(f"[bold]state:[/] {shown_label(str(r['state']), r.get('merged_commit'), r)}")
    if r.get("merged_commit"):
        log = git(["log", "-1", "--format=%h %s%n%n%b", r["merged_commit"]], repo).stdout.strip()
        console.print("[bold]merged commit[/] on main (not pushed):")
        for line in log.splitlines():
            console.print("  " + line, markup=False)
    u, s = r.get("usage") or {}, r.get("savings") or {}
    console.print("[bold]receipt:[/]")
    console.print(f"  worker: {u.get('input_tokens', 0)} tokens in ({u.get('cached_input_tokens', 0)} cached), "
                  f"{u.get('output_tokens', 0)} out, cost ${r.get('cost_usd') or 0:.5f}")
    if s:
        console.print(f"  parent: ~{s['parent_direct_tokens']} tokens to do it itself vs {s['parent_actual_tokens']} "
                      f"to read bosun's result ({s['compression']}x); est. saving ${s['saving_usd']:.5f} "
                      f"at ${s['parent_prices']['input']}/${s['parent_prices']['output']} per M "
                      f"({s['parent_prices_date']})")
        if s["saving_usd"] <= 0:
            console.print("  (a one-line fix is cheaper to make than to delegate: the receipt says so. The "
                          "saving grows with the files a parent would have to read and the lines it would write.)")
