"""Which profile runs a task, and why.

Order: the ``--profile`` flag; the task's own ``profile``; the caller's preference (``PARENT_AGENT``
names the calling agent, the ``[callers]`` table maps it to a profile); difficulty routing (the
task's difficulty picks a cost tier, ``domain`` soft-matches profile ``strengths``, profiles in
cooldown are skipped; among the tier's profiles that match equally, the lowest expected cost per
landed change by the track record, with a prior and a little seeded exploration: :func:`by_record`);
the ``default_profile``; the only profile when there is exactly one.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bosun.core.config import Profile, Settings
from bosun.core.contract import TaskContract
from bosun.core.errors import BadInput

if TYPE_CHECKING:
    from bosun.store.db import Store

TIER_FOR_DIFFICULTY = {"low": "cheap", "medium": "standard", "high": "premium"}
TIER_ORDER = ("cheap", "standard", "premium")
_RISKY_DOMAINS = ("security", "auth", "crypto", "payments", "billing", "migration", "concurrency")


@dataclass
class Choice:
    profile: Profile
    rule: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile.name, "rule": self.rule, "reason": self.reason}


def derive_difficulty(task: TaskContract) -> tuple[str, str]:
    """The task's difficulty and how it was decided."""
    if task.difficulty:
        return task.difficulty, "set in the task"
    score = {"low": 0, "medium": 1, "high": 2}.get(task.risk or "low", 0)
    why = [f"risk {task.risk or 'unset'}"]
    if task.domain and any(d in task.domain.lower() for d in _RISKY_DOMAINS):
        score += 1
        why.append(f"domain {task.domain} is sensitive")
    size = len(task.prompt) + sum(len(a) for a in task.acceptance) * 2
    if size > 4000:
        score += 1
        why.append(f"contract is long ({size} chars)")
    level = "low" if score <= 0 else "medium" if score == 1 else "high"
    return level, "derived: " + ", ".join(why)


def choose_profile(
    settings: Settings, task: TaskContract, flag: str | None, store: Store | None = None
) -> Choice:
    if flag:
        return Choice(settings.profile(flag), "flag", f"--profile {flag}")
    if task.profile:
        return Choice(settings.profile(task.profile), "task", f"the task names profile {task.profile}")
    caller = os.environ.get("PARENT_AGENT")
    if caller and caller in settings.callers:
        name = settings.callers[caller]
        return Choice(settings.profile(name), "caller", f"PARENT_AGENT={caller} maps to {name} in [callers]")
    if not settings.profiles:
        raise BadInput(
            "no worker profile is configured",
            "add one to bosun.toml, e.g. [profiles.cheap] adapter = \"native\" model = \"deepseek-chat\" "
            "base_url = \"https://api.deepseek.com/v1\" api_key_env = \"DEEPSEEK_API_KEY\"",
            code="NO_PROFILE",
        )
    routed = _route_by_difficulty(settings, task, store)
    if routed:
        return routed
    if settings.default_profile:
        name = settings.default_profile
        return Choice(settings.profile(name), "default", f"default_profile = {name}")
    if len(settings.profiles) == 1:
        prof = next(iter(settings.profiles.values()))
        return Choice(prof, "only", f"{prof.name} is the only profile")
    raise BadInput(
        "cannot choose a profile: several are defined and none is the default",
        "pass --profile NAME, or set default_profile in bosun.toml",
        code="NO_PROFILE",
    )


def _route_by_difficulty(settings: Settings, task: TaskContract, store: Store | None) -> Choice | None:
    # Routing only applies when the user opted in by giving profiles distinct tiers.
    tiers = {p.tier for p in settings.profiles.values()}
    if len(tiers) < 2:
        return None
    difficulty, why = derive_difficulty(task)
    tier = TIER_FOR_DIFFICULTY[difficulty]
    cooling = set(store.cooldowns(time.time())) if store is not None else set()
    # Prefer the wanted tier, then climb to pricier tiers (never down: a hard task on a weak model wastes a run).
    for t in TIER_ORDER[TIER_ORDER.index(tier):]:
        candidates = [p for p in settings.profiles.values() if p.tier == t and p.name not in cooling]
        if not candidates:
            continue
        domain = (task.domain or "").lower()
        candidates.sort(key=lambda p: (not any(s.lower() == domain for s in p.strengths), p.name))
        matched = domain and any(s.lower() == domain for s in candidates[0].strengths)
        same = [p for p in candidates if bool(matched) == any(s.lower() == domain for s in p.strengths)]
        picked, record_why = by_record([p.name for p in same], _records(store, same), _seed(task))
        best = next(p for p in same if p.name == picked)
        reason = f"difficulty {difficulty} ({why}) -> tier {t}"
        if t != tier:
            reason += f" (no {tier} profile available)"
        if matched:
            reason += f"; strengths match domain {task.domain}"
        if record_why:
            reason += f"; {record_why}"
        if cooling:
            reason += f"; skipped in cooldown: {', '.join(sorted(cooling))}"
        return Choice(best, "difficulty", reason)
    return None


PRIOR_RUNS = 2.0  # pseudo-runs at the tier's average: a profile with few runs is neither trusted nor shunned
PRIOR_LAND_RATE = 0.5
EXPLORE_ONE_IN = 10  # one task in ten (by its text: check, --dry-run and the run agree) tries another profile


def expected_cost_per_landed(record: dict[str, Any], mean_cost_per_run: float) -> float:
    """What a landed change of this profile is expected to cost: its cost per run and its landing rate,
    each pulled towards the prior (the tier's average cost per run, one landing in two) by
    ``PRIOR_RUNS`` pseudo-runs."""
    n = float(record.get("runs") or 0)
    cost = (float(record.get("cost_usd") or 0.0) + PRIOR_RUNS * mean_cost_per_run) / (n + PRIOR_RUNS)
    rate = (float(record.get("landed") or 0) + PRIOR_RUNS * PRIOR_LAND_RATE) / (n + PRIOR_RUNS)
    return cost / rate


def by_record(names: list[str], records: dict[str, dict[str, Any]], seed: int) -> tuple[str, str]:
    """The profile among ``names`` (in preference order) with the lowest expected cost per landed change,
    and why; with no runs recorded for any, the first. One seed in ``EXPLORE_ONE_IN`` takes another
    profile instead, so a profile that had bad luck early gets runs again."""
    known = [records[n] for n in names if records.get(n, {}).get("runs")]
    if len(names) < 2 or not known:
        return names[0], ""
    mean = sum(float(r["cost_usd"]) for r in known) / sum(float(r["runs"]) for r in known)
    expected = {n: expected_cost_per_landed(records.get(n) or {}, mean) for n in names}
    best = min(names, key=lambda n: (expected[n], names.index(n)))
    if seed % EXPLORE_ONE_IN == 0:
        others = [n for n in names if n != best]
        pick = others[(seed // EXPLORE_ONE_IN) % len(others)]
        return pick, (f"exploring {pick} (expected ${expected[pick]:.4f} per landed change, {best} "
                      f"${expected[best]:.4f}; one task in {EXPLORE_ONE_IN})")
    rest = ", ".join(f"{n} ${expected[n]:.4f}" for n in names if n != best)
    return best, f"track record: {best} expects ${expected[best]:.4f} per landed change ({rest})"


def _records(store: Store | None, profiles: list[Profile]) -> dict[str, dict[str, Any]]:
    if store is None or len(profiles) < 2:
        return {}
    from bosun.engine.track_record import track_records

    return track_records(store, [p.name for p in profiles])


def _seed(task: TaskContract) -> int:
    """The same task, the same seed: `check` and `--dry-run` say what the run will do."""
    from bosun.core.lean_imports import sha256

    return int(sha256(f"{task.title}\n{task.prompt}".encode()).hexdigest()[:8], 16)
