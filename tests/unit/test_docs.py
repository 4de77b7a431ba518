"""Docs that cannot drift: every config key, gate code and CLI verb is documented."""

from __future__ import annotations

from pathlib import Path

from bosun.cli.main import build_parser
from bosun.config import Budget, Notify, Profile, Settings
from bosun.gates import ENGINE_GATE_CODES, GATE_CODES

DOCS = Path(__file__).resolve().parents[2] / "docs"
README = (DOCS.parent / "README.md").read_text()


def test_every_config_key_is_documented():
    text = (DOCS / "configuration.md").read_text()
    for key in [*Settings.model_fields, *Profile.model_fields, *Notify.model_fields, *Budget.model_fields]:
        if key == "name":  # the table name, not a key
            continue
        assert f"`{key}`" in text, f"config key {key!r} is missing from docs/configuration.md"


def test_every_gate_is_documented():
    text = (DOCS / "gates.md").read_text()
    for code in (*GATE_CODES, *ENGINE_GATE_CODES):
        assert f"`{code}`" in text, code


def test_every_verb_is_in_the_readme():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for verb in sub.choices:
        assert f"`{verb}" in README or f"bosun {verb}" in README, verb
