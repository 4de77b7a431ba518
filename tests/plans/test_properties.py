"""Property tests on random plans: the waves respect dependencies, no wave holds two tasks owning a
common path, reported cycles are real, and the glob-overlap rule never misses a real overlap."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bosun.core import globs
from bosun.plans.model import parse_plan
from bosun.plans.validate import check_plan, find_cycle, glob_overlap, names_a_file

SEGMENTS = ["src", "lib", "a", "b", "x.py", "y.py", "test_a.py", "README.md", "docs"]
GLOB_SEGMENTS = [*SEGMENTS, "*", "**", "*.py", "test_*", "[ab]", "?.py", "x*"]

paths = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map("/".join)
glob_patterns = st.one_of(
    st.lists(st.sampled_from(GLOB_SEGMENTS), min_size=1, max_size=4).map("/".join),
    st.sampled_from(GLOB_SEGMENTS),  # slash-less: a name at any depth
    st.lists(st.sampled_from(GLOB_SEGMENTS), min_size=1, max_size=3).map(lambda s: "./" + "/".join(s)),
)
# Every path the random globs can meaningfully match, for concrete overlap checks.
UNIVERSE = sorted({"/".join(p) for n in range(1, 4) for p in __import__("itertools").product(SEGMENTS, repeat=n)})


@st.composite
def dags(draw):
    n = draw(st.integers(1, 8))
    ids = [f"t{i}" for i in range(n)]
    tasks = []
    for i, tid in enumerate(ids):
        deps = draw(st.lists(st.sampled_from(ids[:i]), unique=True, max_size=3)) if i else []
        owns = draw(st.lists(glob_patterns, min_size=1, max_size=2))
        tasks.append({"id": tid, "prompt": "x", "depends": deps, "owns": owns})
    draw(st.randoms()).shuffle(tasks)  # file order must not matter
    return tasks


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags())
def test_accepted_plans_have_sound_waves(tasks):
    plan = parse_plan({"title": "p", "verify": "true", "tasks": tasks})
    problems, waves = check_plan(plan)
    assert waves is not None  # generated acyclic: only overlaps can be reported
    assert all(p.code == "OWNS_OVERLAP" for p in problems)
    wave_of = {tid: n for n, wave in enumerate(waves) for tid in wave}
    assert sorted(wave_of) == sorted(t["id"] for t in tasks)
    for t in tasks:
        for d in t["depends"]:
            assert wave_of[d] < wave_of[t["id"]]  # every dependency is in an earlier wave
    if problems:
        return
    owns = {t["id"]: t["owns"] for t in tasks}
    for wave in waves:
        for i, a in enumerate(wave):
            for b in wave[i + 1 :]:
                common = [p for p in UNIVERSE if globs.match_any(p, owns[a]) and globs.match_any(p, owns[b])
                          and not _file_as_directory(p)]
                assert not common, (a, owns[a], b, owns[b], common[:3])


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 7), st.data())
def test_reported_cycles_are_real(n, data):
    ids = [f"t{i}" for i in range(n)]
    deps = {tid: data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=3)) for tid in ids}
    cycle = find_cycle(deps)
    if cycle is None:
        # No cycle reported: a topological order exists.
        done: set[str] = set()
        while len(done) < n:
            ready = [t for t in ids if t not in done and all(d in done for d in deps[t])]
            assert ready, deps
            done.update(ready)
        return
    assert cycle[0] == cycle[-1]
    for a, b in zip(cycle, cycle[1:], strict=False):
        assert b in deps[a]


def _file_as_directory(path: str) -> bool:
    """A path that puts something below a file name (``x.py/y``): the overlap rule takes a literal name
    with an extension for a file, as people do."""
    return any(names_a_file(seg) for seg in path.split("/")[:-1])


@settings(max_examples=400, deadline=None)
@given(glob_patterns, glob_patterns, paths)
def test_glob_overlap_never_misses_a_common_path(a, b, path):
    if globs.match(path, a) and globs.match(path, b) and not _file_as_directory(path):
        assert glob_overlap(a, b), (a, b, path)
