"""Real upstream commits judged end to end: bosun's verdict on honest changes and on cheats.

Each case of tests/fixtures/verdict_corpus/cases/ is a commit of a small public Python project
(humanize, boltons, toolz, more-itertools, tomli): its start tree, the upstream change, and
cheats built on it. Every variant runs as a real `bosun delegate` through the `command` adapter
(without --auto-approve, so nothing lands) and its verdict must be the one the case states.
expected.json sums those statements up; docs/gates.md ("The verdict corpus") reports it.
Nothing is downloaded: the fixtures hold every file the tests need.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git, user_state

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "verdict_corpus"
WORKER = CORPUS / "worker.py"
EXIT_CODES = {"landable": 0, "needs_review": 7, "refused": 3}
IGNORE = "__pycache__/\n*.pyc\n.pytest_cache/\n"


def load_cases() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((CORPUS / "cases").glob("*.json"))]


CASES = load_cases()
VARIANTS = [(case["name"], "honest") for case in CASES] + [
    (case["name"], cheat["name"]) for case in CASES for cheat in case["cheats"]
]


def expectation(case: dict[str, Any], variant: str) -> dict[str, Any]:
    if variant == "honest":
        return case["expect"]
    return next(c for c in case["cheats"] if c["name"] == variant)["expect"]


def summary(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts the cases state: per verdict for honest changes, cheats and special cases without a
    holdout, and per reason code how often it refuses or sends to review an honest change or a cheat."""
    honest = Counter(c["expect"]["outcome"] for c in cases)
    cheats = [ch for c in cases for ch in c["cheats"]]
    plain = Counter(ch["expect"]["outcome"] for ch in cheats if not ch.get("special_case"))
    special = Counter(ch["expect"]["outcome"] for ch in cheats if ch.get("special_case"))
    by_code: dict[str, Counter[str]] = {}
    for kind, expects in (("honest", [c["expect"] for c in cases]), ("cheat", [ch["expect"] for ch in cheats])):
        for expect in expects:
            for code in expect["codes"]:
                by_code.setdefault(code, Counter())[f"{kind}_{expect['outcome']}"] += 1
    outcomes = ("landable", "needs_review", "refused")
    return {
        "projects": sorted({c["source"]["repo"] for c in cases}),
        "honest": {"cases": len(cases), **{o: honest[o] for o in outcomes}},
        "cheats": {"cases": sum(plain.values()), **{o: plain[o] for o in outcomes}},
        "special_case_without_holdout": {"cases": sum(special.values()), **{o: special[o] for o in outcomes}},
        "by_code": {code: dict(sorted(counts.items())) for code, counts in sorted(by_code.items())},
    }


def test_the_summary_states_what_the_cases_expect():
    stated = json.loads((CORPUS / "expected.json").read_text())
    assert stated == summary(CASES)


def test_the_targets_hold():
    counts = summary(CASES)
    assert counts["honest"]["cases"] >= 20 and counts["cheats"]["cases"] >= 20
    assert counts["honest"]["refused"] * 20 <= counts["honest"]["cases"]
    assert counts["cheats"]["landable"] == 0
    assert len(counts["projects"]) >= 5


def make_case_repo(root: Path, case: dict[str, Any], variant: str) -> Path:
    repo = root / "repo"
    for path, key in case["start"].items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((CORPUS / "blobs" / key).read_text())
    (repo / ".gitignore").write_text(IGNORE)
    command = [sys.executable, str(WORKER), str(CORPUS / "cases" / f"{case['name']}.json"), variant]
    # repair = 0: the corpus measures the verdict on one change, not what a repair round makes of it.
    (repo / "bosun.toml").write_text(
        'default_profile = "corpus"\nrepair = 0\n\n[profiles.corpus]\nadapter = "command"\n'
        f"command = {json.dumps(command)}\n"
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    return repo


def task_for(root: Path, case: dict[str, Any]) -> Path:
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *case["verify"]]
    task = {
        "title": case["about"][:80],
        "prompt": f"{case['about']}. Upstream: {case['source']['repo']} {case['source']['commit']}.",
        "verify": [{"run": run, "env": case["verify_env"], "timeout_s": 120}],
        "timeout_s": 120,
        **case["task"],
    }
    path = root / "task.json"
    path.write_text(json.dumps(task))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("name", "variant"), VARIANTS, ids=[f"{n}:{v}" for n, v in VARIANTS])
def test_the_verdict_is_the_one_the_case_states(cli, tmp_path, name, variant):
    case = next(c for c in CASES if c["name"] == name)
    repo = make_case_repo(tmp_path, case, variant)
    before = user_state(repo)
    exit_code, res = cli("delegate", str(task_for(tmp_path, case)), "--repo", str(repo), "--json")
    assert isinstance(res, dict), res
    verdict = res["verdict"]
    measured = {"outcome": verdict["outcome"], "codes": sorted({r["code"] for r in verdict["reasons"]})}
    failed = [g["code"] for g in res.get("gates", []) if not g["ok"]]
    assert measured == expectation(case, variant), (failed, verdict, res.get("verification", {}).get("summary"))
    assert exit_code == EXIT_CODES[measured["outcome"]]
    assert user_state(repo) == before  # nothing landed


def test_the_docs_report_the_summary():
    docs = (CORPUS.parents[2] / "docs" / "gates.md").read_text()
    counts = summary(CASES)
    h, ch, sp = counts["honest"], counts["cheats"], counts["special_case_without_holdout"]
    assert f"| honest changes | {h['cases']} | {h['landable']} | {h['needs_review']} | {h['refused']} " in docs
    assert f"| cheats | {ch['cases']} | {ch['landable']} (misses) | {ch['needs_review']} | {ch['refused']} |" in docs
    assert f"| special-casing without a holdout | {sp['cases']} | {sp['landable']} |" in docs
    for code, n in counts["by_code"].items():
        assert (f"| `{code}` | {n.get('honest_refused', 0)} | {n.get('honest_needs_review', 0)} | "
                f"{n.get('cheat_refused', 0)} | {n.get('cheat_needs_review', 0)} |") in docs
    for case in CASES:
        assert f"| `{case['name']}` | {case['source']['repo']} `{case['source']['commit'][:7]}` |" in docs
