"""Server-rendered SVG charts: no script, no library, styled by presentation attributes.

Every text is escaped; each chart carries a ``<title>`` and ``<desc>`` and the page
shows the same numbers in a table, so the charts are not the only way to read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

from markupsafe import Markup

WIDTH: Final = 640
HEIGHT: Final = 240
LEFT: Final = 48
RIGHT: Final = 16
TOP: Final = 16
BOTTOM: Final = 40
# Distinguishable colours, each at least 3:1 against white (WCAG non-text contrast).
PALETTE: Final = ("#1d4ed8", "#b45309", "#047857", "#9333ea", "#be123c", "#0e7490", "#4b5563")


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    values: Sequence[float]


def _open(chart_id: str, title: str, description: str, height: int = HEIGHT) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'class="chart" role="img" id="{escape(chart_id)}" '
        f'aria-labelledby="{escape(chart_id)}-title {escape(chart_id)}-desc">',
        f'<title id="{escape(chart_id)}-title">{escape(title)}</title>',
        f'<desc id="{escape(chart_id)}-desc">{escape(description)}</desc>',
    ]


def _axes(top_value: float, unit: str, labels: Sequence[str]) -> list[str]:
    plot_h = HEIGHT - TOP - BOTTOM
    out = [
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" '
        'stroke="#6b7280"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#6b7280"/>',
    ]
    for fraction in (0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#e5e7eb"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#374151">{escape(_number(top_value * fraction))}{escape(unit)}</text>'
        )
    step = max(1, len(labels) // 8)
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(labels))
    for index, label in enumerate(labels):
        if index % step:
            continue
        x = LEFT + slot * (index + 0.5)
        out.append(
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11" '
            f'fill="#374151">{escape(label)}</text>'
        )
    return out


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def _legend(names: Sequence[str], y: int) -> list[str]:
    out: list[str] = []
    x = LEFT
    for index, name in enumerate(names):
        colour = PALETTE[index % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{colour}"/>')
        out.append(
            f'<text x="{x + 14}" y="{y}" font-size="11" fill="#1f2937">{escape(name)}</text>'
        )
        x += 24 + 7 * len(name)
    return out


def empty(chart_id: str, title: str) -> Markup:
    parts = _open(chart_id, title, "No events recorded in this period.", 60)
    parts.append(
        '<text x="16" y="36" font-size="13" fill="#374151">No events in this period.</text>'
    )
    return Markup("\n".join([*parts, "</svg>"]))  # noqa: S704 (every text escaped above)


def stacked_bars(
    chart_id: str, title: str, labels: Sequence[str], series: Sequence[Series]
) -> Markup:
    """One bar per label, stacked by series (e.g. tool calls per day by client)."""
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    if not labels or max(totals, default=0) <= 0:
        return empty(chart_id, title)
    top = float(max(totals))
    plot_h = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / len(labels)
    bar = max(2.0, slot * 0.7)
    description = f"{int(sum(totals))} in total over {len(labels)} days; highest {int(top)}."
    parts = _open(chart_id, title, description) + _axes(top, "", labels)
    for index in range(len(labels)):
        base = float(TOP + plot_h)
        for number, one in enumerate(series):
            value = one.values[index]
            if value <= 0:
                continue
            height = plot_h * value / top
            base -= height
            x = LEFT + slot * index + (slot - bar) / 2
            parts.append(
                f'<rect x="{x:.1f}" y="{base:.1f}" width="{bar:.1f}" height="{height:.1f}" '
                f'fill="{PALETTE[number % len(PALETTE)]}" class="bar">'
                f"<title>{escape(labels[index])} · {escape(one.name)}: {int(value)}</title></rect>"
            )
    parts += _legend([s.name for s in series], HEIGHT - 6)
    return Markup("\n".join([*parts, "</svg>"]))  # noqa: S704 (every text escaped above)


def lines(
    chart_id: str,
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    unit: str = "",
    top: float | None = None,
) -> Markup:
    """One line per series over the labels; a missing day is a value < 0 (not drawn)."""
    drawn = [v for s in series for v in s.values if v >= 0]
    if not labels or not drawn:
        return empty(chart_id, title)
    high = top if top is not None else max(max(drawn), 1e-9)
    plot_h = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / len(labels)
    description = "; ".join(
        f"{s.name}: latest {_number(next((v for v in reversed(s.values) if v >= 0), 0))}{unit}"
        for s in series
    )
    parts = _open(chart_id, title, description) + _axes(high, unit, labels)
    for number, one in enumerate(series):
        colour = PALETTE[number % len(PALETTE)]
        points = [
            (LEFT + slot * (i + 0.5), TOP + plot_h * (1 - min(v, high) / high), v, labels[i])
            for i, v in enumerate(one.values)
            if v >= 0
        ]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in points)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        for x, y, value, label in points:
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}" class="point">'
                f"<title>{escape(label)} · {escape(one.name)}: {escape(_number(value))}"
                f"{escape(unit)}</title></circle>"
            )
    parts += _legend([s.name for s in series], HEIGHT - 6)
    return Markup("\n".join([*parts, "</svg>"]))  # noqa: S704 (every text escaped above)


def horizontal_bars(chart_id: str, title: str, counts: Mapping[str, int]) -> Markup:
    """One bar per category (e.g. refusals by reason), largest first."""
    if not counts:
        return empty(chart_id, title)
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    row_h = 26
    height = TOP + row_h * len(rows) + 8
    label_w = 170
    top = max(value for _, value in rows)
    total = sum(value for _, value in rows)
    parts = _open(chart_id, title, f"{total} refusals in {len(rows)} reasons.", height)
    for index, (name, value) in enumerate(rows):
        y = TOP + row_h * index
        width = (WIDTH - label_w - 60) * value / top
        parts += [
            f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end" font-size="12" '
            f'fill="#1f2937">{escape(name)}</text>',
            f'<rect x="{label_w}" y="{y + 3}" width="{max(width, 2):.1f}" height="16" '
            f'fill="{PALETTE[4]}" class="bar"><title>{escape(name)}: {value}</title></rect>',
            f'<text x="{label_w + max(width, 2) + 6:.1f}" y="{y + 15}" font-size="12" '
            f'fill="#1f2937">{value}</text>',
        ]
    return Markup("\n".join([*parts, "</svg>"]))  # noqa: S704 (every text escaped above)
