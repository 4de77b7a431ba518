"""The verdict on the dashboard: a badge on the runs list, the reasons on the run page, and the approve
button that a person presses only after the page showed them those reasons.

Every word comes from ``bosun.engine.verdict`` (``one_line``, the reason sentences), so the dashboard
says what ``bosun show``, the receipt, MCP and the notifications say. The approve form carries the
reason codes the page showed (``reviewed``); ``bosun.web.app`` acknowledges them for the person only
when they are still the run's reasons.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bosun.web.html import e, prose

if TYPE_CHECKING:
    from collections.abc import Mapping

APPROVABLE = ("verified",)


def badge(verdict: Mapping[str, Any] | None) -> str:
    """The verdict in one line (``verdict.one_line``), coloured by its outcome."""
    from bosun.engine.verdict import one_line

    if not verdict:
        return '<span class="muted">not judged yet</span>'
    outcome = verdict["outcome"]
    return f'<span class="verdict v-{e(outcome)}" data-verdict="{e(outcome)}">{e(one_line(verdict))}</span>'


def section(verdict: Mapping[str, Any] | None) -> str:
    """The run page's verdict: the line, then every reason with its sentence."""
    if not verdict:
        return '<div class="verdict-box"><b>verdict:</b> <span class="muted">not judged yet</span></div>'
    reasons = "".join(f'<li data-reason="{e(r["code"])}"><code>{e(r["code"])}</code>: {prose(r["sentence"])}</li>'
                      for r in verdict.get("reasons") or [])
    ack = verdict.get("acknowledged")
    note = ""
    if verdict["outcome"] == "needs_review" and not ack:
        note = '<p class="warn">a person must decide: read these reasons (and the diff) before approving</p>'
    return (f'<div class="verdict-box" id="verdict"><b>verdict:</b> {badge(verdict)}{note}'
            + (f'<ul class="reasons">{reasons}</ul>' if reasons else "") + "</div>")


def approve_form(run_id: str, state: str, verdict: Mapping[str, Any] | None) -> str:
    """The approve button, for a verified run that is not refused. For one that needs review, the form
    names the reasons this page showed; pressing it is the person's acknowledgment of them."""
    from bosun.engine.verdict import REFUSED, codes, waits_for_a_person

    if state not in APPROVABLE or not verdict or verdict["outcome"] == REFUSED:
        return ""
    rid = e(run_id)
    waits = waits_for_a_person(verdict)
    shown = ",".join(codes(verdict)) if waits else ""
    label = "approve: I read the reasons" if waits else "approve"
    confirm = (f' hx-confirm="Approve this run? You acknowledge: {e(shown)}"' if waits else "")
    return (f'<form method="post" action="/runs/{rid}/approve" hx-post="/runs/{rid}/approve" '
            f'hx-target="#action-result" hx-swap="innerHTML"{confirm}>'
            f'<input type="hidden" name="reviewed" value="{e(shown)}">'
            f'<button class="approve">{e(label)}</button></form>')


def acknowledgment(verdict: Mapping[str, Any] | None, reviewed: str) -> tuple[str | None, list[str]]:
    """What the approve button acknowledges: ``"all"`` when the page showed every reason the run needs
    review for, else None; and the codes the page did not show (the person has not read them)."""
    from bosun.engine.verdict import missing_acknowledgments, waits_for_a_person

    if not waits_for_a_person(verdict):
        return None, []
    assert verdict is not None
    missing = missing_acknowledgments(verdict, [c for c in reviewed.split(",") if c.strip()])
    return (None, missing) if missing else ("all", [])
