"""Server-rendered SVG charts for the audit dashboard: no JavaScript, no chart library.

Each function takes already-aggregated numbers and returns one `<svg>` element as a
SafeString. Every label that comes from data is escaped. Bars and points carry
`data-series`/`data-value` so tests (and curious users) can read the numbers back, and a
`<title>` so hovering shows them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# One colour per record outcome, the same hues as the badges in console.css.
OUTCOME_COLORS: dict[str, str] = {
    "allowed": "#2e9a5f",
    "warned": "#d98c1a",
    "denied": "#c0392b",
    "transformed": "#2f5bd3",
    "approved": "#16735f",
    "rejected": "#7d1d16",
    "expired": "#8a8f99",
    "host_error": "#6b3fa0",
}
PALETTE = ("#2f5bd3", "#c0392b", "#d98c1a", "#2e9a5f", "#6b3fa0", "#8a8f99")
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    color: str
    values: Sequence[float | None]


def nice_axis(value: float, *, ticks: int = 5, integer: bool = True) -> tuple[float, float]:
    """(axis maximum, tick step): the step is 1, 2, 2.5 or 5 × 10^k giving about `ticks`
    intervals, and the maximum the first multiple of the step at or above value. Counts
    get whole-number steps."""
    if value <= 0:
        return 1.0, 1.0
    raw = value / ticks
    exponent = math.floor(math.log10(raw))
    step = 10.0 ** (exponent + 1)
    for multiple in (1, 2, 2.5, 5):
        candidate = multiple * 10.0**exponent
        if candidate >= raw and not (integer and candidate != int(candidate)):
            step = candidate
            break
    if integer:
        step = max(step, 1.0)
    return step * math.ceil(value / step - 1e-9), step


def _fmt(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.1f}"


def _open(width: int, height: int, label: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(label)}" class="chart-svg" '
        f'font-family="{FONT}" font-size="11">',
        f"<title>{escape(label)}</title>",
    ]


def _empty(width: int, height: int, label: str, message: str) -> SafeString:
    parts = _open(width, height, label)
    parts.append(
        f'<text x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle" '
        f'fill="#5d6878" font-size="13">{escape(message)}</text></svg>'
    )
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped


def _legend(series: Sequence[Series], x: float, y: float, width: float) -> list[str]:
    parts: list[str] = []
    cx, cy = x, y
    for item in series:
        item_width = 18 + 6.5 * len(item.label) + 14
        if cx + item_width > x + width and cx > x:
            cx, cy = x, cy + 16
        parts.append(
            f'<g class="legend" data-series="{escape(item.key)}">'
            f'<rect x="{cx:.1f}" y="{cy - 9:.1f}" width="10" height="10" rx="2" fill="{item.color}"/>'
            f'<text x="{cx + 14:.1f}" y="{cy:.1f}" fill="#1c2330">{escape(item.label)}</text></g>'
        )
        cx += item_width
    return parts


def _legend_height(series: Sequence[Series], width: float) -> float:
    rows, cx = 1, 0.0
    for item in series:
        item_width = 18 + 6.5 * len(item.label) + 14
        if cx + item_width > width and cx > 0:
            rows, cx = rows + 1, 0.0
        cx += item_width
    return rows * 16


def _y_axis(
    top: float, bottom: float, left: float, right: float, axis: tuple[float, float], unit: str = ""
) -> list[str]:
    y_max, step = axis
    parts = []
    for i in range(round(y_max / step) + 1):
        value = step * i
        y = bottom - (bottom - top) * value / y_max
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" '
            f'stroke="{"#c9d0db" if i == 0 else "#eceff4"}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#5d6878">'
            f"{_fmt(value)}{escape(unit)}</text>"
        )
    return parts


def _x_labels(categories: Sequence[str], left: float, step: float, y: float) -> list[str]:
    """At most ~8 labels: every n-th category, and the last one when it has room."""
    every = max(1, math.ceil(len(categories) / 8))
    last = len(categories) - 1
    shown = [i for i in range(len(categories)) if i % every == 0]
    if shown[-1] != last and last - shown[-1] >= max(2, every // 2 + 1):
        shown.append(last)
    return [
        f'<text x="{left + step * (i + 0.5):.1f}" y="{y:.1f}" text-anchor="middle" '
        f'fill="#5d6878">{escape(categories[i])}</text>'
        for i in shown
    ]


def stacked_bars(
    *,
    categories: Sequence[str],
    series: Sequence[Series],
    label: str,
    width: int = 960,
    height: int = 260,
    empty_message: str = "No data in this period",
) -> SafeString:
    """Vertical bars, one per category, each stacked from the series in order."""
    totals = [sum(s.values[i] or 0 for s in series) for i in range(len(categories))]
    if not categories or not any(totals):
        return _empty(width, height, label, empty_message)
    legend_h = _legend_height(series, width - 60)
    top, left, right = 12 + legend_h + 8, 48, width - 8
    bottom = height - 24.0
    axis = nice_axis(max(totals))
    y_max = axis[0]
    step = (right - left) / len(categories)
    bar_w = max(2.0, step * 0.7)
    parts = _open(width, height, label)
    parts += _legend(series, left, 20, width - 60)
    parts += _y_axis(top, bottom, left, right, axis)
    for i, category in enumerate(categories):
        x = left + step * i + (step - bar_w) / 2
        base = float(bottom)
        for s in series:
            value = float(s.values[i] or 0)
            if not value:
                continue
            h = (bottom - top) * value / y_max
            base -= h
            parts.append(
                f'<rect class="bar" data-series="{escape(s.key)}" data-value="{_fmt(value)}" '
                f'x="{x:.1f}" y="{base:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{s.color}"><title>{escape(category)} · {escape(s.label)}: '
                f"{_fmt(value)}</title></rect>"
            )
    parts += _x_labels(categories, left, step, height - 8)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped


def horizontal_bars(
    *,
    rows: Sequence[tuple[str, Mapping[str, float]]],
    series: Sequence[Series],
    label: str,
    width: int = 960,
    label_width: int = 260,
    label_above: bool = False,
    empty_message: str = "No data in this period",
    links: Sequence[str] | None = None,
) -> SafeString:
    """One horizontal bar per row, stacked by series key; the total is printed at its end.

    `series[].values` is ignored here: each row maps series key to its value. Labels sit
    left of the bars in `label_width`, or above them (`label_above`, for long labels such as
    deny messages). When `links` is given, each row's label links to it (e.g. the search
    filtered to that row). The longest bar spans the plot.
    """
    if not rows:
        return _empty(width, 80, label, empty_message)
    row_height = 38 if label_above else 24
    bar_top, bar_height = (18, 13) if label_above else (4, 16)
    legend_h = _legend_height(series, width - 16) if len(series) > 1 else 0.0
    top = 8 + (legend_h + 10 if legend_h else 0)
    height = int(top + row_height * len(rows) + 4)
    left = 8 if label_above else label_width
    right = width - 48
    x_max = max(sum(values.values()) for _, values in rows) or 1
    parts = _open(width, height, label)
    if legend_h:
        parts += _legend(series, 8, 18, width - 16)
    max_chars = int((width - 16) / 6.4) if label_above else int((label_width - 12) / 7)
    for i, (name, values) in enumerate(rows):
        y = top + row_height * i
        short = name if len(name) <= max_chars else name[: max_chars - 1] + "…"
        if label_above:
            position = f'x="{left}" y="{y + 12:.1f}"'
        else:
            position = f'x="{left - 8}" y="{y + row_height / 2 + 4:.1f}" text-anchor="end"'
        text = (
            f'<text {position} fill="#1c2330"><title>{escape(name)}</title>{escape(short)}</text>'
        )
        if links:
            text = f'<a href="{escape(links[i])}">{text}</a>'
        parts.append(text)
        x = float(left)
        for s in series:
            value = values.get(s.key, 0)
            if not value:
                continue
            w = (right - left) * value / x_max
            parts.append(
                f'<rect class="bar" data-series="{escape(s.key)}" data-value="{_fmt(value)}" '
                f'x="{x:.1f}" y="{y + bar_top:.1f}" width="{max(w, 1.5):.1f}" '
                f'height="{bar_height}" rx="2" fill="{s.color}"><title>{escape(name)} · '
                f"{escape(s.label)}: {_fmt(value)}</title></rect>"
            )
            x += w
        parts.append(
            f'<text x="{x + 6:.1f}" y="{y + bar_top + bar_height - 2:.1f}" fill="#5d6878">'
            f"{_fmt(sum(values.values()))}</text>"
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped


def lines(
    *,
    categories: Sequence[str],
    series: Sequence[Series],
    label: str,
    unit: str = "",
    width: int = 960,
    height: int = 240,
    empty_message: str = "No data in this period",
) -> SafeString:
    """One polyline per series over the categories; None values leave a gap in the line."""
    present = list(series)
    values = [v for s in present for v in s.values if v is not None]
    if not categories or not values:
        return _empty(width, height, label, empty_message)
    legend_h = _legend_height(present, width - 60)
    top, left, right = 12 + legend_h + 8, 48, width - 8
    bottom = height - 24.0
    axis = nice_axis(max(values), integer=False)
    y_max = axis[0]
    step = (right - left) / len(categories)
    parts = _open(width, height, label)
    parts += _legend(present, left, 20, width - 60)
    parts += _y_axis(top, bottom, left, right, axis, unit)
    for s in present:
        segment: list[str] = []
        segments: list[list[str]] = [segment]
        for i, value in enumerate(s.values):
            if value is None:
                segment = []
                segments.append(segment)
                continue
            x = left + step * (i + 0.5)
            y = bottom - (bottom - top) * value / y_max
            segment.append(f"{x:.1f},{y:.1f}")
            parts.append(
                f'<circle class="point" data-series="{escape(s.key)}" data-value="{_fmt(value)}" '
                f'cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{s.color}"><title>{escape(categories[i])}'
                f" · {escape(s.label)}: {_fmt(value)}{escape(unit)}</title></circle>"
            )
        for points in segments:
            if len(points) > 1:
                parts.append(
                    f'<polyline fill="none" stroke="{s.color}" stroke-width="2" '
                    f'points="{" ".join(points)}"/>'
                )
    parts += _x_labels(categories, left, step, height - 8)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped


def histogram(
    *,
    counts: Sequence[int],
    labels: Sequence[str],
    links: Sequence[str],
    axis_labels: Sequence[str],
    label: str,
    width: int = 960,
    height: int = 150,
    color: str = "#2f5bd3",
    empty_message: str = "No records in this period",
) -> SafeString:
    """The explorer's histogram: one bar per time bucket, each a link (to the period of that
    bucket) with a `<title>` and `aria-label` naming its bucket and count; a count axis on
    the left and up to ~8 time labels (`axis_labels`, "" for none) below. `labels` name each
    bucket in full. Empty buckets get a transparent full-height link so every period can be
    opened."""
    if not counts or not any(counts):
        return _empty(width, height, label, empty_message)
    top, left, right = 10.0, 48, width - 8
    bottom = height - 22.0
    axis = nice_axis(max(counts), ticks=3)
    y_max = axis[0]
    step = (right - left) / len(counts)
    gap = 1.0 if step > 4 else 0.0
    parts = _open(width, height, label)
    parts += _y_axis(top, bottom, left, right, axis)
    for i, count in enumerate(counts):
        x = left + step * i
        h = (bottom - top) * count / y_max
        text = f"{labels[i]}: {_fmt(count)} record{'' if count == 1 else 's'}"
        parts.append(
            f'<a href="{escape(links[i])}" class="hist-link" aria-label="{escape(text)}">'
            f'<rect class="hist-hit" x="{x:.1f}" y="{top:.1f}" width="{step:.2f}" '
            f'height="{bottom - top:.1f}" fill="transparent"/>'
            f'<rect class="bar" data-value="{count}" x="{x + gap / 2:.1f}" '
            f'y="{bottom - h:.1f}" width="{max(step - gap, 0.8):.2f}" height="{h:.1f}" '
            f'fill="{color}"/><title>{escape(text)}</title></a>'
        )
    for i, text in enumerate(axis_labels):
        if text:
            x = left + step * i
            parts.append(
                f'<line x1="{x:.1f}" y1="{bottom:.1f}" x2="{x:.1f}" y2="{bottom + 4:.1f}" '
                f'stroke="#c9d0db"/><text x="{x:.1f}" y="{height - 6:.1f}" '
                f'text-anchor="start" fill="#5d6878">{escape(text)}</text>'
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped
