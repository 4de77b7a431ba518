"""Which profile runs a task, and why.

Order: the ``--profile`` flag; the task's own ``profile``; the caller's preference (``PARENT_AGENT``
names the calling agent, the ``[callers]`` table maps it to a profile); difficulty routing (the
task's difficulty picks a cost tier, ``domain`` soft-matches profile ``strengths``, profiles in
cooldown are skipped); the ``default_profile``; the only profile when there is exactly one.
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
        best = candidates[0]
        matched = domain and any(s.lower() == domain for s in best.strengths)
        reason = f"difficulty {difficulty} ({why}) -> tier {t}"
        if t != tier:
            reason += f" (no {tier} profile available)"
        if matched:
            reason += f"; strengths match domain {task.domain}"
        if cooling:
            reason += f"; skipped in cooldown: {', '.join(sorted(cooling))}"
        return Choice(best, "difficulty", reason)
    return None
