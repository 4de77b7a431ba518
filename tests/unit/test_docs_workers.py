"""Docs that cannot drift: every adapter in the registry has its section in docs/workers.md."""

from __future__ import annotations

import re
from pathlib import Path

from bosun.config import ADAPTERS as CONFIG_ADAPTERS
from bosun.workers.registry import ADAPTERS

WORKERS_MD = Path(__file__).resolve().parents[2] / "docs" / "workers.md"


def test_every_adapter_has_a_section_in_workers_md():
    headings = re.findall(r"^## .*\(`adapter = \"([a-z]+)\"`\)$", WORKERS_MD.read_text(), flags=re.M)
    missing = sorted(set(ADAPTERS) - set(headings))
    assert not missing, f"docs/workers.md has no '## ... (`adapter = \"NAME\"`)' section for {missing}"


def test_the_registry_and_the_config_agree():
    assert set(ADAPTERS) == set(CONFIG_ADAPTERS)


def test_the_guide_to_writing_an_adapter_is_there():
    assert "## Writing an adapter" in WORKERS_MD.read_text()
