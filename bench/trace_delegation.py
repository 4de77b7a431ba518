"""How far a reader must travel to follow one delegation: modules, and climbs back up a layer.

Runs one real ``bosun delegate TASK --auto-approve --json`` in-process (a ``command`` worker that
fixes a failing test, verify ``python -m pytest -q``, a baseline that proves it), with a profiler on
the main thread that sees every call into and return from a bosun function. From that trace:

* ``imported``: bosun modules in ``sys.modules`` after the run (what start-up and the run load);
* ``ran``: bosun modules that ran a function on the task's thread;
* ``transitions``: changes of the executing module along the trace (calls and returns);
* ``climbs``: transitions into a higher layer (the layers of tests/project/test_layering.py): the
  reader's path going back up, e.g. from ``isolation`` back to ``engine``;
* ``engine_exits``: how often the task leaves the engine layer for a lower one and comes back;
* ``handoffs``: the excursions below the engine that start a process (git, the worker, a verify
  command), per phase: where the task itself leaves the engine to be acted on, as opposed to a
  store write or a value built by a lower layer's constructor.

Nothing outside a temp dir is touched (BOSUN_HOME, the config and git's config are temp files).
``--write`` replaces the generated section of docs/architecture.md.

    .venv/bin/python bench/trace_delegation.py [--write]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.project.test_layering import LAYERS, RANK, unit  # noqa: E402  (the layer table the test enforces)

DOC = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- trace:begin -->", "<!-- trace:end -->"

WORKER = textwrap.dedent("""\
    import pathlib
    p = pathlib.Path("calc.py")
    p.write_text(p.read_text().replace("return a - b", "return a + b"))
""")


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    (root / "fix.py").write_text(WORKER)
    (repo / "bosun.toml").write_text(
        f'default_profile = "fixer"\n[profiles.fixer]\nadapter = "command"\n'
        f'command = {json.dumps([sys.executable, str(root / "fix.py")])}\n')
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (root / "task.json").write_text(json.dumps({
        "title": "add adds", "prompt": "make add return the sum", "mode": "code",
        "scope": ["calc.py"], "verify": [{"run": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]}]}))
    return repo


def isolate(root: Path) -> None:
    (root / "gitconfig").write_text("[user]\n\tname = trace\n\temail = trace@localhost\n")
    os.environ.update({"BOSUN_HOME": str(root / "home"), "BOSUN_CONFIG": str(root / "config.toml"),
                       "GIT_CONFIG_GLOBAL": str(root / "gitconfig"), "GIT_CONFIG_NOSYSTEM": "1",
                       "BOSUN_WARM": "0"})


# The functions that are the phases of a delegation, and the phase each one is.
PHASES = {
    ("bosun.engine.phases", "prepare"): "prepare",
    ("bosun.engine.phases", "attempt"): "attempt",
    ("bosun.engine.phases", "verify"): "verify",
    ("bosun.engine.verdict", "decide"): "verdict",
    ("bosun.engine.lifecycle", "approve"): "land",
    ("bosun.engine.lifecycle", "integrate"): "land",
}


# The wiring a reader starts from: the verb's loop and the phases. What these call directly is what a
# reader opens to know what each step does (one level down; the steps' own insides not counted).
WIRING = {
    ("bosun.engine.delegation", "delegate"), ("bosun.engine.delegation", "drive"),
    ("bosun.engine.delegation", "_attempt_verify_judge"),
    ("bosun.engine.phases", "prepare"), ("bosun.engine.phases", "attempt"), ("bosun.engine.phases", "verify"),
    ("bosun.engine.phases", "judge"),
}


def _spawners() -> set[Any]:
    """The C functions a process starts through (``subprocess`` forks with ``fork_exec``; bosun's
    read-only verbs ``posix_spawn``)."""
    import _posixsubprocess

    return {f for f in (_posixsubprocess.fork_exec, os.posix_spawn, getattr(os, "posix_spawnp", None), os.fork) if f}


def trace(repo: Path, task: Path) -> tuple[list[str], int, dict[str, Any], dict[str, set[tuple[str, int]]]]:
    path: list[str] = []
    in_phase: list[str] = []  # the phase each step of ``path`` was taken in ("-": outside every phase)
    spawns: set[int] = set()  # steps of ``path`` during which a process started
    spawners = _spawners()
    profile_phases: list[tuple[Any, str]] = []
    lines: dict[str, set[tuple[str, int]]] = {}
    phase_stack: list[tuple[Any, str]] = []
    below: set[str] = set()
    lines["wiring callees"] = below  # type: ignore[assignment]

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        name = frame.f_globals.get("__name__", "")
        if not name.startswith("bosun"):
            return None  # no line events inside other libraries
        if event == "call":
            back = frame.f_back
            if back is not None and (back.f_globals.get("__name__", ""), back.f_code.co_name) in WIRING:
                below.add(name)
            phase = PHASES.get((name, frame.f_code.co_name))
            if phase is not None:
                phase_stack.append((frame, phase))
        elif event == "line" and phase_stack:
            lines.setdefault(phase_stack[-1][1], set()).add((frame.f_code.co_filename, frame.f_lineno))
        elif event == "return" and phase_stack and phase_stack[-1][0] is frame:
            phase_stack.pop()
        return tracer

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call":
            if arg in spawners and path:
                spawns.add(len(path) - 1)
            return
        if event not in ("call", "return"):
            return
        name = frame.f_globals.get("__name__", "")
        if event == "call":
            phase = PHASES.get((name, frame.f_code.co_name))
            if phase is not None:
                profile_phases.append((frame, phase))
            if (name, frame.f_code.co_name) == ("bosun.sandbox", "spawn") and path:
                spawns.add(len(path) - 1)  # a confined start forks in a thread of its own
        else:
            if profile_phases and profile_phases[-1][0] is frame:
                profile_phases.pop()
            back = frame.f_back
            name = back.f_globals.get("__name__", "") if back is not None else ""
        if name.startswith("bosun") and (not path or path[-1] != name):
            path.append(name)
            in_phase.append(profile_phases[-1][1] if profile_phases else "-")

    from bosun.cli.main import main

    out = io.StringIO()
    os.chdir(repo)
    sys.setprofile(profiler)
    sys.settrace(tracer)
    try:
        with contextlib.redirect_stdout(out):
            code = main(["delegate", str(task), "--auto-approve", "--json"])
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    lines["handoffs"] = handoffs(path, in_phase, spawns)  # type: ignore[assignment]
    return path, code, json.loads(out.getvalue().strip().splitlines()[-1]), lines


def handoffs(path: list[str], in_phase: list[str], spawns: set[int]) -> dict[str, Counter[str]]:
    """Per phase, the excursions below the engine during which a process started, by the engine
    module that made the call and the lower module it called."""
    engine = RANK["engine"]
    out: dict[str, Counter[str]] = {}
    start = None
    for i in range(1, len(path)):
        below = layer_of(path[i]) > engine
        if start is None and below and layer_of(path[i - 1]) <= engine:
            start = i
        elif start is not None and not below:
            if any(j in spawns for j in range(start, i)):
                key = f"{unit_name(path[start - 1])} -> {unit_name(path[start])}"
                out.setdefault(in_phase[start - 1], Counter())[key] += 1
            start = None
    return out


def unit_name(module: str) -> str:
    return module.removeprefix("bosun.")


def layer_of(module: str) -> int:
    return RANK[unit(module)]


def measure(path: list[str]) -> dict[str, Any]:
    climbs = [(a, b) for a, b in zip(path, path[1:], strict=False) if layer_of(b) < layer_of(a)]
    engine = RANK["engine"]
    exits = sum(1 for a, b in zip(path, path[1:], strict=False) if layer_of(a) <= engine < layer_of(b))
    imported = sorted(m for m in sys.modules if m == "bosun" or m.startswith("bosun."))
    ran = sorted(set(path))
    by_layer = Counter(LAYERS[layer_of(m)][0] for m in ran)
    # The same path through the layers only: the leaves (the base layer and proc, which every layer
    # calls and which call nothing back) left out, and consecutive steps in one layer merged.
    leaves = {RANK["core"], RANK["proc"]}
    layered = [layer_of(x) for x in path if layer_of(x) not in leaves]
    layered = [r for i, r in enumerate(layered) if i == 0 or layered[i - 1] != r]
    layer_climbs = sum(1 for a, b in zip(layered, layered[1:], strict=False) if b < a)
    layer_exits = sum(1 for a, b in zip(layered, layered[1:], strict=False) if a <= engine < b)
    return {"imported": imported, "ran": ran, "transitions": len(path) - 1, "climbs": len(climbs),
            "engine_exits": exits, "ran_by_layer": dict(by_layer), "layer_climbs": layer_climbs,
            "layer_exits": layer_exits, "on_path": [x for x in ran if layer_of(x) not in leaves],
            "climb_pairs": Counter(f"{unit(a)} -> {unit(b)}" for a, b in climbs).most_common(8)}


PHASE_ORDER = ("prepare", "attempt", "verify", "verdict", "land", "-")


def phase_rows(lines: dict[str, set[tuple[str, int]]], handed: dict[str, Counter[str]]) -> list[str]:
    rows = []
    for phase in PHASE_ORDER:
        seen = lines.get(phase, set())
        files = {f for f, _ in seen}
        calls = handed.get(phase, Counter())
        where = "; ".join(f"{k}" + (f" ({n})" if n > 1 else "") for k, n in sorted(calls.items())) or "none"
        name = phase if phase != "-" else "outside the phases"
        shown = (f"{len(seen)} | {len(files)}" if phase != "-" else "- | -")
        rows.append(f"| {name} | {shown} | {sum(calls.values())} | {where} |")
    return rows


def report(m: dict[str, Any], state: str, verdict: str) -> str:
    layers = ", ".join(f"{k} {v}" for k, v in sorted(m["ran_by_layer"].items(), key=lambda kv: RANK_ORDER[kv[0]]))
    pairs = "; ".join(f"{p} ({n})" for p, n in m["climb_pairs"])
    wiring = {"bosun.engine.delegation", "bosun.engine.phases"}
    callees = [x for x in m["wiring_callees"] if x not in wiring]
    outside = [x for x in callees if unit(x) != "engine"]
    return "\n".join([
        BEGIN,
        f"One `bosun delegate --auto-approve` (command worker, proven fix; the run ended {state}, "
        f"verdict {verdict}), traced on its main thread by `bench/trace_delegation.py`:",
        "",
        "| measure | value |",
        "|---|---|",
        f"| bosun modules imported | {len(m['imported'])} |",
        f"| bosun modules that ran a function | {len(m['ran'])} ({layers}) |",
        f"| changes of module along the trace | {m['transitions']} |",
        f"| climbs back up a layer | {m['climbs']} |",
        f"| times the task leaves the engine for a lower layer | {m['engine_exits']} |",
        f"| the same through the layers (base and proc, the leaves, left out): climbs | {m['layer_climbs']} |",
        f"| the same through the layers: engine exits | {m['layer_exits']} |",
        "",
        f"Most frequent climbs: {pairs}.",
        "",
        "Lines of bosun's code each phase ran (distinct lines executed on the main thread while in the",
        "phase, the modules those lines are in): what a reader must follow to know what the phase does.",
        "Handoffs: the times the task leaves the engine to be acted on (an excursion below the engine",
        "during which a process starts: git, the worker, a verify command), and the call each one is.",
        "",
        "| phase | lines run | modules | handoffs | engine -> lower module |",
        "|---|---|---|---|---|",
        *m["phase_rows"],
        "",
        f"The wiring (`engine/delegation.py` and `engine/phases.py`) calls into {len(callees)} modules "
        f"directly, {len(outside)} of them outside the engine: "
        + ", ".join(f"`{x.removeprefix('bosun.')}`" for x in callees) + ".",
        "",
        f"The {len(m['on_path'])} modules on the path, the leaves left out: "
        + ", ".join(f"`{x.removeprefix('bosun.')}`" for x in m["on_path"]) + ".",
        END,
    ])


RANK_ORDER = {name: n for n, (name, _) in enumerate(LAYERS)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--write", action="store_true", help="replace the generated section of docs/architecture.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bosun-trace-") as tmp:
        root = Path(tmp)
        isolate(root)
        repo = make_repo(root)
        path, code, result, lines = trace(repo, root / "task.json")
        os.chdir(ROOT)
    m = measure(path)
    m["wiring_callees"] = sorted(lines.pop("wiring callees"))  # type: ignore[arg-type]
    handed = lines.pop("handoffs")  # type: ignore[arg-type]
    m["phase_rows"] = phase_rows(lines, handed)  # type: ignore[arg-type]
    verdict = (result.get("verdict") or {}).get("outcome")
    text = report(m, result.get("state"), verdict)
    print(text)
    if code != 0 or result.get("state") not in ("integrated", "cleaned"):
        print(f"warning: the delegation ended {result.get('state')} (exit {code})", file=sys.stderr)
    if args.write:
        doc = DOC.read_text("utf-8")
        head, _, rest = doc.partition(BEGIN)
        _, _, tail = rest.partition(END)
        DOC.write_text(head + text + tail, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
