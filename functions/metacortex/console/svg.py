"""A graph of memories drawn as an SVG picture on the server: no script, no style sheet.

Nodes are boxes labelled with the memory's summary (cut to ``LABEL_CHARS``); edges are
arrows from source to target labelled with the relation's type. The layout is rings:
the root in the middle (a memory's page) and each further hop on a wider ring; with no
root (a topic's graph) the connected memories stand on one ring. Colours are the page's
own (``currentColor``, the system colour ``Canvas``), so the picture follows the light
or dark scheme. The picture is one image to assistive technology (``role="img"``, its
``<title>`` and ``<desc>``); the pages list the same relations as text beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from markupsafe import Markup, escape

LABEL_CHARS: Final = 22
BOX_W: Final = 176
BOX_H: Final = 34
# Length of ring each node needs, and how far each ring is from the last, across and
# down (room for a box and an edge's label between rings).
_ARC: Final = 110.0
_STEP_X: Final = 300.0
_STEP_Y: Final = 110.0
_MARGIN: Final = 24.0
_FONT: Final = 13


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    label: str


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    type: str


def label(summary: str, limit: int = LABEL_CHARS) -> str:
    """The summary on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(summary.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def rings(nodes: Sequence[Node], edges: Sequence[Edge], root: str | None) -> list[list[str]]:
    """The nodes by ring: hops from ``root`` over edges either way (unreached nodes on
    the outer ring); without a root, every node on one ring."""
    ids = [node.id for node in nodes]
    if root is None or root not in ids:
        return [ids]
    around: dict[str, list[str]] = {node_id: [] for node_id in ids}
    for edge in edges:
        if edge.source in around and edge.target in around:
            around[edge.source].append(edge.target)
            around[edge.target].append(edge.source)
    placed = {root}
    layers = [[root]]
    while True:
        following: list[str] = []
        for node_id in layers[-1]:
            for other in around[node_id]:
                if other not in placed:
                    placed.add(other)
                    following.append(other)
        if not following:
            break
        layers.append(following)
    rest = [node_id for node_id in ids if node_id not in placed]
    if rest:
        layers.append(rest)
    return layers


def positions(layers: Sequence[Sequence[str]]) -> dict[str, tuple[float, float]]:
    """Centres on concentric ellipses around (0, 0) (wider than tall, as the boxes are),
    each ring at least a step out from the last and long enough for its nodes; a lone
    node of a first ring at the centre."""
    placed: dict[str, tuple[float, float]] = {}
    rx = ry = 0.0
    ring = 0
    for index, layer in enumerate(layers):
        if index == 0 and len(layer) == 1:
            placed[layer[0]] = (0.0, 0.0)
            continue
        rx, ry = rx + _STEP_X, ry + _STEP_Y
        perimeter = 2 * math.pi * math.sqrt((rx * rx + ry * ry) / 2)
        grow = max(1.0, len(layer) * _ARC / perimeter)
        rx, ry = rx * grow, ry * grow
        turn = ring * math.pi / len(layer)  # each ring offset from the last: fewer crossings
        ring += 1
        for position, node_id in enumerate(layer):
            angle = turn + 2 * math.pi * position / len(layer) - math.pi / 2
            placed[node_id] = (rx * math.cos(angle), ry * math.sin(angle))
    return placed


def _border(centre: tuple[float, float], towards: tuple[float, float]) -> tuple[float, float]:
    """Where the segment from a box's centre towards a point leaves the box."""
    dx, dy = towards[0] - centre[0], towards[1] - centre[1]
    if dx == 0 and dy == 0:
        return centre
    scale = min(
        (BOX_W / 2) / abs(dx) if dx else math.inf,
        (BOX_H / 2) / abs(dy) if dy else math.inf,
    )
    return centre[0] + dx * scale, centre[1] + dy * scale


def _n(value: float) -> str:
    return f"{value:.1f}"


def picture(
    nodes: Sequence[Node],
    edges: Sequence[Edge],
    *,
    root: str | None,
    title: str,
    description: str,
    ident: str = "graph",
) -> Markup:
    """The ``<svg>`` of ``nodes`` and ``edges`` (edges to a node not drawn are left out);
    ``ident`` prefixes the ids it defines (its title, description, arrow head)."""
    drawn = {node.id for node in nodes}
    shown = [e for e in edges if e.source in drawn and e.target in drawn and e.source != e.target]
    at = positions(rings(nodes, shown, root))
    xs = [x for x, _ in at.values()] or [0.0]
    ys = [y for _, y in at.values()] or [0.0]
    left = min(xs) - BOX_W / 2 - _MARGIN
    top = min(ys) - BOX_H / 2 - _MARGIN
    width = max(xs) - min(xs) + BOX_W + 2 * _MARGIN
    height = max(ys) - min(ys) + BOX_H + 2 * _MARGIN
    head = f"{ident}-arrow"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="graph" id="{ident}" '
        f'aria-labelledby="{ident}-title {ident}-desc" width="100%" '
        f'viewBox="{_n(left)} {_n(top)} {_n(width)} {_n(height)}" '
        f'font-family="system-ui, sans-serif" font-size="{_FONT}">',
        f'<title id="{ident}-title">{escape(title)}</title>',
        f'<desc id="{ident}-desc">{escape(description)}</desc>',
        f'<defs><marker id="{head}" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="8" markerHeight="8" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="currentColor"/></marker></defs>',
        '<g class="edges">',
    ]
    for edge in shown:
        start = _border(at[edge.source], at[edge.target])
        end = _border(at[edge.target], at[edge.source])
        middle = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
        text_w = len(edge.type) * _FONT * 0.6 + 8
        parts.append(
            f'<g class="edge" data-source="{escape(edge.source)}" '
            f'data-target="{escape(edge.target)}" data-type="{escape(edge.type)}">'
            f'<line x1="{_n(start[0])}" y1="{_n(start[1])}" x2="{_n(end[0])}" '
            f'y2="{_n(end[1])}" stroke="currentColor" stroke-width="1.5" '
            f'stroke-opacity="0.7" marker-end="url(#{head})"/>'
            f'<rect x="{_n(middle[0] - text_w / 2)}" y="{_n(middle[1] - 9)}" '
            f'width="{_n(text_w)}" height="18" rx="4" fill="Canvas"/>'
            f'<text x="{_n(middle[0])}" y="{_n(middle[1] + 4)}" text-anchor="middle" '
            f'fill="currentColor" font-style="italic">{escape(edge.type)}</text></g>'
        )
    parts.append('</g><g class="nodes">')
    for node in nodes:
        x, y = at[node.id]
        is_root = node.id == root
        weight = ' font-weight="bold"' if is_root else ""
        parts.append(
            f'<g class="node{" root" if is_root else ""}" data-id="{escape(node.id)}">'
            f'<rect x="{_n(x - BOX_W / 2)}" y="{_n(y - BOX_H / 2)}" width="{BOX_W}" '
            f'height="{BOX_H}" rx="6" fill="Canvas" stroke="currentColor" '
            f'stroke-width="{3 if is_root else 1.2}"/>'
            f'<text x="{_n(x)}" y="{_n(y + 4.5)}" text-anchor="middle" '
            f'fill="currentColor"{weight}>'
            f"{escape(label(node.label))}</text></g>"
        )
    parts.append("</g></svg>")
    return Markup("".join(parts))  # noqa: S704 (every text and id in it went through escape)
