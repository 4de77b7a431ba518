"""Render a task contract into the prompt a worker receives."""

from __future__ import annotations

from bosun.core.contract import Mode, TaskContract

_MODE_RULES = {
    Mode.code: "Make the change in the files of this repository. Do not commit, branch, stash or push: "
    "bosun reviews and commits your change itself.",
    Mode.explore: "Do not change any file. Read the code and answer in your final message.",
    Mode.review: "Do not change any file. Review the code and report findings in your final message.",
    Mode.test: "Do not change any file. Run the relevant checks and report what you found in your final message.",
}


def render_prompt(task: TaskContract, locked: list[str] | None = None) -> str:
    parts = [f"# Task: {task.title}", "", task.prompt.strip(), ""]
    if task.acceptance:
        parts.append("## Acceptance criteria")
        parts.extend(f"- {c}" for c in task.acceptance)
        parts.append("")
    if task.scope:
        parts.append("## You may only change files matching")
        parts.extend(f"- {g}" for g in task.scope)
        parts.append("")
    if task.locked:
        parts.append("## You must not change files matching")
        parts.extend(f"- {g}" for g in task.locked)
        parts.append("")
    if task.verify:
        parts.append("## bosun will verify your work by running")
        parts.extend(f"- `{' '.join(v.run)}`" for v in task.verify)
        parts.append("")
    parts.append("## Rules")
    parts.append(_MODE_RULES[task.mode])
    parts.append("Never weaken, skip or delete tests, and never write secrets into files.")
    return "\n".join(parts).rstrip() + "\n"
