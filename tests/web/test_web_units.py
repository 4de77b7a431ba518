"""Pure pieces of the dashboard: escaping in the diff highlighter, the plan graph, the SVG charts."""

from __future__ import annotations

from bosun.apps.savings_report import card_svg, totals
from bosun.web.highlight import highlight_code, highlight_diff
from bosun.web.svg import bar_chart, plan_graph


def test_highlighted_diff_escapes_everything_the_worker_wrote() -> None:
    diff = ('diff --git a/x.html b/x.html\n--- a/x.html\n+++ b/x.html\n@@ -1 +1 @@\n'
            '-<b>old</b>\n+<script>alert("x")</script> # &amp;\n')
    html = highlight_diff(diff)
    assert "<script" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html and "&amp;amp;" in html
    assert html.count('class="dl dl-add"') == 1 and html.count('class="dl dl-del"') == 1


def test_code_tokens() -> None:
    out = highlight_code('def f(): return "a<b" # note')
    assert '<span class="tk-word">def</span>' in out and '<span class="tk-str">"a&lt;b"</span>' in out
    assert '<span class="tk-com"># note</span>' in out


def test_plan_graph_has_a_node_per_task_and_an_edge_per_dependency() -> None:
    tasks = [{"task_id": "a", "wave": 0, "state": "merged", "run_id": "20260101-000000-abcdef"},
             {"task_id": "b<x>", "wave": 1, "state": "pending"}]
    svg = plan_graph(tasks, {"b<x>": ["a", "missing"]})
    assert svg.count('class="node ') == 2 and svg.count('class="edge"') == 1
    assert "b&lt;x&gt;" in svg and "<x>" not in svg
    assert 'href="/runs/20260101-000000-abcdef"' in svg
    assert "no tasks" in plan_graph([], {})


def test_bar_chart_and_card_escape_labels() -> None:
    svg = bar_chart("t", ["<p>"], [("s", "s-cost", [1.0])])
    assert "&lt;p&gt;" in svg and "<p>" not in svg
    assert "no data" in bar_chart("t", [], [])
    rep = {"since": None, "totals": totals([])}
    assert card_svg(rep).startswith("<svg") and "0 runs" in card_svg(rep)
