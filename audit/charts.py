"""Server-rendered SVG charts for the audit dashboard: no JavaScript, no chart library.

Each function takes already-aggregated numbers and returns one `<svg>` element as a
SafeString. Every label that comes from data is escaped. Bars and points carry
`data-series`/`data-value` so tests (and curious users) can read the numbers back, and a
`<title>` so hovering shows them.
"""

from __future__ import annotations

import functools
import hashlib
import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.utils.safestring import SafeString, mark_safe

# One colour per record outcome from the Okabe–Ito palette (told apart with the common
# colour-vision deficiencies), plus grey; the blocking and failing outcomes also carry a
# pattern, so colour is never the only cue (legends, totals and each chart's table too).
OUTCOME_COLORS: dict[str, str] = {
    "allowed": "#009E73",
    "warned": "#E69F00",
    "denied": "#D55E00",
    "transformed": "#56B4E9",
    "approved": "#0072B2",
    "rejected": "#CC79A7",
    "expired": "#7F7F7F",
    "host_error": "#000000",
}
OUTCOME_PATTERNS: dict[str, str] = {
    "denied": "stripes",
    "rejected": "cross",
    "expired": "dots",
    "host_error": "stripes",
}
PALETTE = ("#0072B2", "#D55E00", "#E69F00", "#009E73", "#CC79A7", "#56B4E9")
# The standard library's escape (the same five characters as Django's, without its lazy
# wrapper: charts escape thousands of strings per page).
escape = functools.partial(html.escape, quote=True)
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    color: str
    values: Sequence[float | None]
    # "stripes", "cross" or "dots" over the colour (bars); "dashed" (lines); "" plain.
    pattern: str = ""


def _uid(label: str, width: int) -> str:
    """An id prefix unique to one drawing (the page holds a wide and a narrow one)."""
    return "c" + hashlib.md5(f"{label}|{width}".encode(), usedforsecurity=False).hexdigest()[:8]


_PATTERN_MARKS = {
    "stripes": '<path d="M0 6L6 0M-1 1L1 -1M5 7L7 5" stroke="#fff" stroke-width="1.6" stroke-opacity=".75"/>',
    "cross": '<path d="M0 0L6 6M0 6L6 0" stroke="#fff" stroke-width="1.2" stroke-opacity=".8"/>',
    "dots": '<circle cx="3" cy="3" r="1.3" fill="#fff" fill-opacity=".85"/>',
}


def _defs(series: Sequence[Series], uid: str) -> list[str]:
    patterns = [
        f'<pattern id="{uid}-{escape(s.key)}" width="6" height="6" patternUnits="userSpaceOnUse">'
        f'<rect width="6" height="6" fill="{s.color}"/>{_PATTERN_MARKS[s.pattern]}</pattern>'
        for s in series
        if s.pattern in _PATTERN_MARKS
    ]
    return ["<defs>", *patterns, "</defs>"] if patterns else []


def _fill(item: Series, uid: str) -> str:
    return f"url(#{uid}-{escape(item.key)})" if item.pattern in _PATTERN_MARKS else item.color


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


def _open(width: int, height: int, label: str, x: int = 0) -> list[str]:
    """An SVG showing x from `x` to `width` and y from 0 to `height`."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="{x} 0 {width - x} {height}" '
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


def _legend(series: Sequence[Series], x: float, y: float, width: float, uid: str = "") -> list[str]:
    parts: list[str] = []
    cx, cy = x, y
    for item in series:
        item_width = 18 + 6.5 * len(item.label) + 14
        if cx + item_width > x + width and cx > x:
            cx, cy = x, cy + 16
        parts.append(
            f'<g class="legend" data-series="{escape(item.key)}">'
            f'<rect x="{cx:.1f}" y="{cy - 9:.1f}" width="10" height="10" rx="2" '
            f'fill="{_fill(item, uid) if uid else item.color}"/>'
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
    top: float,
    bottom: float,
    left: float,
    right: float,
    axis: tuple[float, float],
    unit: str = "",
    *,
    grid: bool = True,
    labels: bool = True,
) -> list[str]:
    """The value axis: a grid line across the plot (`grid`) and a label left of `left`
    (`labels`) at each tick."""
    y_max, step = axis
    parts = []
    for i in range(round(y_max / step) + 1):
        value = step * i
        y = bottom - (bottom - top) * value / y_max
        if grid:
            parts.append(
                f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" '
                f'stroke="{"#c9d0db" if i == 0 else "#eceff4"}"/>'
            )
        if labels:
            parts.append(
                f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#5d6878">'
                f"{_fmt(value)}{escape(unit)}</text>"
            )
    return parts


def _x_labels(
    categories: Sequence[str], left: float, step: float, y: float, right: float = 1e9
) -> list[str]:
    """At most ~8 labels: every n-th category, and the last one when it has room; a label
    that would cross the right edge ends at it."""
    every = max(1, math.ceil(len(categories) / 8))
    last = len(categories) - 1
    shown = [i for i in range(len(categories)) if i % every == 0]
    if shown[-1] != last and last - shown[-1] >= max(2, every // 2 + 1):
        shown.append(last)
    parts = []
    previous_end = -1e9
    for i in shown:
        x, anchor = left + step * (i + 0.5), "middle"
        start = x - 3.4 * len(categories[i])
        if x + 3.4 * len(categories[i]) > right:
            x, anchor, start = right, "end", right - 6.8 * len(categories[i])
        if start < previous_end + 4:
            continue  # it would overlap the label before it
        previous_end = start + 6.8 * len(categories[i])
        parts.append(
            f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" '
            f'fill="#5d6878">{escape(categories[i])}</text>'
        )
    return parts


def stacked_bars(
    *,
    categories: Sequence[str],
    series: Sequence[Series],
    label: str,
    width: int = 960,
    height: int = 260,
    empty_message: str = "No data in this period",
    links: Sequence[str] | None = None,
) -> SafeString:
    """Vertical bars, one per category, each stacked from the series in order. When
    `links` is given, each bar links to it (the search of exactly that bar's records);
    the total sits above each bar when there is room."""
    totals = [sum(s.values[i] or 0 for s in series) for i in range(len(categories))]
    if not categories or not any(totals):
        return _empty(width, height, label, empty_message)
    uid = _uid(label, width)
    legend_h = _legend_height(series, width - 60)
    top, left, right = 12 + legend_h + 8 + 12, 48, width - 8
    bottom = height - 24.0
    axis = nice_axis(max(totals))
    y_max = axis[0]
    step = (right - left) / len(categories)
    bar_w = max(2.0, step * 0.7)
    show_totals = step >= 7 * len(_fmt(max(totals))) + 4
    parts = _open(width, height, label)
    parts += _defs(series, uid)
    parts += _legend(series, left, 20, width - 60, uid)
    parts += _y_axis(top, bottom, left, right, axis)
    for i, category in enumerate(categories):
        x = left + step * i + (step - bar_w) / 2
        base = float(bottom)
        bar: list[str] = []
        for s in series:
            value = float(s.values[i] or 0)
            if not value:
                continue
            h = (bottom - top) * value / y_max
            base -= h
            bar.append(
                f'<rect class="bar" data-series="{escape(s.key)}" data-value="{_fmt(value)}" '
                f'x="{x:.1f}" y="{base:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{_fill(s, uid)}" stroke="#fff" stroke-width="0.5">'
                f"<title>{escape(category)} · {escape(s.label)}: {_fmt(value)}</title></rect>"
            )
        if show_totals and totals[i]:
            bar.append(
                f'<text class="bar-total" x="{x + bar_w / 2:.1f}" y="{base - 3:.1f}" '
                f'text-anchor="middle" fill="#1c2330">{_fmt(totals[i])}</text>'
            )
        if links and bar and totals[i]:
            title = f"{category}: {_fmt(totals[i])} records"
            bar = [f'<a href="{escape(links[i])}" aria-label="{escape(title)}">', *bar, "</a>"]
        parts += bar
    parts += _x_labels(categories, left, step, height - 8, right)
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
    uid = _uid(label, width)
    parts = _open(width, height, label)
    parts += _defs(series, uid)
    if legend_h:
        parts += _legend(series, 8, 18, width - 16, uid)
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
                f'height="{bar_height}" fill="{_fill(s, uid)}" stroke="#fff" '
                f'stroke-width="0.5"><title>{escape(name)} · '
                f"{escape(s.label)}: {_fmt(value)}</title></rect>"
            )
            text = _fmt(value)
            if len(series) > 1 and w >= 6.5 * len(text) + 10:
                # The segment's own number on it, on a light chip (readable over any fill).
                chip_w = 6.2 * len(text) + 6
                cx, cy = x + w / 2, y + bar_top + bar_height / 2
                parts.append(
                    f'<rect class="bar-chip" x="{cx - chip_w / 2:.1f}" y="{cy - 6:.1f}" '
                    f'width="{chip_w:.1f}" height="12" rx="3" fill="#fff" fill-opacity=".9"/>'
                    f'<text class="bar-value" x="{cx:.1f}" y="{cy + 3.5:.1f}" '
                    f'text-anchor="middle" fill="#1c2330" font-size="10">{text}</text>'
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
                dash = ' stroke-dasharray="6 4"' if s.pattern == "dashed" else ""
                parts.append(
                    f'<polyline fill="none" stroke="{s.color}" stroke-width="2"{dash} '
                    f'points="{" ".join(points)}"/>'
                )
    parts += _x_labels(categories, left, step, height - 8, right)
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
    opened.

    Two drawings of one coordinate space, side by side in `<div class="hist-plot">`: the
    count axis' labels (x 0 to `left`, `svg.hist-axis`) and, in `<div class="hist-scroll">`,
    the plot (x `left` to `width`: grid, bars, time labels). Both scale alike at any width;
    on a phone the plot keeps a readable scale and scrolls sideways under a count axis that
    stays in view (static/css/console.css). With no record to draw, `empty_message` as a
    paragraph (`p.hist-empty`, as tall as the drawing in proportion): HTML text keeps a
    readable size at any width, which a 960-wide drawing scaled to a phone would not."""
    if not counts or not any(counts):
        return mark_safe(f'<p class="hist-empty">{escape(empty_message)}</p>')  # noqa: S308 - escaped
    top, left, right = 10.0, 48, width - 8
    bottom = height - 22.0
    axis = nice_axis(max(counts), ticks=3)
    y_max = axis[0]
    step = (right - left) / len(counts)
    gap = 1.0 if step > 4 else 0.0
    parts = [
        '<div class="hist-plot">'
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {left} {height}" '
        f'class="hist-axis" aria-hidden="true" font-family="{FONT}" font-size="11">',
        *_y_axis(top, bottom, left, right, axis, grid=False),
        '</svg><div class="hist-scroll">',
    ]
    parts += _open(width, height, label, x=left)
    parts += _y_axis(top, bottom, left, right, axis, labels=False)
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
    parts.append("</svg></div></div>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated label is escaped
