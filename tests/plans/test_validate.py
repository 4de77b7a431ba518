"""Graph checks, waves, and the conservative glob-overlap rule."""

from __future__ import annotations

import pytest

from bosun.plans.model import parse_plan
from bosun.plans.validate import (
    PlanInvalid,
    check_plan,
    compute_waves,
    find_cycle,
    glob_overlap,
    globs_overlap,
    validated,
)


def plan(*tasks: dict, verify: object = "true"):
    return parse_plan({"title": "p", "verify": verify, "tasks": list(tasks)})


def t(tid: str, *deps: str, owns: list[str] | None = None, **kw: object) -> dict:
    return {"id": tid, "prompt": "x", "depends": list(deps), "owns": owns if owns is not None else [f"{tid}/**"], **kw}


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("src/**", "src/a.py", True),
        ("src/a/**", "src/b/**", False),
        ("src/a.py", "src/b.py", False),
        ("src/a.py", "src/a.py", True),
        ("src", "src/deep/x.py", True),  # a directory covers everything below it
        ("src/x", "src/x/y.py", True),  # file vs directory of the same name: git conflicts too
        ("*.py", "src/a.py", True),  # no slash: a name at any depth
        ("*.py", "docs/a.md", False),  # a.md names a file: nothing is below it
        ("*.py", "docs/a", True),  # the covering rule: docs/a/x.py matches both
        ("geo.py", "circle.py", False),  # two different file names never overlap
        ("geo.py", "tests/test_circle.py", False),
        ("geo.py", "lib/geo.py", True),  # a name at any depth
        ("conf.d/", "conf.d/x", True),  # a trailing "/" says directory, dot or not
        ("*.py", "docs/**", True),
        ("src/*.py", "docs/**", False),
        ("conftest.py", "tests/unit/conftest.py", True),
        ("**/test_*.py", "tests/test_a.py", True),
        ("tests/**/test_*.py", "src/app.py", False),
        ("tests/**/*.py", "tests/data.json", False),  # data.json is a file, not a directory
        ("tests/**/*.py", "tests/data", True),  # tests/data/x.py
        ("src/*.py", "src/*.js", False),  # literal suffixes disagree
        ("src/a*", "src/b*", False),  # literal prefixes disagree
        ("src/a*z", "src/ab*", True),  # unsure: overlap
        ("src/*/x.py", "src/sub/**", True),
        ("src/*/x.py", "lib/**", False),
        ("a/**/b", "a/b", True),
        ("./README.md", "docs/README.md", False),  # "./" anchors at the root
        ("README.md", "docs/README.md", True),
        ("src/[ab].py", "src/a.py", True),
        ("src/[ab].py", "src/c.py", False),
        ("", "src/a.py", False),
    ],
)
def test_glob_overlap_rule(a, b, overlap):
    assert glob_overlap(a, b) is overlap
    assert glob_overlap(b, a) is overlap


@pytest.mark.parametrize(
    ("a", "b", "example"),
    [
        ("src/**", "src/a.py", "src/a.py"),
        ("tests/**/*.py", "tests/data", "tests/data/x.py"),
        ("*.py", "lib/**", "lib/x.py"),
        ("src/[ab].py", "src/a.py", "src/a.py"),
        ("src/a/**", "src/b/**", None),
    ],
)
def test_example_path_matches_both(a, b, example):
    from bosun.plans.validate import example_path

    assert example_path(a, b) == example


def test_tasks_owning_two_different_file_names_run_side_by_side():
    p = plan(t("geo", owns=["geo.py"]), t("circle", owns=["circle.py"]), t("area", owns=["area.py", "docs/area.md"]))
    assert validated(p) == [["geo", "circle", "area"]]


def test_globs_overlap_names_the_pair_and_treats_empty_as_anywhere():
    assert globs_overlap(["a/**", "b/x.py"], ["c/**", "b/*.py"]) == ("b/x.py", "b/*.py")
    assert globs_overlap(["a/**"], ["b/**"]) is None
    assert globs_overlap([], ["b/**"]) == ("**", "b/**")


def test_cycle_is_named_in_dependency_order():
    deps = {"a": ["b"], "b": ["c"], "c": ["a"], "d": []}
    cycle = find_cycle(deps)
    assert cycle is not None and cycle[0] == cycle[-1] and len(cycle) == 4
    for x, y in zip(cycle, cycle[1:], strict=False):
        assert y in deps[x]
    assert find_cycle({"a": [], "b": ["a"]}) is None


def test_waves_and_transitive_independence():
    p = plan(t("a"), t("b", "a"), t("c", "a"), t("d", "b", "c"), t("e"))
    problems, waves = check_plan(p)
    assert problems == []
    assert waves == [["a", "e"], ["b", "c"], ["d"]]
    assert compute_waves({"x": [], "y": ["x"]}, ["y", "x"]) == [["x"], ["y"]]


def test_transitively_sequenced_tasks_may_own_the_same_paths():
    p = plan(t("a", owns=["src/**"]), t("b", "a", owns=["lib/**"]), t("c", "b", owns=["src/**"]))
    assert validated(p) == [["a"], ["b"], ["c"]]


def test_concurrent_overlap_is_an_error_naming_tasks_glob_and_fix():
    p = plan(t("a", owns=["src/**"]), t("b", owns=["src/app.py"]))
    with pytest.raises(PlanInvalid) as exc:
        validated(p)
    [problem] = exc.value.problems
    assert problem.code == "OWNS_OVERLAP" and problem.tasks == ["a", "b"]
    assert "'src/**'" in problem.message and "'src/app.py'" in problem.message
    assert "depends" in problem.hint
    assert exc.value.exit_code == 2


def test_graph_problems_are_all_reported():
    p = plan(t("a", "b"), t("b", "a"), t("c", "ghost"), t("c"), t("d", "d"))
    problems, waves = check_plan(p)
    codes = sorted(p.code for p in problems)
    assert codes == ["DEPENDENCY_CYCLE", "DEPENDENCY_CYCLE", "DUPLICATE_TASK_ID", "UNKNOWN_DEPENDENCY"]
    assert waves is None
    cycle = next(p for p in problems if "cycle:" in p.message)
    assert "a -> b -> a" in cycle.message or "b -> a -> b" in cycle.message


def test_nothing_verifies_unless_plan_or_task_verify():
    problems, _ = check_plan(plan(t("a"), verify=[]))
    assert [p.code for p in problems] == ["NOTHING_VERIFIES"]
    problems, _ = check_plan(plan(t("a", verify="true"), verify=[]))
    assert problems == []
    problems, _ = check_plan(plan(t("a", mode="review"), verify=[]))
    assert problems == []  # a review task changes nothing
