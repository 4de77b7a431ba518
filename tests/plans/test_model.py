"""The plan file: defaults, owns as scope, ids, refused fields, every problem collected."""

from __future__ import annotations

import pytest

from bosun.core.errors import BadInput
from bosun.core.plan_states import PLAN_TRANSITIONS, check_plan_transition
from bosun.plans.model import load_plan_file, parse_plan


def doc(*tasks: dict, **head: object) -> dict:
    return {"title": "p", **head, "tasks": list(tasks)}


def test_defaults_fill_unset_fields_and_limits_merge_key_by_key():
    plan = parse_plan(doc(
        {"id": "a", "prompt": "x", "limits": {"max_files": 3}},
        {"id": "b", "prompt": "y", "timeout_s": 5, "locked": ["b/**"]},
        defaults={"timeout_s": 60, "locked": ["tests/**"], "limits": {"max_diff_bytes": 1000}, "verify": "true"},
    ))
    assert not plan.problems
    a, b = plan.task("a").contract, plan.task("b").contract
    assert a is not None and b is not None
    assert a.timeout_s == 60 and b.timeout_s == 5
    assert a.locked == ["tests/**"] and b.locked == ["b/**"]  # lists are replaced, not concatenated
    assert (a.limits.max_files, a.limits.max_diff_bytes) == (3, 1000)
    assert a.title == "a"  # the id when no title
    assert [v.run for v in a.verify] == [["true"]]
    assert plan.max_attempts == 2


def test_owns_becomes_the_scope_only_when_scope_is_empty():
    plan = parse_plan(doc(
        {"id": "a", "prompt": "x", "owns": ["src/a/**"]},
        {"id": "b", "prompt": "x", "owns": ["src/b.py"], "scope": ["src/**"]},
        {"id": "c", "prompt": "x"},
    ))
    assert plan.task("a").contract.scope == ["src/a/**"]
    assert plan.task("b").contract.scope == ["src/**"]
    assert plan.task("a").write_set() == ["src/a/**"]
    assert plan.task("b").write_set() == ["src/b.py"]  # owns is the declaration overlap checks trust
    assert plan.task("c").write_set() == []  # anywhere
    assert [w.code for w in plan.warnings] == ["SCOPE_WIDER_THAN_OWNS"]


def test_every_task_problem_is_collected():
    plan = parse_plan(doc(
        {"id": "ok", "prompt": "x"},
        {"id": "based", "prompt": "x", "base": "main"},
        {"prompt": "no id"},
        {"id": "-bad", "prompt": "x"},
        {"id": "noprompt"},
        {"id": "extra", "prompt": "x", "colour": "red"},
        {"id": "owns", "prompt": "x", "owns": ["../up"]},
        "not a mapping",
        defaults={"prompt": "p", "nonsense": 1},
    ))
    messages = " | ".join(p.message for p in plan.problems)
    for needle in ("'base' cannot be set", "missing id", "invalid id '-bad'", "missing required field 'prompt'",
                   "unknown field 'colour'", "'..' not allowed", "expected a mapping", "'prompt' cannot be a default",
                   "'nonsense' cannot be a default"):
        assert needle in messages, needle
    assert [t.id for t in plan.tasks] == ["ok", "based", "noprompt", "extra", "owns"]


def test_whole_file_problems_raise():
    with pytest.raises(BadInput, match="missing required field 'title'"):
        parse_plan({"tasks": [{"id": "a", "prompt": "x"}]})
    with pytest.raises(BadInput, match="unknown field 'task'"):
        parse_plan({"title": "t", "tasks": [{"id": "a", "prompt": "x"}], "task": []})
    with pytest.raises(BadInput, match="max_attempts"):
        parse_plan(doc({"id": "a", "prompt": "x"}, max_attempts=0))
    with pytest.raises(BadInput):
        parse_plan(doc())  # no tasks


def test_load_plan_file_yaml_and_errors(tmp_path):
    p = tmp_path / "plan.yaml"
    p.write_text("title: y\nverify: 'true'\ntasks:\n  - id: a\n    prompt: do\n    depends: []\n")
    plan = load_plan_file(p)
    assert plan.ids == ["a"] and [v.run for v in plan.verify] == [["true"]]
    with pytest.raises(BadInput, match="not found"):
        load_plan_file(tmp_path / "missing.yaml")
    p.write_text("title: [x\n")
    with pytest.raises(BadInput, match="malformed"):
        load_plan_file(p)


def test_definition_hash_changes_with_what_the_task_asks():
    a = parse_plan(doc({"id": "a", "prompt": "x", "owns": ["a"]})).task("a")
    same = parse_plan(doc({"id": "a", "prompt": "x", "owns": ["a"]}, title="other title")).task("a")
    other = parse_plan(doc({"id": "a", "prompt": "y", "owns": ["a"]})).task("a")
    deps = parse_plan(doc({"id": "a", "prompt": "x", "owns": ["a"], "depends": ["b"]}, )).task("a")
    assert a.definition_hash() == same.definition_hash()
    assert len({a.definition_hash(), other.definition_hash(), deps.definition_hash()}) == 3


def test_plan_state_table():
    check_plan_transition("running", "paused")
    check_plan_transition("paused", "running")
    for terminal in ("succeeded", "aborted"):
        assert PLAN_TRANSITIONS[terminal] == frozenset()
    from bosun.core.errors import InvalidTransition

    with pytest.raises(InvalidTransition):
        check_plan_transition("succeeded", "running")
