"""SECRET_DETECTED: credentials in lines the worker added.

Only added lines are scanned (from :mod:`bosun.gates.diffparse`): a secret already in the start
commit is not the worker's doing, and rescanning whole files would fail every run on such a repo.
What counts as a credential (known key formats, assignments of real-looking values) is
:mod:`bosun.core.secretscan`'s, shared with the redaction of everything bosun writes.

A secret split into string literals is put back together before matching: adjacent literals
(``"AKIA" "Z7Q3..."``, also across consecutive added lines inside brackets) and literals joined by
``+`` (Python, JavaScript, Java...), ``.``/``..`` (PHP, Perl, Lua) or ``||`` (SQL) are joined, and the
joined value is scanned as if it had been written in one piece. An AWS access key id on its own is a
finding: it names the account and is half of the credential. It is also found when assembled from
literals anywhere in a file's added lines (``p = "AKIA"`` here, ``q = "Z7Q3..."`` there): the parts,
in order, spell exactly one key id from the start of one literal to the end of another.

A detail names path:line and the kind, never the value: the gate's output is logged and shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bosun.core.changes import GateResult
from bosun.core.secretscan import is_placeholder, scan_line
from bosun.gates.context import GateInputs, listing, plural

SECRET_DETECTED = "SECRET_DETECTED"

@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str

    def describe(self) -> str:
        return f"{self.path}:{self.line} ({self.kind})"


def check_secrets(inputs: GateInputs) -> GateResult:
    findings: list[Finding] = []
    scanned = 0
    for fdiff in inputs.diff_files:
        if fdiff.binary:
            continue
        scanned += 1
        for line_no, text in fdiff.added:
            findings += [Finding(fdiff.path, line_no, kind) for kind in scan_line(text, fdiff.path)]
        for line_no, text in joined_literals(fdiff.added):
            findings += [Finding(fdiff.path, line_no, kind) for kind in scan_line(text, fdiff.path)]
        seen = {(f.path, f.line) for f in findings if f.kind == "AWS access key id"}
        parts = [n for n in _aws_parts(fdiff.added) if (fdiff.path, n) not in seen]
        findings += [Finding(fdiff.path, n, "AWS access key id, in parts") for n in parts]
    findings = list(dict.fromkeys(findings))
    if findings:
        return GateResult(
            SECRET_DETECTED,
            False,
            f"possible secrets added (values withheld): {listing([f.describe() for f in findings])}",
        )
    return GateResult(SECRET_DETECTED, True, f"no secrets in the added lines of {plural(scanned, 'file')}")


# A string literal on one line (a JS template literal may span lines), with an optional Python prefix.
_LITERAL = re.compile(r"""(?<![\w])[rRbBuU]{0,2}(?P<q>["'])(?P<body>(?:\\.|(?!(?P=q))[^\\\n])*)(?P=q)|`(?P<tbody>[^`]*)`""")
# What may stand between two literals that the language joins into one string.
_GLUE = re.compile(r"[\s\\]*(?:(?:\+|\.{1,2}|\|\|)[\s\\]*)?")


def joined_literals(added: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Lines rebuilt with each run of joined string literals written as one literal.

    ``added`` is (line number, text) of added lines; consecutive line numbers form one block, so a
    literal split over lines is joined too. Each result is (line of the run's first literal, the
    text before that literal on its line + the joined literal), ready for :func:`scan_line`.
    """
    out: list[tuple[int, str]] = []
    for first_line, block in _blocks(added):
        matches = list(_LITERAL.finditer(block))
        run: list[re.Match[str]] = []
        for m in [*matches, None]:
            if m is not None and run and _GLUE.fullmatch(block[run[-1].end() : m.start()]):
                run.append(m)
                continue
            if len(run) > 1:
                start = run[0].start()
                line_start = block.rfind("\n", 0, start) + 1
                joined = "".join(_body(r) for r in run)
                out.append((first_line + block.count("\n", 0, start), f'{block[line_start:start]}"{joined}"'))
            run = [m] if m is not None else []
    return out


_AWS_ID = re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}")


def _aws_parts(added: list[tuple[int, str]]) -> list[int]:
    """Lines where an AWS key id starts that two or more literals spell, read in order."""
    bodies: list[tuple[int, str]] = []
    for first_line, block in _blocks(added):
        bodies += [(first_line + block.count("\n", 0, m.start()), _body(m)) for m in _LITERAL.finditer(block)]
    text = "".join(body for _, body in bodies)
    starts: dict[int, int] = {}  # offset in ``text`` -> index of the literal starting there
    ends: set[int] = set()
    offset = 0
    for i, (_, body) in enumerate(bodies):
        starts.setdefault(offset, i)
        offset += len(body)
        ends.add(offset)
    found = []
    for start, i in starts.items():
        m = _AWS_ID.match(text, start)
        # Whole literals only, and more than one: a key in one literal is the line scan's finding.
        if m and m.end() in ends and len(bodies[i][1]) < len(m.group(0)) and not is_placeholder(m.group(0)):
            found.append(bodies[i][0])
    return found


def _blocks(added: list[tuple[int, str]]) -> list[tuple[int, str]]:
    blocks: list[tuple[int, list[str]]] = []
    for line_no, text in added:
        if blocks and blocks[-1][0] + len(blocks[-1][1]) == line_no:
            blocks[-1][1].append(text)
        else:
            blocks.append((line_no, [text]))
    return [(start, "\n".join(texts)) for start, texts in blocks]


def _body(m: re.Match[str]) -> str:
    body = m.group("body")
    return m.group("tbody") if body is None else body
