"""Turn an engine's view into what a board template draws. Knows nothing the view does not."""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from typing import Any

from .engines.base import JSON

SEAT_COLOURS = ["#d62828", "#1d4ed8", "#15803d", "#a21caf", "#c2410c", "#0e7490"]
ARROW_GLYPHS = {"<": "←", ">": "→", "^": "↑", "v": "↓"}
CELL = 44  # pixels per cell in the SVG board
MARGIN = 28  # room for the column letters and row numbers


def column_letter(col: int) -> str:
    return string.ascii_lowercase[col]


@dataclass(frozen=True)
class Cell:
    row: int
    col: int
    x: int
    y: int
    glyph: str
    on_path: bool
    name: str


def cornmaze_board(view: JSON) -> dict[str, Any]:
    size: int = view["size"]
    last = view.get("last") or {}
    path = [tuple(p) for p in last.get("path") or []]
    on_path = set(path)
    cells = [
        Cell(
            row=r,
            col=c,
            x=MARGIN + c * CELL,
            y=MARGIN + r * CELL,
            glyph=ARROW_GLYPHS.get(view["arrows"][r][c], "?"),
            on_path=(r, c) in on_path,
            name=f"{column_letter(c)}{r + 1}",
        )
        for r in range(size)
        for c in range(size)
    ]
    half = CELL // 2
    markers = []
    occupied: dict[tuple[int, int], int] = {}
    for seat, pos in enumerate(view["markers"]):
        if pos is None:
            continue
        r, c = pos
        n = occupied.get((r, c), 0)
        occupied[(r, c)] = n + 1
        # Markers sharing a cell are spread a little so each stays visible.
        dx, dy = [(0, 0), (10, 10), (-10, 10), (10, -10), (-10, -10), (0, 12)][n % 6]
        markers.append(
            {
                "seat": seat,
                "colour": SEAT_COLOURS[seat % len(SEAT_COLOURS)],
                "cx": MARGIN + c * CELL + half + dx,
                "cy": MARGIN + r * CELL + half + dy,
                "name": f"{column_letter(c)}{r + 1}",
            }
        )
    path_points = " ".join(
        f"{MARGIN + c * CELL + half},{MARGIN + r * CELL + half}" for r, c in path
    )
    side = MARGIN + size * CELL + 4
    blocked = set(view.get("blocked", []))
    blocked_after = {
        column_letter(int(first)): [column_letter(c) for c in cols]
        for first, cols in (view.get("blocked_after") or {}).items()
    }
    return {
        "blocked_after_json": json.dumps(blocked_after),
        "size": size,
        "cells": cells,
        "cell": CELL,
        "markers": markers,
        "path_points": path_points,
        "path_colour": SEAT_COLOURS[last["seat"] % len(SEAT_COLOURS)] if last else "",
        "side": side,
        "columns": [
            {
                "index": c,
                "letter": column_letter(c),
                "x": MARGIN + c * CELL + half,
                "blocked": c in blocked,
            }
            for c in range(size)
        ],
        "rows": [{"number": r + 1, "y": MARGIN + r * CELL + half + 5} for r in range(size)],
        "margin": MARGIN,
    }


def cornmaze_notation_path(path: list[list[int]]) -> str:
    return " ".join(f"{column_letter(c)}{r + 1}" for r, c in path)
