"""The audit dashboard /audit/dashboard/ and the SVG charts behind it (audit/charts.py)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit import charts
from demo.records import record_item, store_items
from tests.audit.pages_support import DANGER_HOOK, World


def _chart(body: str, chart_id: str, variant: str = "wide") -> str:
    """One drawing (desktop `wide` or phone `narrow`) of a dashboard chart section."""
    start = body.index(f'id="{chart_id}"')
    section = body[start : body.index("</section>", start)]
    if f'class="chart-{variant}"' not in section:
        return section
    drawing = section[section.index(f'class="chart-{variant}"') :]
    return drawing[: drawing.index("</svg>") + 6]


def _bars(svg: str) -> dict[str, int]:
    totals: dict[str, int] = {}
    for series, value in re.findall(
        r'class="bar" data-series="([^"]+)" data-value="([\d,]+)"', svg
    ):
        totals[series] = totals.get(series, 0) + int(value.replace(",", ""))
    return totals


def test_outcome_chart_has_bars_for_each_seeded_outcome(
    auditor_client: Client, world: World
) -> None:
    body = auditor_client.get("/audit/dashboard/").content.decode()
    assert _bars(_chart(body, "chart-outcomes")) == {
        "allowed": 7,
        "warned": 1,
        "denied": 2,
        "transformed": 1,
        "approved": 1,
        "expired": 1,
        "host_error": 1,
    }


def test_phone_drawing_shows_the_same_numbers(auditor_client: Client, world: World) -> None:
    body = auditor_client.get("/audit/dashboard/").content.decode()
    for chart_id in ("chart-outcomes", "chart-reasons", "chart-hooks", "chart-agents"):
        wide, narrow = _chart(body, chart_id), _chart(body, chart_id, "narrow")
        assert 'viewBox="0 0 400 ' in narrow and 'viewBox="0 0 400 ' not in wide
        assert _bars(wide) == _bars(narrow), chart_id


def test_agent_filter_and_period_narrow_the_charts(auditor_client: Client, world: World) -> None:
    body = auditor_client.get("/audit/dashboard/?agent=sre-agent").content.decode()
    assert sum(_bars(_chart(body, "chart-outcomes")).values()) == 10
    month = auditor_client.get("/audit/dashboard/?range=30d").content.decode()
    assert sum(_bars(_chart(month, "chart-agents")).values()) == 14
    day = auditor_client.get("/audit/dashboard/?range=24h").content.decode()
    assert sum(_bars(_chart(day, "chart-agents")).values()) == 6  # sess-alpha, 2 h ago


def test_top_deny_reasons_and_hooks_by_problem(auditor_client: Client, world: World) -> None:
    body = auditor_client.get("/audit/dashboard/").content.decode()
    reasons = _chart(body, "chart-reasons")
    # The hook did not opt in to "record its reason": its message was not stored, the
    # reason code stands for it.
    assert "Dangerous command blocked" not in reasons
    assert "console:hook_blocked" in reasons
    assert _bars(reasons) == {"denied": 2}
    hooks = _bars(_chart(body, "chart-hooks"))
    assert hooks == {"blocks": 2, "refusals": 1, "timeouts": 1}
    assert f"hook={DANGER_HOOK}" in _chart(body, "chart-hooks")


def test_reviewer_wait_time_comes_from_decided_escalations(
    auditor_client: Client, world: World
) -> None:
    body = auditor_client.get("/audit/dashboard/").content.decode()
    start = body.index('id="chart-wait"')
    figures = body[start : body.index('class="chart"', start)]
    assert "<strong>p50</strong> 30.0 s" in figures
    assert "<strong>p95</strong> 30.0 s" in figures
    wait = _chart(body, "chart-wait")
    assert re.search(r'class="point" data-series="p95" data-value="30"', wait)


def test_dashboard_queries_are_aggregates_not_per_row(
    auditor_client: Client, world: World, sre: Any, django_assert_max_num_queries: Any
) -> None:
    with CaptureQueriesContext(connection) as before:
        auditor_client.get("/audit/dashboard/")
    start = timezone.now() - dt.timedelta(days=2)
    store_items(
        sre.agent,
        [
            record_item(
                session_id=f"sess-load-{i // 50}",
                sequence=i % 50,
                point="post_tool_call",
                at=start + dt.timedelta(minutes=i),
                outcome=("allowed", "denied", "host_error")[i % 3],
                hooks=(DANGER_HOOK,),
            )
            for i in range(300)
        ],
    )
    with django_assert_max_num_queries(len(before.captured_queries)):
        body = auditor_client.get("/audit/dashboard/").content.decode()
    assert sum(_bars(_chart(body, "chart-outcomes")).values()) == 314
    assert len(before.captured_queries) <= 16


def test_empty_period_says_so_instead_of_drawing_nothing(auditor_client: Client) -> None:
    body = auditor_client.get("/audit/dashboard/").content.decode()
    assert "No data in this period" in body


def test_chart_labels_are_escaped() -> None:
    svg = charts.horizontal_bars(
        rows=[('<script>alert("x")</script>', {"denied": 3})],
        series=[charts.Series("denied", "Denied", "#c00", [])],
        label="Top <deny> reasons",
    )
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    assert 'aria-label="Top &lt;deny&gt; reasons"' in svg


def test_stacked_bars_scale_to_a_round_axis_maximum() -> None:
    svg = charts.stacked_bars(
        categories=["a", "b"],
        series=[
            charts.Series("allowed", "Allowed", "#0a0", [30, 10]),
            charts.Series("denied", "Denied", "#a00", [7, 0]),
        ],
        label="t",
    )
    assert _bars(svg) == {"allowed": 40, "denied": 7}
    assert ">40</text>" in svg and ">50</text>" not in svg  # 37 → an axis of 0..40 by 10
    assert charts.nice_axis(37) == (40, 10)
    assert charts.nice_axis(216) == (250, 50)
    assert charts.nice_axis(3) == (3, 1)  # counts never get fractional ticks
    assert charts.nice_axis(104, integer=False) == (125, 25)
    assert charts.nice_axis(0) == (1, 1)
