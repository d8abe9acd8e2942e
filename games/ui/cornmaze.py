"""Corn maze on the page: an SVG board of arrows and markers, and a form of two columns."""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from typing import Any

from django import forms
from django.http import QueryDict

from ..bots import levels
from ..engines.base import JSON
from ..inputs import AsciiIntegerField
from ..models import Clock
from . import CreateForm, MoveInputError, colour

ARROW_GLYPHS = {"<": "←", ">": "→", "^": "↑", "v": "↓"}
CELL = 44  # pixels per cell in the SVG board
MARGIN = 28  # room for the column letters and row numbers
PERSON = "person"
MAX_SEATS = 6


def column_letter(col: int) -> str:
    return string.ascii_lowercase[col]


class CornmazeCreateForm(CreateForm):
    size = AsciiIntegerField(min_value=6, max_value=12, initial=8, label="Board size")
    seats = AsciiIntegerField(min_value=2, max_value=MAX_SEATS, initial=2, label="Players")
    clock = forms.ChoiceField(
        choices=[(Clock.DAYS_3, "3 days per move"), (Clock.DAYS_30, "30 days per move")],
        initial=Clock.DAYS_3,
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [(PERSON, "a person (open seat)")] + [
            (level, f"bot: {level}") for level in levels("cornmaze")
        ]
        for i in range(1, MAX_SEATS):
            self.fields[f"seat_{i}"] = forms.ChoiceField(
                choices=choices, initial=PERSON, required=False, label=f"Seat {i + 1}"
            )

    def create_args(self) -> tuple[JSON, str, list[str]]:
        seats: int = self.cleaned_data["seats"]
        bots = [""] + [
            ""
            if (self.cleaned_data.get(f"seat_{i}") or PERSON) == PERSON
            else self.cleaned_data[f"seat_{i}"]
            for i in range(1, seats)
        ]
        return {"size": self.cleaned_data["size"]}, self.cleaned_data["clock"], bots


@dataclass(frozen=True)
class Cell:
    row: int
    col: int
    x: int
    y: int
    glyph: str
    on_path: bool
    name: str


class UI:
    slug = "cornmaze"
    create_form: type[CreateForm] = CornmazeCreateForm
    board_template = "games/boards/cornmaze.html"
    move_template = "games/forms/cornmaze_move.html"

    def board(self, view: JSON, viewer: int | None, draft: JSON | None = None) -> dict[str, Any]:
        size: int = view["size"]
        last = view.get("last") or {}
        path = [tuple(p) for p in last.get("path") or []]
        on_path = set(path)
        half = CELL // 2
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
        markers = []
        occupied: dict[tuple[int, int], int] = {}
        for seat, pos in enumerate(view["markers"]):
            if pos is None:
                continue
            r, c = pos
            n = occupied.get((r, c), 0)
            occupied[(r, c)] = n + 1
            # Markers sharing a cell are spread a little so that each stays visible.
            dx, dy = [(0, 0), (10, 10), (-10, 10), (10, -10), (-10, -10), (0, 12)][n % 6]
            markers.append(
                {
                    "seat": seat,
                    "colour": colour(seat),
                    "cx": MARGIN + c * CELL + half + dx,
                    "cy": MARGIN + r * CELL + half + dy,
                    "name": f"{column_letter(c)}{r + 1}",
                }
            )
        blocked = set(view.get("blocked", []))
        blocked_after = {
            column_letter(int(first)): [column_letter(c) for c in cols]
            for first, cols in (view.get("blocked_after") or {}).items()
        }
        return {
            "size": size,
            "cells": cells,
            "cell": CELL,
            "half": half,
            "markers": markers,
            "path_points": " ".join(
                f"{MARGIN + c * CELL + half},{MARGIN + r * CELL + half}" for r, c in path
            ),
            "path_colour": colour(last["seat"]) if last else "",
            "side": MARGIN + size * CELL + 4,
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
            "blocked_after_json": json.dumps(blocked_after),
        }

    def parse_move(self, data: QueryDict, view: JSON) -> JSON:
        size: int = view["size"]
        last = column_letter(size - 1)
        shifts = []
        for name, label in (("first", "first"), ("second", "second")):
            letter = (data.get(name) or "").strip().lower()
            if not letter:
                raise MoveInputError(f"Choose a column for the {label} shift.")
            if len(letter) != 1 or not "a" <= letter <= last:
                raise MoveInputError(f"Choose a column from a to {last} for the {label} shift.")
            shifts.append(ord(letter) - ord("a"))
        return {"shifts": shifts}

    def draft_update(self, data: QueryDict, view: JSON, draft: JSON | None) -> JSON:
        # Two clicks and a button: nothing to keep between requests.
        return {}
