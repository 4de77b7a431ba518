"""Plan checks that need the whole graph: ids, dependencies, cycles, write-scope overlap; and the waves.

Waves: a task's wave is one more than the latest wave of its dependencies (tasks without
dependencies are in wave 0), so every task runs after all of its dependencies were merged, and two
tasks of one wave never depend on each other.

Two tasks *could run at the same time* when neither depends on the other, directly or transitively.
Such tasks must not own overlapping paths, because their changes are merged into one branch. The
overlap of two glob sets is decided by :func:`globs_overlap`, conservatively: it may say "overlap"
for two globs no real path matches both of, never the reverse, with one exception people expect: a
literal name with an extension (``geo.py``, ``data.json``) names a file, so nothing is below it, and
two different file names never overlap (``geo.py`` and ``circle.py`` would otherwise both match
``geo.py/circle.py``). A directory with a dot in its name is written with a trailing "/"
(``conf.d/``). Should two such tasks still write one path, the merge into the integration branch
finds the conflict and the plan pauses; nothing lands unseen.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

from bosun.core.errors import ProblemsFound
from bosun.plans.model import Plan, Problem

# -- glob overlap --------------------------------------------------------------------------------

_WILD = re.compile(r"[*?\[]")
ANY = "**"


def _segments(pattern: str) -> tuple[str, ...]:
    """The pattern as anchored segments under :mod:`bosun.core.globs` rules, ending in ``**``.

    A pattern without "/" matches a name at any depth: ``**/name``. Every pattern also covers
    everything below what it matches: a trailing ``**`` (zero or more segments). "src/**" thus
    becomes "src/**/**", which also matches "src" itself: more than the real glob, never less.
    A pattern naming a file (:func:`names_a_file`) covers nothing below it.
    """
    pat = pattern.strip()
    rooted = pat.startswith("./")
    while pat.startswith("./"):
        pat = pat[2:]
    file = names_a_file(pat)
    pat = pat.rstrip("/")
    segs = [s for s in pat.split("/") if s]
    if not segs:
        return ()
    if not rooted and "/" not in pat:
        segs = [ANY, *segs]
    # Collapse runs of "**": they mean the same as one.
    out: list[str] = []
    for s in [*segs] if file else [*segs, ANY]:
        if s == ANY and out and out[-1] == ANY:
            continue
        out.append(s)
    return tuple(out)


def names_a_file(pattern: str) -> bool:
    """Whether the pattern's last name is a literal with an extension (``geo.py``, ``data.json``: a
    "." after its first character, no wildcard) and no trailing "/": a file, with nothing below it."""
    if pattern.endswith("/"):
        return False
    name = pattern.rsplit("/", 1)[-1]
    return "." in name[1:] and not _WILD.search(name) and name not in (".", "..")


def _literal_prefix(seg: str) -> str:
    m = _WILD.search(seg)
    return seg if m is None else seg[: m.start()]


def _literal_suffix(seg: str) -> str:
    last = max(seg.rfind("*"), seg.rfind("?"), seg.rfind("]"), seg.rfind("["))
    return seg[last + 1 :] if last >= 0 else seg


def segments_overlap(a: str, b: str) -> bool:
    """Can one path segment match both ``a`` and ``b``? True when unsure."""
    wild_a, wild_b = bool(_WILD.search(a)), bool(_WILD.search(b))
    if not wild_a and not wild_b:
        return a == b
    if not wild_a or not wild_b:
        literal, glob = (a, b) if not wild_a else (b, a)
        from bosun.core.globs import _segment

        return re.fullmatch(_segment(glob), literal, re.DOTALL) is not None
    # Two wildcards: every match of a starts with its literal prefix and ends with its literal
    # suffix; if those cannot agree, nothing matches both. Otherwise assume an overlap.
    pa, pb = _literal_prefix(a), _literal_prefix(b)
    if not (pa.startswith(pb) or pb.startswith(pa)):
        return False
    sa, sb = _literal_suffix(a), _literal_suffix(b)
    return sa.endswith(sb) or sb.endswith(sa)


def glob_overlap(a: str, b: str) -> bool:
    """Could some path be matched by both globs (under the covering rule)? True when unsure."""
    return _seq_overlap(_segments(a), _segments(b))


@lru_cache(maxsize=8192)
def _seq_overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    if not a or not b:
        return False  # an empty pattern matches nothing

    @cache
    def go(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == ANY:
            if go(i + 1, j) or (j < len(b) and go(i, j + 1)):
                return True
            return False
        if j < len(b) and b[j] == ANY:
            return go(i, j + 1) or (i < len(a) and go(i + 1, j))
        if i == len(a) or j == len(b):
            return False
        return segments_overlap(a[i], b[j]) and go(i + 1, j + 1)

    return go(0, 0)


def _sample(seg: str) -> str:
    """A name matching the segment glob ``seg`` (best effort; callers check it)."""
    out, i = [], 0
    while i < len(seg):
        ch = seg[i]
        i += 1
        if ch == "*":
            while i < len(seg) and seg[i] == "*":
                i += 1
            out.append("x")
        elif ch == "?":
            out.append("x")
        elif ch == "[" and "]" in seg[i + 1 :] + (seg[i] if i < len(seg) else ""):
            end = seg.index("]", i + 1) if i < len(seg) and seg[i] == "]" else seg.index("]", i)
            body = seg[i:end]
            i = end + 1
            out.append("x" if body.startswith("!") or not body else body[0])
        else:
            out.append(ch)
    return "".join(out) or "x"


def example_path(a: str, b: str) -> str | None:
    """A path both globs match, when one is easy to build (for error messages)."""
    from bosun.core import globs

    sa, sb = _segments(a), _segments(b)

    @cache
    def go(i: int, j: int) -> tuple[str, ...] | None:
        if i == len(sa) and j == len(sb):
            return ()
        if i < len(sa) and sa[i] == ANY:
            found = go(i + 1, j)
            if found is not None:
                return found
            if j < len(sb) and sb[j] != ANY:
                rest = go(i, j + 1)
                return None if rest is None else (_sample(sb[j]), *rest)
            return go(i, j + 1) if j < len(sb) else None
        if j < len(sb) and sb[j] == ANY:
            found = go(i, j + 1)
            if found is not None:
                return found
            if i < len(sa):
                rest = go(i + 1, j)
                return None if rest is None else (_sample(sa[i]), *rest)
            return None
        if i == len(sa) or j == len(sb) or not segments_overlap(sa[i], sb[j]):
            return None
        rest = go(i + 1, j + 1)
        name = sa[i] if not _WILD.search(sa[i]) else sb[j] if not _WILD.search(sb[j]) else _sample(sa[i])
        return None if rest is None else (name, *rest)

    if not sa or not sb:
        return None
    found = go(0, 0)
    path = "/".join(found or ())
    if path and globs.match(path, a) and globs.match(path, b):
        return path
    return None


def globs_overlap(a: list[str], b: list[str]) -> tuple[str, str] | None:
    """The first pair of globs (one from each set) that may match a common path. An empty set means
    "anywhere" and overlaps every set."""
    if not a and not b:
        return ("**", "**")
    if not a:
        return ("**", b[0])
    if not b:
        return (a[0], "**")
    for x in a:
        for y in b:
            if glob_overlap(x, y):
                return (x, y)
    return None


# -- the graph -----------------------------------------------------------------------------------


def find_cycle(deps: dict[str, list[str]]) -> list[str] | None:
    """One dependency cycle as ``[a, b, c, a]`` (a depends on b ... depends on a), or None."""
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        color[node] = 1
        stack.append(node)
        for nxt in deps.get(node, []):
            if nxt not in deps:
                continue
            if color.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if color.get(nxt) is None:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        color[node] = 2
        return None

    for node in deps:
        if color.get(node) is None:
            found = visit(node)
            if found:
                return found
    return None


def compute_waves(deps: dict[str, list[str]], order: list[str]) -> list[list[str]]:
    """Waves of an acyclic graph; within a wave tasks keep the plan file's order."""
    wave: dict[str, int] = {}

    def level(node: str) -> int:
        if node not in wave:
            wave[node] = 1 + max((level(d) for d in deps.get(node, []) if d in deps), default=-1)
        return wave[node]

    for node in order:
        level(node)
    out: list[list[str]] = [[] for _ in range(max(wave.values(), default=-1) + 1)]
    for node in order:
        out[wave[node]].append(node)
    return out


def ancestors(deps: dict[str, list[str]]) -> dict[str, set[str]]:
    memo: dict[str, set[str]] = {}

    def up(node: str) -> set[str]:
        if node not in memo:
            memo[node] = set()
            acc: set[str] = set()
            for d in deps.get(node, []):
                if d in deps:
                    acc.add(d)
                    acc |= up(d)
            memo[node] = acc
        return memo[node]

    for node in deps:
        up(node)
    return memo


SEQUENCE_HINT = "sequence them: add one to the other's depends (e.g. depends: [{a}] on {b}), or make their owns disjoint"


def check_plan(plan: Plan) -> tuple[list[Problem], list[list[str]] | None]:
    """Every problem of the plan, and its waves (None when the graph is unusable)."""
    problems = list(plan.problems)
    seen: dict[str, int] = {}
    for t in plan.tasks:
        if t.id in seen:
            problems.append(
                Problem("DUPLICATE_TASK_ID", f"task id {t.id!r} is used twice (tasks[{seen[t.id]}] and tasks[{t.index}])",
                        "give every task a unique id", [t.id])
            )
        else:
            seen[t.id] = t.index
    deps: dict[str, list[str]] = {}
    for t in plan.tasks:
        if t.id in deps:
            continue
        known = []
        for d in t.depends:
            if d == t.id:
                problems.append(Problem("DEPENDENCY_CYCLE", f"task {t.id} depends on itself: {t.id} -> {t.id}",
                                        "remove it from its own depends", [t.id]))
            elif d not in seen:
                problems.append(Problem("UNKNOWN_DEPENDENCY", f"task {t.id} depends on unknown task {d!r}",
                                        "known ids: " + ", ".join(seen), [t.id]))
            else:
                known.append(d)
        deps[t.id] = known
    cycle = find_cycle(deps)
    if cycle:
        problems.append(Problem("DEPENDENCY_CYCLE", "dependency cycle: " + " -> ".join(cycle),
                                "remove one of these depends; a cycle can never start", sorted(set(cycle))))
        return problems, None
    waves = compute_waves(deps, list(deps))
    up = ancestors(deps)
    first = {t.id: t for t in reversed(plan.tasks)}
    ids = list(deps)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if a in up[b] or b in up[a]:
                continue
            ta, tb = first[a], first[b]
            pair = globs_overlap(ta.write_set(), tb.write_set())
            if pair is None:
                continue
            ga, gb = pair
            if not ta.write_set() or not tb.write_set():
                who = a if not ta.write_set() else b
                what = f"task {who} has no owns or scope, so it may write anywhere"
            elif ga == gb:
                what = f"both own {ga!r}"
            else:
                what = f"{a} owns {ga!r} and {b} owns {gb!r}"
                example = example_path(ga, gb)
                what += f", which both match {example}" if example else ", which may match the same paths"
            problems.append(
                Problem("OWNS_OVERLAP", f"tasks {a} and {b} could run at the same time and their write scopes overlap: {what}",
                        SEQUENCE_HINT.format(a=a, b=b), [a, b])
            )
    unverified = [t.id for t in plan.tasks if t.contract is not None and not t.contract.verify and t.contract.mode.value == "code"]
    if unverified and not plan.verify:
        problems.append(
            Problem("NOTHING_VERIFIES", f"{len(unverified)} task(s) have no verify commands and the plan has none: "
                    + ", ".join(unverified[:5]),
                    "add verify: to those tasks (or to defaults:); a plan-level verify: checks the merged result after "
                    "every wave, but a task without verify commands of its own waits for a person's review",
                    unverified)
        )
    return problems, waves


def validated(plan: Plan) -> list[list[str]]:
    """The waves of a valid plan; ``PlanInvalid`` (exit 2) listing every problem otherwise."""
    problems, waves = check_plan(plan)
    if problems or waves is None:
        raise PlanInvalid(problems)
    return waves


class PlanInvalid(ProblemsFound):
    """A plan with problems; carries all of them (``bosun plan check`` lists every one). Exit 2."""

    code = "INVALID_PLAN"

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(list(problems) or [Problem("INVALID_PLAN", "invalid plan")])
