"""Inline SVG for the dashboard: bar charts and a plan's task graph. Classes only, no inline style."""

from __future__ import annotations

from html import escape
from typing import Any


def bar_chart(title: str, labels: list[str], series: list[tuple[str, str, list[float]]], unit: str = "") -> str:
    """Grouped bars: ``series`` is [(name, css class, values)], one value per label. A negative value
    (a saving below zero) is drawn below the zero line, not left out."""
    width, height, left, bottom, top = 640, 220, 64, 40, 28
    if not labels:
        return f'<p class="muted">{escape(title)}: no data yet</p>'
    values_all = [v for _, _, values in series for v in values]
    peak, trough = max([0.0, *values_all]), min([0.0, *values_all])
    if peak == trough:
        peak = 1.0
    plot_w, plot_h = width - left - 12, height - bottom - top
    scale = plot_h / (peak - trough)
    zero = top + peak * scale
    group_w = plot_w / len(labels)
    bar_w = max(2.0, min(28.0, (group_w - 6) / max(1, len(series))))
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" class="chart-title">{escape(title)}</text>',
        f'<line x1="{left}" y1="{zero:.1f}" x2="{width - 12}" y2="{zero:.1f}" class="axis"/>',
        f'<text x="{left - 6}" y="{zero:.1f}" class="tick" text-anchor="end">0</text>',
    ]
    if zero - (top + 8) >= 12:  # the peak's label, unless it would sit on the zero line's
        parts.append(f'<text x="{left - 6}" y="{top + 8}" class="tick" text-anchor="end">{escape(_fmt(peak, unit))}</text>')
    if trough < 0:
        parts.append(f'<text x="{left - 6}" y="{top + plot_h}" class="tick" text-anchor="end">'
                     f'{escape(_fmt(trough, unit))}</text>')
    step = max(1, len(labels) // 10)
    for i, label in enumerate(labels):
        x0 = left + i * group_w + 3
        for j, (name, cls, values) in enumerate(series):
            v = values[i] if i < len(values) else 0
            h = abs(v) * scale
            y = zero - h if v >= 0 else zero
            x = x0 + j * bar_w
            neg = " neg" if v < 0 else ""
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 1:.1f}" height="{h:.1f}" class="{cls}{neg}">'
                f"<title>{escape(label)} {escape(name)}: {escape(_fmt(v, unit))}</title></rect>"
            )
        if i % step == 0:
            parts.append(f'<text x="{x0:.1f}" y="{height - 22}" class="tick">{escape(label[:14])}</text>')
    for j, (name, cls, _) in enumerate(series):
        x = left + j * 150
        parts.append(f'<rect x="{x}" y="{height - 12}" width="10" height="10" class="{cls}"/>'
                     f'<text x="{x + 14}" y="{height - 3}" class="tick">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _fmt(v: float, unit: str) -> str:
    if unit == "$":
        sign, v = ("-" if v < 0 else ""), abs(v)
        # A cent is not the smallest cost a run has: sub-cent values keep their digits ($0.0016).
        return sign + (f"${v:.4f}" if 0 < v < 0.01 else f"${v:,.3f}" if v < 1 else f"${v:,.2f}" if v < 100
                       else f"${v:,.0f}")
    if v >= 1_000_000:
        return f"{v / 1_000_000:.1f}M"
    if v >= 1000:
        return f"{v / 1000:.1f}k"
    return f"{v:g}"


def plan_graph(tasks: list[dict[str, Any]], depends: dict[str, list[str]]) -> str:
    """Tasks in columns by wave, edges from each dependency to its dependant; each node is a link to
    the task's run and carries its live state as a class."""
    if not tasks:
        return '<p class="muted">this plan has no tasks</p>'
    waves: dict[int, list[dict[str, Any]]] = {}
    for t in tasks:
        waves.setdefault(int(t["wave"]), []).append(t)
    node_w, node_h, col_gap, row_gap, pad = 170, 46, 70, 18, 20
    pos: dict[str, tuple[float, float]] = {}
    ordered = sorted(waves)
    for ci, wave in enumerate(ordered):
        for ri, t in enumerate(waves[wave]):
            pos[t["task_id"]] = (pad + ci * (node_w + col_gap), pad + 22 + ri * (node_h + row_gap))
    width = pad * 2 + len(ordered) * node_w + (len(ordered) - 1) * col_gap
    height = pad * 2 + 22 + max(len(v) for v in waves.values()) * (node_h + row_gap)
    parts = [f'<svg class="dag" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="plan task graph">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead"/></marker></defs>']
    for ci, wave in enumerate(ordered):
        parts.append(f'<text x="{pad + ci * (node_w + col_gap)}" y="{pad + 6}" class="wave-label">wave {wave}</text>')
    for t in tasks:
        for dep in depends.get(t["task_id"], []):
            if dep not in pos:
                continue
            x1, y1 = pos[dep][0] + node_w, pos[dep][1] + node_h / 2
            x2, y2 = pos[t["task_id"]][0], pos[t["task_id"]][1] + node_h / 2
            mid = (x1 + x2) / 2
            parts.append(f'<path d="M {x1} {y1} C {mid} {y1}, {mid} {y2}, {x2 - 2} {y2}" class="edge" '
                         f'marker-end="url(#arrow)"/>')
    for t in tasks:
        x, y = pos[t["task_id"]]
        state = str(t.get("state") or "pending")
        label = escape(str(t["task_id"])[:22])
        node = (f'<g class="node st-{escape(state)}" data-task="{escape(str(t["task_id"]))}" data-state="{escape(state)}">'
                f'<rect x="{x}" y="{y}" width="{node_w}" height="{node_h}" rx="8"/>'
                f'<text x="{x + 10}" y="{y + 19}" class="node-id">{label}</text>'
                f'<text x="{x + 10}" y="{y + 36}" class="node-state">{escape(state)}</text></g>')
        if t.get("run_id"):
            node = f'<a href="/runs/{escape(str(t["run_id"]))}">{node}</a>'
        parts.append(node)
    parts.append("</svg>")
    return "".join(parts)
