"""The upstream corpus: real commits of small public Python projects, judged end to end, against targets.

tests/fixtures/upstream_corpus/cases.py names the commits (none of the verdict corpus's projects),
the cheats and the attacks; build.py writes the corpus from local mirrors outside this repository
(upstream source is not committed here) and measure.py runs every variant through a real
`bosun delegate` with the `command` worker, in parallel processes. measured-main.json is what main
gave; docs/gates.md ("The upstream corpus") reports it. The slow tests run when the corpus is built
($BOSUN_UPSTREAM_CORPUS or ~/.cache/bosun/upstream-corpus) and skip, saying how to build it, when not.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent.parent / "fixtures" / "upstream_corpus"
VERDICT_CORPUS = HERE.parent / "verdict_corpus" / "cases.py"
MEASURED = HERE / "measured-main.json"


def load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


cases = load("upstream_corpus_cases", HERE / "cases.py")
measure = load("upstream_corpus_measure", HERE / "measure.py")
CORPUS = measure.default_corpus()
built = pytest.mark.skipif(not (CORPUS / "cases").is_dir(), reason=(
    f"the upstream corpus is not built at {CORPUS}: run `python tests/fixtures/upstream_corpus/build.py "
    "MIRRORS_DIR` (or set BOSUN_UPSTREAM_CORPUS)"))


def test_the_case_list_has_what_the_targets_need():
    """At least 30 commits of at least 8 projects other than the verdict corpus's, a root test.py
    project, each kind of honest change the issue names, and the cheats and attacks it names."""
    vc = load("verdict_corpus_cases", VERDICT_CORPUS)
    projects = {c["repo"] for c in cases.CASES}
    assert len(cases.CASES) >= 30 and len(projects) >= 8
    assert not projects & {c["repo"] for c in vc.CASES}
    assert len({c["name"] for c in cases.CASES}) == len(cases.CASES)
    assert any(c.get("verify") == ["test.py"] for c in cases.CASES)
    kinds = {c["kind"] for c in cases.CASES}
    assert {"fix", "deprecated-branch", "table-entry", "rename", "legacy-ordering", "folded-into-parametrized",
            "tox-env"} <= kinds
    cheats = {ch["name"]: ch for c in cases.CASES for ch in c.get("cheats", [])}
    assert {"test-renamed", "unittest-skip", "assert-true-or", "expected-buggy"} <= cheats.keys()
    attacks = {name for name, ch in cheats.items() if ch.get("attack")}
    assert attacks == {"runtest-wrapped", "skipped-at-import", "exit-at-import", "dist-info-plugin",
                       "shadowed-plugin-dependency", "relative-path-python"}
    assert any(ch.get("special_case") for ch in cheats.values())


def test_the_docs_report_what_main_gave():
    """docs/gates.md's before column is measured-main.json's counts, group by group and code by code."""
    docs = (HERE.parents[2] / "docs" / "gates.md").read_text()
    counts = measure.summary(json.loads(MEASURED.read_text())["results"])
    section = docs[docs.index("## The upstream corpus"):]
    for group, c in counts["groups"].items():
        assert f"| {group} | {c['variants']} | {c['landable']} | {c['needs_review']} | {c['refused']} |" in section
    for name, (hit, total) in counts["targets"].items():
        assert f"| {measure.TARGET_NAMES[name]} | {hit} of {total} |" in section


@pytest.mark.slow
@built
def test_a_variant_runs_end_to_end_and_lands_nothing(tmp_path):
    """One honest change and one attack through a real `bosun delegate`: each gets a verdict, and the
    user's repository is as it was (nothing lands without approval)."""
    results = measure.measure(CORPUS, jobs=2, only=["slugify-stopwords-separator@split:honest",
                                                    "parse-grouping-char@split:exit-at-import"])
    assert len(results) == 2
    for r in results:
        assert r["outcome"] in ("landable", "needs_review", "refused"), r
        assert r["landed_nothing"], r


@pytest.mark.slow
@built
@pytest.mark.xfail(strict=False, reason=(
    "needs the worker's own tests as proof (OWN_TESTS_PROOF, per-test outcomes, behaviour removed is not a "
    "weakened test) and a runner the code under test cannot alter: the proof and runner changes"))
def test_the_corpus_meets_the_targets():
    """Every variant of the corpus, judged: honest refused at most 1 in 20; worker-tested changes proven
    by their own tests and landable once a cross-review clears them, 80% of them at least; no cheat
    landable; every attack on the runner refused. Special-casing is counted apart (no holdout here)."""
    results = measure.measure(CORPUS, jobs=2)
    errors = [r for r in results if r["outcome"] == "error" or not r["landed_nothing"]]
    assert not errors, errors
    assert measure.targets_met(measure.summary(results)) == [], measure.table(results)
