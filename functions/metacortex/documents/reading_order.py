"""Reading order of a page's line fragments: columns by whitespace channels (an XY cut).

The reader gives fragments: runs of characters on one baseline. A justified line
with wide word gaps can come in several fragments, and generators draw columns
in any order, so neither the reader's grouping nor the drawing order can be
trusted (bench/pdf_extract.py, the LoCoMo logs in bench/locomo_documents.py).

The page is cut recursively:
1. a vertical channel (an x range no fragment of the region touches) with text of
   some width on both sides splits the region into left, then right;
2. otherwise the region is cut into bands at the heights no fragment covers, and
   consecutive bands that share a channel are taken together as one multi-column
   region (a blank line in one column does not end the columns), which step 1
   then splits. A band that shares no channel (a title, an abstract across the
   page) stays where it is;
3. what is left is read row by row, left to right.

Both sides of a cut must be at least ``MIN_SIDE_SHARE`` of the region's width, so
a narrow label column ("Name:", "Date:" beside their values) is read row by row,
and the right side must have a left edge (two lines or more starting at one x):
word gaps of two justified lines that happen to line up are no column gutter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Final

from metacortex.documents.pdf_lines import Line

# The narrowest whitespace channel that separates columns, in points (LaTeX's column
# gap is 10 pt; word gaps of justified lines are rarely this wide on two rows at once).
MIN_GUTTER: Final = 7.0
MIN_SIDE_SHARE: Final = 0.2
# A column's left edge: lines starting within this many points of each other.
EDGE_TOLERANCE: Final = 2.0
MAX_DEPTH: Final = 12

Interval = tuple[float, float]


@dataclass(slots=True)
class _Band:
    lines: list[Line]
    gaps: list[Interval]  # channels across the whole region, edges included
    interior: list[Interval]  # channels with text on both sides


def _channels(
    lines: Sequence[Line], low: float, high: float
) -> tuple[list[Interval], list[Interval]]:
    """(every x range of at least MIN_GUTTER that no line covers, the ones with text on
    both sides), within [low, high]."""
    gaps: list[Interval] = []
    interior: list[Interval] = []
    cursor = low
    for line in sorted(lines, key=lambda item: item.x0):
        if line.x0 - cursor >= MIN_GUTTER:
            gaps.append((cursor, line.x0))
            if cursor > low:
                interior.append((cursor, line.x0))
        cursor = max(cursor, line.x1)
    if high - cursor >= MIN_GUTTER:
        gaps.append((cursor, high))
    return gaps, interior


def _intersect(first: list[Interval], second: list[Interval]) -> list[Interval]:
    found = []
    for a0, a1 in first:
        for b0, b1 in second:
            low, high = max(a0, b0), min(a1, b1)
            if high - low >= MIN_GUTTER:
                found.append((low, high))
    return found


def _split(lines: Sequence[Line]) -> tuple[list[Line], list[Line]] | None:
    """Left and right of the widest interior channel whose sides are both wide."""
    low = min(line.x0 for line in lines)
    high = max(line.x1 for line in lines)
    width = high - low
    _, interior = _channels(lines, low, high)
    for start, end in sorted(interior, key=lambda gap: gap[0] - gap[1]):
        left = [line for line in lines if line.x1 <= start]
        right = [line for line in lines if line.x0 >= end]
        left_width = max(line.x1 for line in left) - low
        right_width = high - min(line.x0 for line in right)
        starts = sorted(line.x0 for line in right)
        edged = any(b - a <= EDGE_TOLERANCE for a, b in pairwise(starts))
        if min(left_width, right_width) >= MIN_SIDE_SHARE * width and edged:
            return left, right
    return None


def _bands(lines: Sequence[Line], low: float, high: float) -> list[_Band]:
    bands: list[_Band] = []
    current: list[Line] = []
    bottom = float("-inf")
    for line in sorted(lines, key=lambda item: (item.top, item.x0)):
        if current and line.top >= bottom - 0.5:
            bands.append(_Band(current, *_channels(current, low, high)))
            current = []
        current.append(line)
        bottom = line.bottom if len(current) == 1 else max(bottom, line.bottom)
    if current:
        bands.append(_Band(current, *_channels(current, low, high)))
    return bands


def _regions(bands: list[_Band]) -> list[tuple[list[Line], bool]]:
    """Consecutive bands grouped: (lines, whether they share a column channel).

    A column region starts at a band with text on both sides of a channel and takes
    every following band that leaves the channel free; then the bands just before it
    that leave it free too (one column's last line on the previous row, the other
    column's heading a little higher than its neighbour's first line) join it.
    """
    groups: list[tuple[list[_Band], list[Interval]]] = []
    for band in bands:
        if groups and groups[-1][1]:
            shared = _intersect(groups[-1][1], band.gaps)
            if shared:
                groups[-1][0].append(band)
                groups[-1] = (groups[-1][0], shared)
                continue
        groups.append(([band], band.interior))
    index = len(groups) - 1
    while index > 0:
        members, channel = groups[index]
        before, before_channel = groups[index - 1]
        shared = _intersect(channel, before[0].gaps) if channel else []
        if shared and not before_channel and len(before) == 1:
            groups[index - 1] = ([before[0], *members], shared)
            del groups[index]
        index -= 1
    return [
        ([line for band in members for line in band.lines], bool(channel))
        for members, channel in groups
    ]


def rows(lines: Sequence[Line]) -> list[Line]:
    """Fragments read row by row, left to right, each row joined into one line."""
    ordered: list[list[Line]] = []
    for line in sorted(lines, key=lambda item: (item.top, item.x0)):
        middle = (line.top + line.bottom) / 2
        row = ordered[-1] if ordered else None
        if row is not None and row[0].top <= middle <= row[0].bottom:
            row.append(line)
        else:
            ordered.append([line])
    joined = []
    for row in ordered:
        row.sort(key=lambda item: item.x0)
        first = row[0]
        joined.append(
            replace(
                first,
                text=" ".join(part.text.strip() for part in row if part.text.strip()),
                x1=max(part.x1 for part in row),
                top=min(part.top for part in row),
                bottom=max(part.bottom for part in row),
            )
        )
    return joined


def reading_order(lines: Sequence[Line], depth: int = 0) -> list[Line]:
    """The page's fragments as whole lines in reading order."""
    if len(lines) <= 1 or depth > MAX_DEPTH:
        return rows(lines)
    split = _split(lines)
    if split is not None:
        left, right = split
        return reading_order(left, depth + 1) + reading_order(right, depth + 1)
    low = min(line.x0 for line in lines)
    high = max(line.x1 for line in lines)
    regions = _regions(_bands(lines, low, high))
    if len(regions) == 1:
        return rows(lines)
    ordered: list[Line] = []
    for region, columns in regions:
        ordered += reading_order(region, depth + 1) if columns else rows(region)
    return ordered
