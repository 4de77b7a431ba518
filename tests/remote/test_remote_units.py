"""The remote pieces one at a time: messages, bundles with real git, leases against a real nats-server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bosun.remote import bundles, leases
from bosun.remote import protocol as P
from tests.conftest import git, make_repo


def task_msg(**over: Any) -> dict[str, Any]:
    doc = {"task_id": "20261201-101010-abcdef-123456", "run_id": "r", "repo_key": "k" * 24, "base": "a" * 40,
           "bundles": [{"name": "bundle-x", "tip": "a" * 40}], "task": {}, "prompt": "p"}
    doc.update(over)
    return doc


def test_a_task_message_round_trips_and_bad_ids_are_refused():
    msg = P.TaskMsg.decode(json.dumps(task_msg()).encode())
    assert P.TaskMsg.decode(msg.encode()) == msg
    from bosun.core.errors import BadInput

    with pytest.raises(BadInput):
        P.TaskMsg.decode(json.dumps(task_msg(task_id="a.b")).encode())  # a subject wildcard level
    with pytest.raises(ValueError):
        P.TaskMsg.decode(json.dumps(task_msg(base="HEAD")).encode())
    with pytest.raises(ValueError):
        P.TaskMsg.decode(b"x" * (P.MAX_TASK_BYTES + 1))


def test_backoff_doubles_from_ack_wait_and_is_capped():
    t = P.Timing(ack_wait=30, max_deliver=6)
    assert t.backoff() == [30, 60, 120, 240, 480, 600]


def test_remote_in_config_defines_the_remote_profile(tmp_path):
    from bosun.core.config import Settings

    s = Settings.model_validate({"remote": "nats://hub:4222"})
    prof = s.profile("remote")
    assert (prof.adapter, prof.base_url, prof.model) == ("remote", "nats://hub:4222", "default")


def test_a_pools_capacity_is_its_live_agents_not_draining():
    from bosun.remote.presence import pool_capacity

    agents = [{"name": "a", "pool": "default", "capacity": 4}, {"name": "b", "pool": "default", "capacity": 2},
              {"name": "c", "pool": "gpu", "capacity": 8}, {"name": "d", "pool": "default", "capacity": 3,
                                                            "draining": True},
              {"name": "e", "pool": "default", "capacity": "lots"}]
    assert pool_capacity(agents, "default") == 6
    assert pool_capacity(agents, "gpu") == 8
    assert pool_capacity(agents, "none") == 0


def test_bases_ship_as_tree_only_commits_in_incremental_bundles(tmp_path):
    repo = make_repo(tmp_path / "repo")
    tree1 = bundles.disk_tree(repo, tmp_path / "scratch")
    assert tree1 == git(repo, "rev-parse", "HEAD^{tree}").strip()
    ship1, parent, chain = bundles.plan_ship(repo, tree1, None)
    assert parent is None and chain == []
    assert git(repo, "rev-list", "--count", ship1).strip() == "1"  # none of the user's history
    full = bundles.make_bundle(repo, ship1, None)

    (repo / "src" / "calc.py").write_text("changed\n")  # uncommitted: the disk is what ships
    tree2 = bundles.disk_tree(repo, tmp_path / "scratch")
    assert tree2 != tree1
    assert git(repo, "status", "--porcelain").strip() == "M src/calc.py"  # the real index is untouched
    tip = {"commit": ship1, "bundles": [{"name": "b1", "tip": ship1}]}
    ship2, parent, chain = bundles.plan_ship(repo, tree2, tip)
    assert parent == ship1 and [b.tip for b in chain] == [ship1]
    delta = bundles.make_bundle(repo, ship2, ship1)
    assert b"-" + ship1.encode() in delta.split(b"\n\n")[0]  # needs ship1: a prerequisite, not a copy

    agent = bundles.cache_repo(tmp_path / "cache", "k")
    assert not (agent / "bosun.toml").exists() and not bundles.has_commit(agent, ship1)
    bundles.fetch_bundle(agent, full)
    bundles.fetch_bundle(agent, delta)
    assert bundles.has_commit(agent, ship2)
    assert git(agent, "show", f"{ship2}:src/calc.py") == "changed\n"
    assert git(agent, "status", "--porcelain") == ""  # the cache checkout stays empty


def test_every_worktree_of_a_repository_shares_its_key(tmp_path):
    # Runs of one repository share a ship chain and an agent's cache: the key is the repository's.
    repo = make_repo(tmp_path / "repo")
    other = make_repo(tmp_path / "other")
    for name in ("w1", "w2"):
        git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / name), "HEAD")
    key = bundles.repo_key(repo)
    assert bundles.repo_key(tmp_path / "w1") == bundles.repo_key(tmp_path / "w2") == key
    assert bundles.repo_key(other) != key


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_one_lease_one_terminal_result_and_a_lost_lease_publishes_nothing(nats_server):
    from bosun.remote.connect import ConnectOptions, connect, ensure_infra

    async def main() -> None:
        nc = await connect(ConnectOptions(url=nats_server.url))
        infra = await ensure_infra(nc.jetstream(), P.Timing(lease_ttl=2, heartbeat=0.5))
        first = await leases.claim(infra["leases"], "t1", "a1")
        assert first is not None
        assert await leases.claim(infra["leases"], "t1", "a2") is None  # held
        await first.renew()
        # Someone takes the lease over (a forced hand-back, an expired holder): the old holder is fenced.
        await infra["leases"].delete("t1")
        second = await leases.claim(infra["leases"], "t1", "a2")
        assert second is not None
        with pytest.raises(leases.LeaseLost):
            await leases.finish(first, infra["done"], P.Outcome("t1", "a1", 0, "ok"))
        assert await leases.recorded(infra["done"], "t1") is None
        assert await leases.finish(second, infra["done"], P.Outcome("t1", "a2", 0, "ok"))
        got = await leases.recorded(infra["done"], "t1")
        assert got is not None and (got.agent, got.revision) == ("a2", second.revision)
        # A second terminal result for the same task is refused by the create-once record.
        third = await leases.claim(infra["leases"], "t2", "a3")
        assert third is not None
        await infra["done"].create("t2", P.Outcome("t2", "x", 1, "cancelled").encode())
        assert not await leases.finish(third, infra["done"], P.Outcome("t2", "a3", 0, "ok"))
        await nc.close()

    run(main())
