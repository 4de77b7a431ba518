"""The replay script format: forms of turns, faults, options and errors."""

from __future__ import annotations

import json

import pytest

from bosun.replay import ScriptError, bundled_script_path, load_script


def test_plain_list_of_turns_in_every_form():
    script = load_script(
        [
            {"read": "a.py"},
            {"actions": [{"read": "a.py"}, {"grep": "TODO", "path": "src"}], "say": "looking"},
            [{"list": "."}, {"run": "pytest -q"}],
            {"write": "b.py", "content": 42},
            {"edit": "a.py", "old": "x", "new": "y", "say": "editing"},
            "All done",
        ]
    )
    t = script.turns
    assert [a.kind for a in t[0].actions] == ["read"]
    assert [a.kind for a in t[1].actions] == ["read", "grep"] and t[1].say == "looking"
    assert t[1].actions[1].path == "src"
    assert [a.kind for a in t[2].actions] == ["list", "run"]
    assert t[3].actions[0].content == "42"  # YAML numbers are text in a script
    assert (t[4].actions[0].old, t[4].actions[0].new, t[4].say) == ("x", "y", "editing")
    assert t[5].say == "All done" and not t[5].actions
    assert [turn.index for turn in t] == list(range(6))
    assert script.on_exhausted == "say" and script.exhausted_text == "done"
    assert script.consume_toolless is None


def test_mapping_form_options_and_match_rules():
    script = load_script(
        {
            "turns": [{"say": "hi"}],
            "on_exhausted": "error",
            "consume_toolless": False,
            "side_reply": "Title",
            "match": [{"text": "(?i)summarize", "reply": "ok"}],
            "models": ["m1", "m2"],
        }
    )
    assert script.on_exhausted == "error"
    assert script.consume_toolless is False
    assert script.side_reply == "Title"
    assert script.match[0].matches("Please SUMMARIZE", "m", has_tools=True)
    assert script.models == ("m1", "m2")


def test_faults_and_usage():
    script = load_script(
        """
- fault: 429
  retry_after: 2
- fault: model_not_found
- fault: stall
  stall_s: 0.5
- fault: {status: 500, message: boom}
- say: ok
  usage: {input: 100, output: 7, cached: 40}
- fault: 401
  repeat: 3
"""
    )
    f = [t.fault for t in script.turns]
    assert (f[0].kind, f[0].status, f[0].retry_after) == ("status", 429, 2.0)
    assert f[1].kind == "model_not_found"
    assert (f[2].kind, f[2].stall_s) == ("stall", 0.5)
    assert (f[3].status, f[3].message) == (500, "boom")
    assert script.turns[4].usage.input == 100 and script.turns[4].usage.cached == 40
    assert [t.fault.status for t in script.turns[5:]] == [401, 401, 401]  # repeat: 3
    assert [t.index for t in script.turns[5:]] == [5, 6, 7]


@pytest.mark.parametrize(
    "bad",
    [
        [{"read": "a", "write": "b", "content": "x"}],
        [{"edit": "a.py", "old": "x"}],
        [{"read": "a", "colour": "red"}],
        [{"fault": 429, "say": "also text"}],
        [{"fault": "explode"}],
        [{"fault": 200}],
        [{"say": "x", "usage": {"tokens": 3}}],
        [{"say": "x", "repeat": 0}],
        {"turns": [], "on_exhausted": "panic"},
        {"turns": [], "extra": 1},
        {"conversations": [{"turns": []}]},
        {"conversations": [{"match": "(", "turns": []}]},
        {"conversations": [{"match": "a", "turns": [], "colour": 1}]},
        42,
    ],
)
def test_bad_scripts_are_rejected_with_a_clear_error(bad):
    with pytest.raises(ScriptError):
        load_script(bad)


def test_files_text_and_bundled_names(tmp_path):
    yaml_file = tmp_path / "s.yaml"
    yaml_file.write_text("- read: x.py\n- say: done\n")
    json_file = tmp_path / "s.json"
    json_file.write_text(json.dumps({"turns": [{"run": "ls"}]}))
    assert load_script(yaml_file).turns[0].actions[0].target == "x.py"
    assert load_script(str(json_file)).turns[0].actions[0].kind == "run"
    assert load_script("- say: inline\n").turns[0].say == "inline"
    with pytest.raises(ScriptError):
        load_script(str(tmp_path / "missing.yaml"))


def test_bundled_fix_bug_script_reads_edits_and_says_done():
    assert bundled_script_path("fix_bug").is_file()
    script = load_script("fix_bug")
    kinds = [[a.kind for a in t.actions] for t in script.turns]
    assert kinds == [["read"], ["edit"], []]
    assert script.turns[-1].say
    for name in ("rate_limited_fix", "say_hello"):
        assert load_script(name).turns
