"""Verify commands run the worker's code: the kernel sandbox confines them as it confines the worker."""

from __future__ import annotations

import sys

import pytest

from bosun.sandbox import probe
from tests.conftest import task_yaml


@pytest.mark.skipif(probe().mechanism == "none", reason="this kernel has no Landlock")
def test_a_verify_command_cannot_write_outside_the_tree_it_verifies(cli, repo, tmp_path):
    target = tmp_path / "outside.txt"
    code_line = f"open({str(target)!r}, 'w').write('pwned')"
    task = task_yaml(tmp_path / "t.json", verify=[[sys.executable, "-c", code_line]])
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 3, res
    assert res["verification"]["passed"] is False
    tail = res["verification"]["commands"][0]["output_tail"]
    assert "Permission" in tail or "Read-only file system" in tail, tail
    assert not target.exists()
