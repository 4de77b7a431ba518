from __future__ import annotations

import pytest

from bosun.core.contract import contract_from_mapping, json_schema, load_contract, parse_mapping
from bosun.core.contract_template import TEMPLATE
from bosun.core.errors import BadInput


def test_template_is_valid_and_verify_strings_are_split_not_shelled():
    task = contract_from_mapping(parse_mapping(TEMPLATE, "template"))
    assert task.verify[0].argv() == ["python", "-m", "pytest", "-q", "tests/test_pages.py"]
    assert task.limits.max_files == 10


def test_shell_is_explicit():
    task = contract_from_mapping({"title": "t", "prompt": "p", "verify": [{"run": "a && b", "shell": True}]})
    assert task.verify[0].argv() == ["/bin/sh", "-c", "a && b"]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"title": "t", "prompt": "p", "colour": "red"}, "unknown field 'colour'"),
        ({"title": "t", "prompt": "   "}, "prompt is empty"),
        ({"title": "t"}, "missing required field 'prompt'"),
        ({"title": "t", "prompt": "p", "scope": ["../etc/**"]}, "'..' not allowed"),
        ({"title": "t", "prompt": "p", "locked": ["/etc/passwd"]}, "absolute path"),
        ({"title": "t", "prompt": "p", "mode": "yolo"}, "mode"),
    ],
)
def test_bad_contracts_name_the_problem(data, needle):
    with pytest.raises(BadInput) as exc:
        contract_from_mapping(data, "task.yaml")
    assert needle in exc.value.message
    assert exc.value.exit_code == 2


def test_malformed_yaml_reports_line(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("title: x\nprompt: [unclosed\n")
    with pytest.raises(BadInput) as exc:
        load_contract(p)
    assert "line" in exc.value.message


def test_missing_file():
    with pytest.raises(BadInput):
        load_contract("/nonexistent/task.yaml")


def test_the_shipped_schema_is_the_models():
    # `bosun schema` prints the file without loading pydantic; after a change to the contract's
    # models, regenerate it: python -c "import json; from bosun.core.contract import json_schema;
    # open('src/bosun/task_contract.schema.json', 'w').write(json.dumps(json_schema(), indent=2) + '\\n')"
    import json
    from pathlib import Path

    import bosun

    shipped = (Path(bosun.__file__).parent / "task_contract.schema.json").read_text(encoding="utf-8")
    assert shipped == json.dumps(json_schema(), indent=2) + "\n"


def test_an_unknown_field_gets_the_closest_known_one(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("title: t\nprompt: p\nverfy: [pytest]\nlimits: {max_fils: 3}\ncolour: red\n")
    with pytest.raises(BadInput) as caught:
        load_contract(str(path))
    hints = {p.message.split("unknown field ")[1]: p.hint for p in caught.value.problems}
    assert hints["'verfy'"].startswith("did you mean 'verify'?")
    assert hints["'limits.max_fils'"].startswith("did you mean 'max_files'?")
    assert hints["'colour'"] == "`bosun schema` lists the fields a task accepts"


def test_repair_and_best_of_are_bounded_and_best_of_takes_a_bare_k():
    from bosun.core.contract import contract_from_mapping
    from bosun.core.errors import ProblemsFound

    base = {"title": "t", "prompt": "p"}
    task = contract_from_mapping({**base, "repair": 2, "best_of": 3})
    assert task.repair == 2 and task.best_of is not None and task.best_of.k == 3 and task.best_of.profiles == []
    task = contract_from_mapping({**base, "best_of": {"k": 2, "profiles": ["a", "b"]}})
    assert task.best_of is not None and task.best_of.profiles == ["a", "b"]
    assert contract_from_mapping(base).repair is None  # unset: bosun.toml's repair decides
    for bad in ({"repair": 4}, {"repair": -1}, {"best_of": 1}, {"best_of": 6}, {"best_of": {"k": 3, "n": 1}}):
        with pytest.raises(ProblemsFound):
            contract_from_mapping({**base, **bad})
