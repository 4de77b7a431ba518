"""bosun's state dir without BOSUN_HOME is the platform state dir platformdirs would give."""

from __future__ import annotations

import platformdirs
import pytest

from bosun.core.paths import bosun_home


@pytest.mark.parametrize("xdg", [None, "", "/tmp/xdg-state"])
def test_default_home_is_platformdirs_state_dir(monkeypatch, xdg):
    monkeypatch.delenv("BOSUN_HOME", raising=False)
    if xdg is None:
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_STATE_HOME", xdg)
    from pathlib import Path

    assert bosun_home() == Path(platformdirs.user_state_dir("bosun")).resolve()
