"""Docs that cannot drift: every adapter in the registry has its section in docs/workers.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bosun.core.adapters import ADAPTERS, NAMES
from bosun.core.config import Profile
from bosun.core.errors import BadInput
from bosun.workers.registry import get_worker

WORKERS_MD = Path(__file__).resolve().parents[2] / "docs" / "workers.md"
CONFIGURATION_MD = WORKERS_MD.parent / "configuration.md"


def test_every_adapter_has_a_section_in_workers_md():
    headings = re.findall(r"^## .*\(`adapter = \"([a-z]+)\"`\)$", WORKERS_MD.read_text(), flags=re.M)
    missing = sorted(set(ADAPTERS) - set(headings))
    assert not missing, f"docs/workers.md has no '## ... (`adapter = \"NAME\"`)' section for {missing}"


def test_the_one_table_loads_every_adapter_and_config_accepts_exactly_those():
    for name in NAMES:
        assert get_worker(name).name == name
        assert Profile(adapter=name).adapter == name
    with pytest.raises(ValueError, match="did you mean 'opencode'"):
        Profile(adapter="opencod")
    with pytest.raises(BadInput, match="valid adapters: command, native"):
        get_worker("nope")


def test_the_configuration_reference_lists_every_adapter_in_order():
    row = next(line for line in CONFIGURATION_MD.read_text().splitlines() if line.startswith("| `adapter` |"))
    listed = re.findall(r"`([a-z]+)`", row.split("|")[3].split("(")[0])
    assert listed == list(ADAPTERS)


def test_the_guide_to_writing_an_adapter_is_there():
    assert "## Writing an adapter" in WORKERS_MD.read_text()


def test_every_adapter_shares_the_cli_base_or_says_why_not():
    from bosun.workers.cli_worker import CliWorker

    for name in NAMES:
        cls = type(get_worker(name))
        if not issubclass(cls, CliWorker):
            assert (cls.__doc__ or "").startswith("Not a ``CliWorker``: "), f"{name}: say in one line why not"
