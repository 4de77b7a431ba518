"""Remote workers end to end: a real nats-server, agents as real `bosun agent serve` processes running
scripted workers through the `command` adapter, and the coordinator verifying every change locally."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, git
from tests.remote.conftest import free_port

pytestmark = pytest.mark.slow


def test_task_delegated_to_a_pool_of_two_lands_verified(cli, remote_repo, task_file, agents):
    agents.start("a1")
    agents.start("a2")
    code, res = cli("delegate", str(task_file), "--repo", str(remote_repo), "--remote", "--json", "--auto-approve")
    assert code == 0, res
    assert res["state"] in ("reported", "cleaned")  # landed and reported (the worktree may be gone already)
    assert res["verification"]["passed"] is True
    assert "return a + b" in (remote_repo / "src/calc.py").read_text()
    assert git(remote_repo, "status", "--porcelain") == ""
    served = [n for n in ("a1", "a2") if "published" in agents.log(n)]
    assert len(served) == 1, (agents.log("a1"), agents.log("a2"))
    # The worker's live events reach the coordinator's record: its first one (the edit) included.
    relayed = [json.loads(line) for line in events_text(res["id"]).splitlines()]
    assert any(ev.get("type") == "tool_call" and "src/calc.py" in json.dumps(ev) for ev in relayed), relayed


# -- helpers --------------------------------------------------------------------------------------


def start_coordinator(repo: Path, task: Path, *extra: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.Popen(
        [sys.executable, "-m", "bosun", "delegate", str(task), "--repo", str(repo), "--remote", "--json", *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(proc: subprocess.Popen[str], timeout: float = 90) -> tuple[int, dict]:
    out, err = proc.communicate(timeout=timeout)
    try:
        return proc.returncode, json.loads(out)
    except json.JSONDecodeError:
        raise AssertionError(f"exit {proc.returncode}\nstdout: {out}\nstderr: {err}") from None


def sent_task(timeout: float = 30) -> tuple[str, str]:
    """(run id, task id) of the one remote task this test's coordinator has sent."""
    runs = Path(os.environ["BOSUN_HOME"]) / "runs"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for state in runs.glob("*/remote.json"):
            doc = json.loads(state.read_text())
            if doc.get("published"):
                return state.parent.name, doc["task_id"]
        time.sleep(0.05)
    raise AssertionError("the coordinator sent no remote task")


def events_text(run_id: str) -> str:
    return (Path(os.environ["BOSUN_HOME"]) / "runs" / run_id / "events.jsonl").read_text()


def nats(url: str, job: Any) -> Any:
    """Run ``job(nc, js)`` against the hub as a third client."""
    import nats as nats_client

    async def main() -> Any:
        nc = await nats_client.connect(url)
        try:
            return await job(nc, nc.jetstream())
        finally:
            await nc.close()

    return asyncio.run(main())


def result_notices(url: str, task_id: str) -> list[dict]:
    async def job(nc: Any, js: Any) -> list[dict]:
        got: list[dict] = []

        async def cb(msg: Any) -> None:
            got.append(json.loads(msg.data))

        await js.subscribe(f"bosun.result.{task_id}", cb=cb, ordered_consumer=True)
        await asyncio.sleep(1.0)
        return got

    return nats(url, job)


# -- trust --------------------------------------------------------------------------------------


def test_a_forged_result_notice_from_a_third_client_is_refused(remote_repo, task_file, agents, nats_server):
    agents.start("a1", "slow_fix")
    proc = start_coordinator(remote_repo, task_file)
    run_id, task_id = sent_task()
    agents.wait_for("a1", "claimed")

    async def forge(nc: Any, js: Any) -> None:
        blobs = await js.object_store("bosun_blobs")
        evil = b"diff --git a/src/calc.py b/src/calc.py\n"
        await blobs.put("patch-evil", evil)
        notice = {"task_id": task_id, "agent": "mallory", "revision": 1, "status": "ok", "patch": "patch-evil",
                  "patch_sha256": hashlib.sha256(evil).hexdigest()}
        await js.publish(f"bosun.result.{task_id}", json.dumps(notice).encode())

    nats(nats_server.url, forge)
    code, res = finish(proc)
    assert code == 0, res
    assert res["state"] == "verified"
    assert "return a + b" in Path(res["worktree"], "src/calc.py").read_text()
    assert "ignored a result from 'mallory'" in events_text(run_id)
    notices = result_notices(nats_server.url, task_id)
    assert [n["agent"] for n in notices] == ["mallory", "a1"]


def test_a_result_recorded_by_a_client_that_holds_no_lease_is_refused(remote_repo, task_file, agents, nats_server):
    agents.start("a1", "slow_fix")
    proc = start_coordinator(remote_repo, task_file)
    run_id, task_id = sent_task()
    agents.wait_for("a1", "claimed")

    async def forge(nc: Any, js: Any) -> None:  # writes the terminal record itself, before the holder
        done = await js.key_value("bosun_done")
        outcome = {"task_id": task_id, "agent": "mallory", "revision": 1, "status": "ok", "patch": None}
        await done.create(task_id, json.dumps(outcome).encode())

    nats(nats_server.url, forge)
    code, res = finish(proc)
    assert res["state"] == "failed", res
    assert "refused the result" in res["error"]["message"]
    assert "return a - b  # bug" in Path(res["worktree"], "src/calc.py").read_text()  # nothing applied
    agents.wait_for("a1", "a result was already recorded")  # the holder's late result is dropped


def test_a_result_that_fails_local_verification_is_rejected_though_the_agent_reported_success(
        cli, remote_repo, task_file, agents):
    agents.start("a1", "lie")
    code, res = cli("delegate", str(task_file), "--repo", str(remote_repo), "--remote", "--json")
    assert code == 3, res
    assert res["state"] == "rejected"
    assert res["verification"]["passed"] is False
    assert "return a * b" in Path(res["worktree"], "src/calc.py").read_text()
    assert "return a - b  # bug" in (remote_repo / "src/calc.py").read_text()  # nothing landed


# -- failures -------------------------------------------------------------------------------------


def test_an_agent_killed_mid_task_has_its_task_redelivered_and_the_run_ends_with_one_result(
        remote_repo, task_file, agents, nats_server):
    agents.start("a1", "slow_fix")
    proc = start_coordinator(remote_repo, task_file)
    _, task_id = sent_task()
    agents.wait_for("a1", "claimed")
    agents.start("a2", "fix")
    agents.wait_for("a2", "serving")
    agents.kill("a1")
    code, res = finish(proc)
    assert code == 0, res
    assert res["state"] == "verified"
    agents.wait_for("a2", "published")
    assert "delivery 2" in agents.log("a2") or "delivery 3" in agents.log("a2")
    assert [n["agent"] for n in result_notices(nats_server.url, task_id)] == ["a2"]


def test_cancel_reaches_a_running_remote_worker(cli, remote_repo, task_file, agents, nats_server):
    agents.start("a1", "hang")
    proc = start_coordinator(remote_repo, task_file)
    run_id, task_id = sent_task()
    agents.wait_for("a1", "claimed")
    time.sleep(1.0)  # the worker is running
    code, res = cli("cancel", run_id, "--json")
    assert code in (0, 1), res
    code, res = finish(proc)
    assert res["state"] == "cancelled", res
    agents.wait_for("a1", "result cancelled published")
    notices = result_notices(nats_server.url, task_id)
    assert [(n["agent"], n["status"]) for n in notices] == [("a1", "cancelled")]
    # The agent's own run of the worker was cancelled too (its process is gone with it).
    assert "cancel requested" in agents.log("a1")


def test_the_coordinator_restarts_mid_task_and_picks_the_result_up(cli, remote_repo, task_file, agents,
                                                                   monkeypatch):
    # What is under test is the coordinator's restart, not lease expiry: with the suite's 3 s lease
    # a loaded machine can starve the agent's heartbeat long enough that its own lease lapses and
    # the task is claimed twice. A lease that outlives any such stall keeps the claim count exact.
    slow = {"BOSUN_REMOTE_ACK_WAIT_S": "20", "BOSUN_REMOTE_LEASE_TTL_S": "20"}
    for key, value in slow.items():
        monkeypatch.setenv(key, value)
    agents.start("a1", "slow_fix_3", timing=slow)
    proc = start_coordinator(remote_repo, task_file)
    run_id, task_id = sent_task()
    agents.wait_for("a1", "claimed")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    agents.wait_for("a1", "published")
    code, res = cli("recover", run_id, "--json")
    assert res["state"] == "prepared", res
    code, res = cli("work", run_id, "--json")
    assert res["state"] == "worked", res
    code, res = cli("verify", run_id, "--json")
    assert code == 0 and res["state"] == "verified", res
    assert f"resuming task {task_id}" in events_text(run_id)
    assert agents.log("a1").count("claimed") == 1


def test_the_hub_stopped_and_restarted_while_a_task_runs(remote_repo, task_file, agents, nats_server):
    agents.start("a1", "slow_fix_4")
    proc = start_coordinator(remote_repo, task_file)
    sent_task()
    agents.wait_for("a1", "claimed")
    nats_server.stop()
    time.sleep(1.5)
    nats_server.start()
    code, res = finish(proc, timeout=120)
    assert code == 0, (res.get("failures"), events_text(res["id"]), agents.log("a1"))
    assert res["state"] == "verified"


# -- scale ----------------------------------------------------------------------------------------


def test_a_plan_of_twelve_tasks_across_three_agents(cli, remote_repo, agents, tmp_path):
    for name in ("a1", "a2", "a3"):
        agents.start(name, "plan")
    check = [sys.executable, str(ROOT / "tests" / "workers" / "plan_worker.py"), "check"]
    tasks = [{"id": f"t{i}", "prompt": f"@write out/t{i}.txt {i}", "owns": [f"out/t{i}.txt"],
              "verify": [" ".join([*check, f"out/t{i}.txt", str(i)])]} for i in range(12)]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"title": "twelve", "defaults": {"timeout_s": 60}, "tasks": tasks}))
    code, res = cli("plan", "run", str(plan), "--repo", str(remote_repo), "--profile", "remote", "--json")
    failed = [t for t in res["tasks"] if t["state"] != "merged"]
    assert code == 0, [(t["id"], [f.get("message") for f in t.get("failures") or []]) for t in failed]
    assert res["state"] == "succeeded"
    for i in range(12):
        assert (remote_repo / f"out/t{i}.txt").read_text().strip() == str(i)
    served = [agents.log(n).count("published") for n in ("a1", "a2", "a3")]
    assert sum(served) == 12 and sum(1 for s in served if s) >= 2, served


BARRIER_WORKER = """\
import json, os, sys, time
from pathlib import Path
sys.stdin.read()
barrier, need = Path(sys.argv[1]), int(sys.argv[2])
me = json.loads(Path(os.environ["BOSUN_TASK_FILE"]).read_text())["task"]["prompt"].split()[-1]
(barrier / me).write_text("")
deadline = time.monotonic() + 60
while len(list(barrier.iterdir())) < need:
    if time.monotonic() > deadline:
        sys.exit(f"only {len(list(barrier.iterdir()))} of {need} workers ever ran at once")
    time.sleep(0.05)
Path("out").mkdir(exist_ok=True)
Path("out", me + ".txt").write_text("done\\n")
print("done")
"""


def test_a_remote_plan_runs_as_many_tasks_at_once_as_the_pool_takes(cli, remote_repo, agents, tmp_path):
    # max_concurrent_runs = 2 is about this machine; the pool (3 agents x 2) takes 6 tasks at once,
    # and each worker waits until all 6 run together: a plan held to the local cap never gets there.
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    worker = tmp_path / "barrier_worker.py"
    worker.write_text(BARRIER_WORKER)
    agents.config = tmp_path / "barrier-agents.toml"
    agents.config.write_text(f'sandbox = "off"\n[profiles.barrier]\nadapter = "command"\n'
                             f"command = {json.dumps([sys.executable, str(worker), str(barrier), '6'])}\n")
    for name in ("a1", "a2", "a3"):
        agents.start(name, "barrier", "--concurrency", "2")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # presence is what the plan sizes itself by
        code, out = cli("agents", "--repo", str(remote_repo), "--json")
        if code == 0 and len(out["agents"]) == 3:  # type: ignore[index]
            break
        time.sleep(0.2)
    (remote_repo / "bosun.toml").write_text("max_concurrent_runs = 2\n" + (remote_repo / "bosun.toml").read_text())
    git(remote_repo, "commit", "-qam", "a small local cap")
    check = [sys.executable, str(ROOT / "tests" / "workers" / "plan_worker.py"), "check"]
    tasks = [{"id": f"t{i}", "prompt": f"wait for the others, then write t{i}", "owns": [f"out/t{i}.txt"],
              "verify": [" ".join([*check, f"out/t{i}.txt", "done"])]} for i in range(6)]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"title": "together", "max_attempts": 1, "defaults": {"timeout_s": 120},
                                "tasks": tasks}))
    code, res = cli("plan", "run", str(plan), "--repo", str(remote_repo), "--profile", "remote", "--json")
    assert isinstance(res, dict) and "tasks" in res, res
    failed = [(t["id"], [f.get("message") for f in t.get("failures") or []]) for t in res["tasks"]
              if t["state"] != "merged"]
    assert code == 0 and res["state"] == "succeeded", (failed, [agents.log(n) for n in ("a1", "a2", "a3")])
    assert len(list(barrier.iterdir())) == 6
    assert len(list((remote_repo / "out").iterdir())) == 6
    # The six tasks started from one tree at once: one of them shipped it, the others reused it.
    shipped = [t["id"] for t in res["tasks"] if "remote: shipped base" in events_text(t["run_id"])]
    assert len(shipped) == 1, shipped


# -- operations -----------------------------------------------------------------------------------


def test_agents_lists_the_live_agents_with_profile_load_and_version(cli, remote_repo, agents):
    from bosun import __version__

    agents.start("a1", "fix")
    agents.start("a2", "hang", "--concurrency", "2")
    for name in ("a1", "a2"):
        agents.wait_for(name, "serving")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        code, out = cli("agents", "--repo", str(remote_repo), "--json")
        if code == 0 and len(out["agents"]) == 2:
            break
        time.sleep(0.2)
    assert code == 0, out
    by_name = {a["name"]: a for a in out["agents"]}
    assert by_name["a1"]["profile"] == "fix" and by_name["a2"]["capacity"] == 2
    assert all(a["version"] == __version__ and a["load"] == 0 for a in by_name.values())
    agents.kill("a1")
    deadline = time.monotonic() + 20  # presence expires with the bucket's TTL
    while time.monotonic() < deadline:
        _, out = cli("agents", "--repo", str(remote_repo), "--json")
        if [a["name"] for a in out["agents"]] == ["a2"]:
            break
        time.sleep(0.3)
    assert [a["name"] for a in out["agents"]] == ["a2"]


def test_sigterm_drains_the_agent_after_its_running_task(remote_repo, task_file, agents):
    agent = agents.start("a1", "slow_fix_3")
    proc = start_coordinator(remote_repo, task_file)
    sent_task()
    agents.wait_for("a1", "claimed")
    os.kill(agent.pid, signal.SIGTERM)  # the agent only, as systemd's KillMode=mixed does
    assert agent.wait(60) == 0
    code, res = finish(proc)
    assert code == 0 and res["state"] == "verified", res
    log = agents.log("a1")
    assert log.index("draining") < log.index("published") < log.index("stopped")


def test_supervise_restarts_a_dead_agent(remote_repo, task_file, agents):
    agents.start("a1", "fix", "--supervise")
    agents.wait_for("a1", "serving")
    child = next(p for p in _children(agents.procs["a1"].pid))
    os.kill(child, signal.SIGKILL)
    agents.wait_for("a1", "restarting in 1 s")
    deadline = time.monotonic() + 30
    while agents.log("a1").count("serving") < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert agents.log("a1").count("serving") == 2
    code, res = finish(start_coordinator(remote_repo, task_file))
    assert code == 0 and res["state"] == "verified", res
    agents.kill("a1", signal.SIGTERM)
    assert agents.procs["a1"].wait(60) == 0 or agents.procs["a1"].returncode is not None


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def test_demo_remote_runs_a_plan_across_two_agents():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run([sys.executable, "-m", "bosun", "demo", "--remote", "--json"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    demo = json.loads(out.stdout)["demo"]
    assert demo["ok"] and demo["state"] == "succeeded"
    assert set(demo["tasks"].values()) == {"merged"} and sum(demo["agents"].values()) == 4


def test_an_unreachable_hub_fails_the_attempt_and_leaves_a_clean_record(cli, repo, task_file, monkeypatch):
    monkeypatch.setenv("BOSUN_REMOTE_CONNECT_TIMEOUT_S", "2")
    port = free_port()  # nothing listens there
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--remote", f"nats://127.0.0.1:{port}", "--json")
    assert res["state"] == "failed", res
    assert "cannot connect" in res["error"]["message"]


def test_a_task_that_exhausts_its_deliveries_goes_to_the_dead_letter_stream_and_fails_the_run(
        remote_repo, task_file, agents, nats_server, monkeypatch):
    monkeypatch.setenv("BOSUN_REMOTE_MAX_DELIVER", "2")
    monkeypatch.setenv("BOSUN_REMOTE_ACK_WAIT_S", "1")
    proc = start_coordinator(remote_repo, task_file)  # no agent yet: the task waits in the queue
    _, task_id = sent_task()
    stop = threading.Event()

    def hold_the_lease() -> None:  # a holder that never finishes: every delivery is handed back
        async def job(nc: Any, js: Any) -> None:
            kv = await js.key_value("bosun_leases")
            rev = await kv.create(task_id, json.dumps({"holder": "stuck", "state": "running"}).encode())
            while not stop.is_set():
                await asyncio.sleep(0.5)
                rev = await kv.update(task_id, json.dumps({"holder": "stuck", "state": "running"}).encode(),
                                      last=rev)

        nats(nats_server.url, job)

    holder = threading.Thread(target=hold_the_lease, daemon=True)
    holder.start()
    time.sleep(1.0)
    agents.start("a1", "fix", timing={"BOSUN_REMOTE_MAX_DELIVER": "2", "BOSUN_REMOTE_ACK_WAIT_S": "1"})
    try:
        code, res = finish(proc, timeout=120)
    finally:
        stop.set()
        holder.join(10)
    assert res["state"] == "failed", res
    assert "ran out of deliveries" in res["error"]["message"]

    async def dead(nc: Any, js: Any) -> int:
        info = await js.stream_info("BOSUN_DEAD")
        return int(info.state.messages)

    assert nats(nats_server.url, dead) >= 1
