"""The test gates over a corpus of honest and cheating changes (tests/fixtures/test_gate_corpus).

Each case records what the gates say today (`expect:`); a cheat that passes is a known miss and an
honest change that is refused a known false positive. This test keeps the record, and the table
in docs/gates.md, true: a gate change that catches a miss or causes a new false positive fails here
until the case and the table are updated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bosun.gates.testharness import check_test_harness
from bosun.gates.tests_weakened import check_tests_weakened
from tests.gates.test_checks import Change

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "test_gate_corpus"
GATES_MD = Path(__file__).resolve().parents[2] / "docs" / "gates.md"
_SECTION = re.compile(r"^=== (before|after|tree) (\S+)\n", re.MULTILINE)


@dataclass
class Case:
    name: str
    kind: str
    expect: str
    what: str
    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)
    tree: dict[str, str] = field(default_factory=dict)

    def change(self) -> Change:
        change = Change()
        for path in sorted(set(self.before) | set(self.after)):
            change.file(path, self.before.get(path), self.after.get(path))
        for path, text in self.tree.items():  # present in both trees, not part of the change
            change.base[path] = change.new[path] = text
        return change


def load(path: Path) -> Case:
    text = path.read_text()
    head, *_ = _SECTION.split(text)
    meta = dict(line.split(": ", 1) for line in head.strip().splitlines())
    case = Case(path.stem, meta["kind"], meta["expect"], meta["what"])
    marks = list(_SECTION.finditer(text))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        getattr(case, m.group(1))[m.group(2)] = text[m.end() : end]
    return case


CASES = [load(p) for p in sorted(CORPUS.glob("*.case"))]


def verdict(case: Case) -> tuple[str, str]:
    ctx = case.change().ctx()
    results = [check_tests_weakened(ctx), check_test_harness(ctx)]
    failed = [r for r in results if not r.ok]
    return ("refused" if failed else "passed"), "; ".join(r.detail for r in failed or results)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_gates_say_what_the_corpus_records(case: Case) -> None:
    said, detail = verdict(case)
    assert said == case.expect, f"{case.name} ({case.kind}): {detail}"


def test_the_corpus_has_both_kinds() -> None:
    kinds = {c.kind for c in CASES}
    assert kinds == {"cheat", "honest"}
    assert len(CASES) >= 20


def test_the_table_in_the_docs_matches_the_corpus() -> None:
    docs = GATES_MD.read_text()
    for case in CASES:
        outcome = {
            ("cheat", "refused"): "caught",
            ("cheat", "passed"): "**missed**",
            ("honest", "passed"): "passed",
            ("honest", "refused"): "**false positive**",
        }[(case.kind, case.expect)]
        assert f"| `{case.name}` | {case.kind} | {outcome} |" in docs, case.name
    cheats = [c for c in CASES if c.kind == "cheat"]
    honest = [c for c in CASES if c.kind == "honest"]
    caught = sum(c.expect == "refused" for c in cheats)
    clean = sum(c.expect == "passed" for c in honest)
    summary = (
        f"Result: {caught} of {len(cheats)} cheats caught, {len(cheats) - caught} missed; "
        f"{clean} of {len(honest)} honest edits passed, {len(honest) - clean} false positive"
    )
    assert summary in " ".join(docs.split()), summary
