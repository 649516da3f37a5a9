"""Server-rendered SVG charts: no script, no library, styled by presentation attributes
(the light palette) and classes (``axis``, ``grid``, ``s-N`` per series) the stylesheet
uses to recolour them in dark mode.

The drawing is 360 units wide, about a phone's width, so a 12-unit label is about 12 px on
a phone and a little larger on a desktop (the page lays charts two to a row there): labels
stay readable at both widths. Legends are HTML beside the chart (``legend``), so long
client names wrap instead of running off the drawing; their colours are the palette's,
by class (``swatch-N`` in the stylesheet, since the page's CSP allows no inline style).

Every text is escaped; each chart carries a ``<title>`` and ``<desc>`` and the page shows
the same numbers in a table, so the charts are not the only way to read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from math import ceil
from typing import Final

from markupsafe import Markup

WIDTH: Final = 360
HEIGHT: Final = 200
LEFT: Final = 50
RIGHT: Final = 8
TOP: Final = 12
BOTTOM: Final = 26
FONT: Final = 12
# Day labels shown at most: 14 days get every other one.
MAX_X_LABELS: Final = 7
# Distinguishable colours, each at least 3:1 against white (WCAG non-text contrast);
# console.css has the same list as .swatch-0 .. .swatch-6.
PALETTE: Final = ("#1d4ed8", "#b45309", "#047857", "#9333ea", "#be123c", "#0e7490", "#4b5563")
# Refusal reasons longer than this are cut in the drawing (whole in its title and table).
MAX_BAR_LABEL: Final = 18


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    values: Sequence[float]


def legend(names: Sequence[str]) -> list[tuple[str, str]]:
    """(name, swatch class) of each series, in the charts' colour order."""
    return [(name, f"swatch-{index % len(PALETTE)}") for index, name in enumerate(names)]


def _open(chart_id: str, title: str, description: str, height: int = HEIGHT) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'class="chart" role="img" id="{escape(chart_id)}" '
        f'aria-labelledby="{escape(chart_id)}-title {escape(chart_id)}-desc">',
        f'<title id="{escape(chart_id)}-title">{escape(title)}</title>',
        f'<desc id="{escape(chart_id)}-desc">{escape(description)}</desc>',
    ]


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = FONT) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
        f'fill="#1f2937">{escape(text)}</text>'
    )


def _axes(top_value: float, unit: str, labels: Sequence[str]) -> list[str]:
    plot_h = HEIGHT - TOP - BOTTOM
    out = [
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" '
        'stroke="#6b7280" class="axis"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#6b7280" '
        'class="axis"/>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        if fraction:
            out.append(
                f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                'stroke="#e5e7eb" class="grid"/>'
            )
        out.append(_text(LEFT - 5, y + 4, f"{_number(top_value * fraction)}{unit}", "end"))
    step = max(1, ceil(len(labels) / MAX_X_LABELS))
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(labels))
    # Counted from the newest day, so today always has its label.
    for index, label in enumerate(labels):
        if (len(labels) - 1 - index) % step:
            continue
        out.append(_text(LEFT + slot * (index + 0.5), HEIGHT - BOTTOM + 15, label, "middle"))
    return out


def _series(number: int) -> str:
    """The class of a series' marks: the stylesheet recolours them in dark mode."""
    return f"s-{number % len(PALETTE)}"


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def empty(chart_id: str, title: str) -> Markup:
    parts = _open(chart_id, title, "No events recorded in this period.", 48)
    parts.append(_text(8, 28, "No events in this period.", size=12))
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
                f'fill="{PALETTE[number % len(PALETTE)]}" class="bar {_series(number)}">'
                f"<title>{escape(labels[index])} · {escape(one.name)}: {int(value)}</title></rect>"
            )
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
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2" '
                f'class="{_series(number)}"/>'
            )
        for x, y, value, label in points:
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}" '
                f'class="point {_series(number)}">'
                f"<title>{escape(label)} · {escape(one.name)}: {escape(_number(value))}"
                f"{escape(unit)}</title></circle>"
            )
    return Markup("\n".join([*parts, "</svg>"]))  # noqa: S704 (every text escaped above)


def horizontal_bars(
    chart_id: str,
    title: str,
    counts: Mapping[str, int],
    counted: tuple[str, str] = ("refusals", "reasons"),
) -> Markup:
    """One bar per category (e.g. refusals by reason), largest first; ``counted``: what
    the values and the categories are, for the description ("12 refusals in 3 reasons");
    a category of 0 is drawn as the thinnest bar."""
    if not counts:
        return empty(chart_id, title)
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    row_h = 22
    height = TOP + row_h * len(rows) + 4
    label_w = 122
    top = max(1, *(value for _, value in rows))
    total = sum(value for _, value in rows)
    values, categories = counted
    parts = _open(chart_id, title, f"{total} {values} in {len(rows)} {categories}.", height)
    for index, (name, value) in enumerate(rows):
        y = TOP + row_h * index
        width = (WIDTH - label_w - 40) * value / top
        shown = name if len(name) <= MAX_BAR_LABEL else name[: MAX_BAR_LABEL - 1] + "…"
        parts += [
            _text(label_w - 6, y + 12, shown, "end"),
            f'<rect x="{label_w}" y="{y + 2}" width="{max(width, 2):.1f}" height="14" '
            f'fill="{PALETTE[4]}" class="bar {_series(4)}"><title>{escape(name)}: {value}</title>'
            "</rect>",
            _text(label_w + max(width, 2) + 5, y + 12, str(value)),
        ]
    return Markup("\n".join([*parts, "</svg>"]))  # noqa: S704 (every text escaped above)
