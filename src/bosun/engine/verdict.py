"""The one verdict of a run, decided here and nowhere else.

Every run that has been judged ends in exactly one of three outcomes:

- **landable**: verified, proven (or the task says ``proof: not-required``), nothing for review. Only
  these land without a person: ``--auto-approve``, MCP ``delegate(auto_approve=true)`` and plans.
- **needs_review**: verified, but a person must say yes. It carries its reasons, each a stable code
  and one sentence: not verified (no verify commands), not proven, proven only by the worker's own
  tests (``OWN_TESTS_PROOF``: the one reason a cross-review that read the verified change and left
  nothing open clears), own tests that prove nothing (``OWN_TESTS_TRIVIAL``), changed expected values
  or test data, ``tests: rewrite`` findings, a self-review's findings, waived gates, permitted locked
  paths.
  ``bosun approve`` (a person), ``approve --yes`` (a script, recorded) or MCP ``approve`` naming every
  code in ``acknowledge`` (the parent, recorded) approves it; ``integrate`` then lands it.
- **refused**: something is wrong: a red gate, failed verification, a worker that failed, was blocked
  or was cancelled, records that disagree with the verified tree.

The verdict is computed from the run's record (its state, its task, the gates and the verification
bosun wrote), so every surface that shows it (``show``, ``--json``, the exit code, the receipt, MCP,
plans, notifications, the dashboard) reads the same function on the same bytes. Kept free of pydantic:
``bosun show`` loads it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from bosun.store.run import Run, RunData

LANDABLE = "landable"
NEEDS_REVIEW = "needs_review"
REFUSED = "refused"
OUTCOMES = (LANDABLE, NEEDS_REVIEW, REFUSED)

NOT_VERIFIED = "NOT_VERIFIED"
NOT_PROVEN = "NOT_PROVEN"
OWN_TESTS_PROOF = "OWN_TESTS_PROOF"
OWN_TESTS_TRIVIAL = "OWN_TESTS_TRIVIAL"
WAIVED = "WAIVED"

# States in which no verdict exists yet: the run has not been judged.
UNDECIDED = frozenset({"prepared", "working", "worked", "interrupted"})
# States a worker's failure ends in; the recorded error is the reason.
FAILURES = frozenset({"failed", "blocked", "cancelled"})

_NOT_VERIFIED_SENTENCE = ("the task has no verify commands, so bosun checked nothing: a person must read the "
                          "change")


if TYPE_CHECKING:
    _Doc = dict[str, Any]
else:
    _Doc = dict


class Verdict(_Doc):
    """The verdict phase's result: ``{outcome, reasons: [{code, sentence}], acknowledged}``, a dict
    because every surface writes it as JSON as it is, with names for its parts."""

    __slots__ = ()

    @property
    def outcome(self) -> str:
        return str(self["outcome"])

    @property
    def landable(self) -> bool:
        """Only a landable verdict lands without a person."""
        return self["outcome"] == LANDABLE


_READ = object()  # decide's default: read the run's cross-review record from its run directory


def decide(
    run: Run,
    task: Mapping[str, Any] | None,
    gates: Sequence[Mapping[str, Any]],
    verification: Mapping[str, Any] | None,
    cross_review: Any = _READ,
) -> Verdict | None:
    """The ``Verdict`` of a run from its record; None while the run has not been judged. ``task`` is
    the contract as JSON (task.json's ``task``); ``cross_review`` is the run's cross_review.json, read
    from the run directory unless given, so no caller can judge a run without its review."""
    from bosun.engine.review_record import read as read_review
    from bosun.engine.review_verdict import review_cleared, review_outcome

    state = run.state
    if state in UNDECIDED:
        return None
    data = run.data
    task = task or {}
    refused = _refusals(state, data, gates, verification)
    review_refusals: list[dict[str, str]] = []
    cross: list[dict[str, str]] = []
    cleared = False
    if not refused and data.review_config:
        record = read_review(run.id) if cross_review is _READ else cross_review
        review_refusals, cross = review_outcome(data.review_config, record, data.verified_tree)
        cleared = review_cleared(data.review_config, record, data.verified_tree)
    refused = refused or review_refusals
    if refused:
        return Verdict(outcome=REFUSED, reasons=refused, acknowledged=None)
    # The worker's own tests are read by the cross-review (its prompt asks whether they state the task):
    # one that read the verified change and left nothing open stands for the person who would read them.
    reasons = [r for r in review_reasons(task, gates, verification) if not (cleared and r["code"] == OWN_TESTS_PROOF)]
    reasons += cross
    ack = data.acknowledged if reasons else None
    if ack and not {r["code"] for r in reasons} <= set(ack.get("codes") or ()):
        ack = None  # acknowledged for other reasons than these (the change was verified again since)
    return Verdict(outcome=NEEDS_REVIEW if reasons else LANDABLE, reasons=reasons, acknowledged=ack or None)


def _refusals(state: str, data: RunData, gates: Sequence[Mapping[str, Any]],
              verification: Mapping[str, Any] | None) -> list[dict[str, str]]:
    error = data.error if isinstance(data.error, dict) else None
    if state in FAILURES:
        code = str((error or {}).get("code") or state.upper())
        message = str((error or {}).get("message") or f"the run was {state}")
        return [{"code": code, "sentence": message}]
    out = [{"code": str(g["code"]), "sentence": str(g.get("detail") or "")}
           for g in gates if not g.get("ok") and not g.get("waived")]
    if not out and verification is not None and verification.get("passed") is False and not _waived(gates, "VERIFY_FAILED"):
        out.append({"code": "VERIFY_FAILED", "sentence": "the verify commands failed on the change"})
    if not out and state == "rejected":
        # Refused after verification (records that disagree with the tree, a failed re-verification).
        code = str((error or {}).get("code") or "REJECTED")
        out.append({"code": code, "sentence": str((error or {}).get("message") or "the run was rejected")})
    return out


def review_reasons(task: Mapping[str, Any], gates: Sequence[Mapping[str, Any]],
                   verification: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """What a person must decide about a change no gate refused, in a stable order."""
    reasons: list[dict[str, str]] = []
    code_mode = task.get("mode", "code") == "code"
    if code_mode and not task.get("verify"):
        reasons.append({"code": NOT_VERIFIED, "sentence": _NOT_VERIFIED_SENTENCE})
    elif code_mode and task.get("proof", "required") == "required" and verification is not None \
            and verification.get("passed"):
        reasons += _proof_reasons(verification)
    for g in gates:
        for r in g.get("review") or []:
            _add_reason(reasons, str(r["code"]), str(r["sentence"]))
        if g.get("waived"):
            reasons.append({"code": WAIVED, "sentence": f"{g['code']} was waived: {g.get('waiver_reason') or ''}"
                            .rstrip(": ")})
    return reasons


def _proof_reasons(verification: Mapping[str, Any]) -> list[dict[str, str]]:
    """Why a verified change's proof needs a person: none, only the worker's own tests, own tests that
    fail before only on names the change adds, or none at all."""
    proof = str(verification.get("proof") or "bosun has no proof that the tests failed before this change")
    if verification.get("proven") is True:
        if verification.get("proven_by") != "own_tests":
            return []
        return [{"code": OWN_TESTS_PROOF, "sentence": f"proven only by the worker's own tests: {proof}; read them "
                 "(own_tests in the result) and check they state what the task asks"}]
    own = verification.get("own_tests") or []
    if own and all(isinstance(t, dict) and t.get("kind") == "new_name" for t in own):
        return [{"code": OWN_TESTS_TRIVIAL, "sentence": f"not proven: {proof}; a person must read the change"}]
    return [{"code": NOT_PROVEN, "sentence": f"not proven: {proof}"}]
def _add_reason(reasons: list[dict[str, str]], code: str, sentence: str) -> None:
    """One reason per code: two gates that found the same thing (the original tests of a deleted
    function left out, and those tests deleted with it: SUBJECT_REMOVED) say it in one entry."""
    same = next((r for r in reasons if r["code"] == code), None)
    if same is None:
        reasons.append({"code": code, "sentence": sentence})
    elif sentence not in same["sentence"]:
        same["sentence"] += f"; also, {sentence}"


def _waived(gates: Sequence[Mapping[str, Any]], code: str) -> bool:
    return any(g.get("code") == code and g.get("waived") for g in gates)


def codes(verdict: Mapping[str, Any] | None) -> list[str]:
    """The distinct reason codes of a verdict, in order."""
    seen: list[str] = []
    for r in (verdict or {}).get("reasons") or []:
        if r["code"] not in seen:
            seen.append(r["code"])
    return seen


def missing_acknowledgments(verdict: Mapping[str, Any], acknowledge: Iterable[str]) -> list[str]:
    """The reason codes of a needs-review verdict that ``acknowledge`` does not name."""
    named = {str(c).strip().upper() for c in acknowledge}
    return [c for c in codes(verdict) if c not in named]


def waits_for_a_person(verdict: Mapping[str, Any] | None) -> bool:
    """A needs-review verdict nobody has acknowledged: the run must not land on its own."""
    return verdict is not None and verdict["outcome"] == NEEDS_REVIEW and not verdict.get("acknowledged")


def may_land(verdict: Mapping[str, Any] | None) -> bool:
    """Landable, or needing review and acknowledged by a person, a script's --yes or the parent."""
    if not verdict:
        return False
    return verdict["outcome"] == LANDABLE or (verdict["outcome"] == NEEDS_REVIEW and bool(verdict.get("acknowledged")))


def one_line(verdict: Mapping[str, Any] | None) -> str:
    """The verdict in one line, as every text surface says it."""
    if not verdict:
        return "not judged yet"
    outcome = verdict["outcome"]
    if outcome == LANDABLE:
        return "landable"
    shown = ", ".join(codes(verdict)[:6])
    if outcome == REFUSED:
        return f"refused ({shown})"
    ack = verdict.get("acknowledged")
    return f"needs review ({shown})" + (f"; acknowledged by {ack.get('by')}" if ack else "")


def of_run(run: Run) -> Verdict | None:
    """The verdict of a stored run, read from its run directory."""
    from bosun.core.fileio import read_json
    from bosun.core.paths import run_dir

    rdir = run_dir(run.id)
    task_doc = read_json(rdir / "task.json", {}) or {}
    gates = (read_json(rdir / "gates.json", {}) or {}).get("gates", [])
    return decide(run, task_doc.get("task"), gates, read_json(rdir / "verification.json", None))
