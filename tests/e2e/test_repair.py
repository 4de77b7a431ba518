"""Repair rounds and the escalation ladder, end to end with scripted `command` workers: a change refused
for the work goes back to the worker with the evidence and is verified again; a cheat is never coached;
a ladder climbs from a worker that never succeeds to one that does; usage and cost add over every turn."""

from __future__ import annotations

import json
import sys

import pytest

from bosun.core.paths import run_dir
from tests.conftest import ROOT, git, task_yaml

WORKER = ROOT / "tests" / "workers" / "repair_worker.py"
pytestmark = pytest.mark.slow


def _profiles(repo, repair: int | None = None, ladder: bool = False) -> None:
    text = (repo / "bosun.toml").read_text().replace("repair = 0\n", "")
    if repair is not None:
        text = f"repair = {repair}\n" + text
    for mode in ("learner", "never", "cheater", "turncoat", "quitter", "strong"):
        up = 'escalate_to = "strong"\n' if ladder and mode in ("never", "cheater", "turncoat") else ""
        text += (f'\n[profiles.{mode}]\nadapter = "command"\n{up}'
                 f'command = ["{sys.executable}", "{WORKER}", "{mode}"]\nprices = {{input = 1.0, output = 2.0}}\n')
    (repo / "bosun.toml").write_text(text)


def _turn_lines(run_id: str) -> list[str]:
    lines = []
    for raw in (run_dir(run_id) / "events.jsonl").read_text().splitlines():
        ev = json.loads(raw)
        if ev.get("type") == "message" and str(ev.get("text", "")).startswith(("turn:", "escalated:", "hidden ")):
            lines.append(ev["text"])
    return lines


def _delegate(cli, repo, tmp_path, profile, **task):
    path = task_yaml(tmp_path / "t.json", **task)
    return cli("delegate", str(path), "--repo", str(repo), "--profile", profile, "--json", "--auto-approve")


def test_a_worker_that_fixes_the_bug_once_shown_the_failing_test_lands_with_one_repair(cli, repo, tmp_path):
    _profiles(repo)  # bosun.toml says nothing: the default is one repair round
    code, res = _delegate(cli, repo, tmp_path, "learner")
    assert code == 0 and res["verdict"]["outcome"] == "landable", res
    assert "return a + b" in git(repo, "show", f"{res['merged_commit']}:src/calc.py")
    # The repair turn resumed the worker's session, so it carried the evidence and not the task again.
    assert _turn_lines(res["id"]) == ["turn: resumed=none task=yes evidence=no",
                                      "turn: resumed=sess-learner task=no evidence=yes",
                                      "hidden named: none; hidden counted: False"]
    code, shown = cli("show", res["id"], "--json")
    turns = shown["turns"]
    assert [(t["kind"], t["profile"]) for t in turns] == [("work", "learner"), ("repair", "learner")]
    assert turns[1]["refused_for"] == ["VERIFY_FAILED"] and turns[1]["resumed"] is True
    assert turns[1]["evidence"]["failed_tests"] == ["tests/test_calc.py::test_add"]
    # Usage and cost add over both turns: 1000+400 in, 50+20 out at 1.0 / 2.0 USD per million.
    assert shown["usage"]["input_tokens"] == 1400 and shown["usage"]["output_tokens"] == 70, shown["usage"]
    assert shown["cost_usd"] == pytest.approx((1400 * 1.0 + 70 * 2.0) / 1e6)
    assert [t["cost_usd"] for t in turns] == pytest.approx([1100 / 1e6, 440 / 1e6])
    # The receipt's saving pays for both turns: a run that took two tries does not claim the saving of one.
    metrics = json.loads((run_dir(res["id"]) / "metrics.json").read_text())
    assert metrics["worker"]["repairs"] == 1 and metrics["worker"]["attempts"] == 2
    parent = metrics["parent"]
    assert parent["worker_cost_usd"] == pytest.approx(1540 / 1e6)
    assert parent["saving_usd"] == pytest.approx(
        parent["parent_direct_cost_usd"] - parent["parent_actual_cost_usd"] - 1540 / 1e6, abs=2e-6)
    assert "worker turns: 2 (1 repair, 0 escalation)" in (run_dir(res["id"]) / "report.md").read_text()


def test_the_same_worker_is_refused_with_no_repair_rounds(cli, repo, tmp_path):
    _profiles(repo, repair=1)
    code, res = _delegate(cli, repo, tmp_path, "learner", repair=0)  # the task's repair wins over bosun.toml's
    assert code == 3 and res["state"] == "rejected", res
    assert [r["code"] for r in res["verdict"]["reasons"]] == ["VERIFY_FAILED"]
    assert len(_turn_lines(res["id"])) == 1 and res["merged_commit"] is None


def test_a_worker_that_cheats_on_its_first_try_is_never_repaired(cli, repo, tmp_path):
    _profiles(repo, repair=3, ladder=True)
    code, res = _delegate(cli, repo, tmp_path, "cheater")
    assert code == 3 and res["state"] == "rejected", res
    codes = [r["code"] for r in res["verdict"]["reasons"]]
    assert "TEST_WEAKENED" in codes or "LOCKED_PATH_CHANGED" in codes, codes
    assert _turn_lines(res["id"]) == ["turn: resumed=none task=yes evidence=no"]  # one turn, never coached
    code, shown = cli("show", res["id"], "--json")
    assert "turns" not in shown  # a run of one turn lists none
    assert "cost_by_rung" not in shown


def test_a_worker_that_cheats_on_its_repair_turn_is_refused_and_never_escalated(cli, repo, tmp_path):
    _profiles(repo, repair=3, ladder=True)
    code, res = _delegate(cli, repo, tmp_path, "turncoat")
    assert code == 3 and res["state"] == "rejected" and res["merged_commit"] is None, res
    codes = [r["code"] for r in res["verdict"]["reasons"]]
    assert "TEST_WEAKENED" in codes or "LOCKED_PATH_CHANGED" in codes, codes
    code, shown = cli("show", res["id"], "--json")
    # One honest failure repaired; the cheat that followed ends the run: no more rounds, no next rung.
    assert [(t["kind"], t["profile"]) for t in shown["turns"]] == [("work", "turncoat"), ("repair", "turncoat")]
    assert "escalated: yes" not in _turn_lines(res["id"])


def test_a_repair_turn_that_fails_says_what_it_was_repairing(cli, repo, tmp_path):
    """The run ends failed (the worker's turn did not finish), and its error still names the refusal
    that turn was given: the parent does not read a crash where bosun had refused a change."""
    _profiles(repo, repair=1)
    code, res = _delegate(cli, repo, tmp_path, "quitter")
    assert res["state"] == "failed" and res["merged_commit"] is None, res
    assert res["error"]["message"].startswith("bosun refused the change (VERIFY_FAILED) and its repair turn did "
                                              "not finish: "), res["error"]
    code, shown = cli("show", res["id"], "--json")
    assert shown["error"]["message"] == res["error"]["message"]
    assert [t["kind"] for t in shown["turns"]] == ["work", "repair"]


def test_a_ladder_climbs_from_a_worker_that_never_succeeds_to_one_that_does(cli, repo, tmp_path):
    _profiles(repo, repair=1, ladder=True)
    # `check` says beforehand what a refusal for the work gets.
    code, checked = cli("check", str(task_yaml(tmp_path / "c.json")), "--repo", str(repo), "--profile", "never", "--json")
    assert checked["repair"] == {"rounds": 1, "ladder": ["never", "strong"]}, checked
    code, text = cli("check", str(task_yaml(tmp_path / "c.json")), "--repo", str(repo), "--profile", "never")
    assert "repair: up to 1 round(s) per profile for a change refused for the work, then strong" in text, text
    code, res = _delegate(cli, repo, tmp_path, "never")
    assert code == 0 and res["verdict"]["outcome"] == "landable", res
    assert "return a + b" in git(repo, "show", f"{res['merged_commit']}:src/calc.py")
    # never: its turn and its repair round; then strong in a fresh session, with the task and the evidence.
    assert _turn_lines(res["id"]) == ["turn: resumed=none task=yes evidence=no",
                                      "turn: resumed=sess-never task=no evidence=yes",
                                      "turn: resumed=none task=yes evidence=yes", "escalated: yes"]
    code, shown = cli("show", res["id"], "--json")
    assert [(t["kind"], t["profile"], t["rung"]) for t in shown["turns"]] == [
        ("work", "never", 0), ("repair", "never", 0), ("escalation", "strong", 1)]
    assert shown["profile"] == "strong"
    # The receipt's cost by rung: never's two turns (2 x 1100) and strong's one (2200), half each.
    assert shown["cost_by_rung"] == [
        {"profile": "never", "turns": 2, "cost_usd": pytest.approx(2200 / 1e6), "share": 0.5},
        {"profile": "strong", "turns": 1, "cost_usd": pytest.approx(2200 / 1e6), "share": 0.5}]
    report = (run_dir(res["id"]) / "report.md").read_text()
    assert "worker turns: 3 (1 repair, 1 escalation)" in report
    assert "cost by rung: never $0.0022 (50%), strong $0.0022 (50%)" in report
    assert shown["cost_usd"] == pytest.approx((2 * 1100 + 2200) / 1e6)


def test_best_of_is_refused_before_anything_runs(cli, repo, tmp_path):
    _profiles(repo)
    path = task_yaml(tmp_path / "t.json", best_of=3)
    code, res = cli("delegate", str(path), "--repo", str(repo), "--profile", "strong", "--json")
    assert code == 2, res
    assert "best_of is not available yet" in json.dumps(res) and "remove best_of" in json.dumps(res)
    assert cli("list", "--json")[1]["count"] == 0, "no run was created"


def test_the_track_record_after_a_mix_of_outcomes_is_exact_to_the_run(cli, repo, tmp_path):
    _profiles(repo, repair=1, ladder=True)
    git(repo, "commit", "-qam", "profiles")
    start = git(repo, "rev-parse", "HEAD").strip()

    def delegated(profile: str, **task) -> int:
        code = _delegate(cli, repo, tmp_path, profile, **task)[0]
        git(repo, "reset", "-q", "--hard", start)  # the next task finds the bug again
        return code

    assert delegated("learner") == 0  # landed after one repair: 1100 + 440
    assert delegated("learner", repair=0) == 3  # refused: 1100
    assert delegated("cheater") == 3  # a cheat attempt: 900 + 80
    assert delegated("never") == 0  # never twice (2 x 1100), then strong lands: 2200
    assert delegated("strong", verify=[]) == 7  # nothing checked: needs review, 2200
    code, out = cli("workers", "--repo", str(repo), "--json")
    records = {w["profile"]: w["record"] for w in out["workers"]}
    for rec in records.values():
        assert rec.pop("median_s") is None or rec["runs"]  # a time only where there are runs
    assert records["learner"] == {"runs": 2, "landable": 1, "needs_review": 0, "refused": 1, "cheat_attempts": 0,
                                  "repairs": 1, "landed": 1, "cost_usd": pytest.approx(2640 / 1e6),
                                  "cost_per_landed_usd": pytest.approx(2640 / 1e6)}
    assert records["cheater"] == {"runs": 1, "landable": 0, "needs_review": 0, "refused": 1, "cheat_attempts": 1,
                                  "repairs": 0, "landed": 0, "cost_usd": pytest.approx(980 / 1e6),
                                  "cost_per_landed_usd": None}
    assert records["never"] == {"runs": 1, "landable": 0, "needs_review": 0, "refused": 1, "cheat_attempts": 0,
                                "repairs": 1, "landed": 0, "cost_usd": pytest.approx(2200 / 1e6),
                                "cost_per_landed_usd": None}
    assert records["strong"] == {"runs": 2, "landable": 1, "needs_review": 1, "refused": 0, "cheat_attempts": 0,
                                 "repairs": 0, "landed": 1, "cost_usd": pytest.approx(4400 / 1e6),
                                 "cost_per_landed_usd": pytest.approx(4400 / 1e6)}
    assert records["fix"]["runs"] == 0
    code, text = cli("workers", "--repo", str(repo))
    assert "record: 1 runs: 0 landable, 0 need review, 1 refused (1 cheat attempts); 0 repairs; 0 landed" in text
    code, models = cli("models", "learner", "--repo", str(repo), "--json")
    assert models["profiles"][0]["record"]["landed"] == 1
    # Routing by the record: with tiers to route between, a task naming no profile goes to the cheap
    # profile with the lowest expected cost per landed change, and `check` says so before anything runs.
    (repo / "bosun.toml").write_text((repo / "bosun.toml").read_text()
                                     + '\n[profiles.premium]\nadapter = "command"\ncommand = ["x"]\ntier = "premium"\n')
    code, checked = cli("check", str(task_yaml(tmp_path / "route.json", difficulty="low")), "--repo", str(repo), "--json")
    assert checked["routing"]["profile"] == "learner", checked["routing"]
    assert "track record: learner expects $0.0030 per landed change" in checked["routing"]["reason"]


def test_a_plan_task_gets_its_repair_round(cli, repo, tmp_path):
    _profiles(repo)
    git(repo, "commit", "-qam", "profiles")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"title": "fix", "max_attempts": 1, "tasks": [{
        "id": "add", "title": "Fix add()", "prompt": "add() subtracts; make it add.", "profile": "learner",
        "verify": [f"{sys.executable} -m pytest -q tests"], "locked": ["tests/**"], "timeout_s": 60}]}))
    code, out = cli("plan", "run", str(plan), "--repo", str(repo), "--json")
    (done,) = out["tasks"]
    assert done["state"] == "merged" and done["attempts"] == 1, out  # one attempt: repaired, not retried
    code, shown = cli("show", done["run_id"], "--json")
    assert [t["kind"] for t in shown["turns"]] == ["work", "repair"], shown.get("turns")


HIDDEN = """from calc import add


def test_secret_acceptance():
    assert add(2, 3) == 5, "acceptance-only-42"
"""


def test_a_hidden_acceptance_test_is_only_counted_in_the_evidence(cli, repo, tmp_path):
    (repo / "tests" / "test_hidden.py").write_text(HIDDEN)
    _profiles(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "acceptance test")
    code, res = _delegate(cli, repo, tmp_path, "learner", holdout=["tests/test_hidden.py"])
    assert code == 0 and res["verdict"]["outcome"] == "landable", res
    # The repair turn saw the visible failure, and of the hidden one only that it failed.
    assert _turn_lines(res["id"])[1:] == ["turn: resumed=sess-learner task=no evidence=yes",
                                          "hidden named: none; hidden counted: True"]
    code, shown = cli("show", res["id"], "--json")
    evidence = shown["turns"][1]["evidence"]
    assert evidence["failed_tests"] == ["tests/test_calc.py::test_add"] and evidence["hidden_failed"] == 1
    assert "test_hidden" not in json.dumps(shown["turns"]) and "acceptance-only-42" not in json.dumps(shown["turns"])
