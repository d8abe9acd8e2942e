"""Corn maze on the page: an SVG board of arrows and markers, and a form of two columns."""

from __future__ import annotations

import functools
import json
import string
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import Any, NamedTuple

from django import forms
from django.http import QueryDict
from django.utils.safestring import SafeString, mark_safe

from games.bots import levels
from games.engines import cornmaze as rules
from games.engines.base import JSON
from games.models import Clock
from games.ui import MARKS, CreateForm, GameUI, MoveInputError, colour
from games.web.inputs import AsciiIntegerField

ARROW_GLYPHS = {"<": "←", ">": "→", "^": "↑", "v": "↓"}
ARROW_WORDS = {"<": "left", ">": "right", "^": "up", "v": "down"}
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


class Cell(NamedTuple):
    """A board cell as drawn, row by row (a tuple: a board makes up to 144 of them each time);
    its name and place come from its index (`_cell_places`)."""

    glyph: str
    words: str  # the arrow as the board's table says it
    step: int | None  # the cell's place on the path drawn (1 is where the turn starts)
    markers: tuple[int, ...]  # the seats whose marker stands here
    new: bool  # an arrow that drops in when the move is played: not known yet


@dataclass(frozen=True)
class Preview:
    """Where the chosen shifts would take the viewer's marker, from what the viewer sees: the
    arrows that drop in are drawn when the move is played, so they are not known here (`?`),
    and the path stops where it meets one."""

    shifts: list[int]
    arrows: list[str]  # the board after the shifts, UNKNOWN for each new arrow
    markers: list[list[int] | None]
    path: list[list[int]]
    ends: list[tuple[float, list[int]]]  # where it may end, each new arrow equally likely


UNKNOWN = "?"


def preview(view: JSON, seat: int, shifts: list[int]) -> Preview:
    size: int = view["size"]
    grid = [list(row) for row in view["arrows"]]
    markers: list[list[int] | None] = [list(m) if m else None for m in view["markers"]]
    for col in shifts:
        for row in range(size - 1, 0, -1):
            grid[row][col] = grid[row - 1][col]
        grid[0][col] = UNKNOWN
        for marker in markers:
            if marker is not None and marker[1] == col:
                marker[0] = (marker[0] + 1) % size
    mine = markers[seat]
    assert mine is not None
    return Preview(
        shifts=list(shifts),
        arrows=["".join(row) for row in grid],
        markers=markers,
        path=rules.walk(grid, mine),
        ends=rules.simulate(view, seat, shifts),
    )


def shifts_problem(view: JSON, shifts: list[int]) -> str:
    """Why this pair of shifts may not be played now ("" when it may), as the engine says it."""
    after = rules.blocked_after(view["markers"], view["size"])
    first, second = shifts
    if str(first) not in after:
        return (
            f"Column {column_letter(first)} cannot be shifted: a marker stands in its bottom row."
        )
    if second in after[str(first)]:
        return (
            f"Column {column_letter(second)} cannot be shifted second: after the first shift, "
            "a marker stands in its bottom row."
        )
    return ""


def chance(probability: float) -> str:
    if probability >= 1:
        return "for sure"
    quarters = {0.25: "1 chance in 4", 0.5: "1 chance in 2", 0.75: "3 chances in 4"}
    return quarters.get(probability, f"{probability:.0%}")


def path_d(path: list[tuple[int, int]], size: int) -> str:
    """The SVG path through these (row, column) cells, centre to centre. Where it wraps round
    (down off the bottom row to the top, or up off the top to the bottom) it leaves by one edge
    and comes back in by the other, rather than crossing the board."""
    half = CELL // 2
    top, bottom = MARGIN, MARGIN + size * CELL

    def x(c: int) -> int:
        return MARGIN + c * CELL + half

    def y(r: int) -> int:
        return MARGIN + r * CELL + half

    parts = []
    for i, (r, c) in enumerate(path):
        if i == 0:
            parts.append(f"M{x(c)},{y(r)}")
            continue
        before = path[i - 1][0]
        if abs(r - before) > 1:
            out_edge, in_edge = (bottom, top) if r < before else (top, bottom)
            parts.append(f"L{x(c)},{out_edge} M{x(c)},{in_edge}")
        parts.append(f"L{x(c)},{y(r)}")
    return " ".join(parts)


def grid_svg(columns: list[dict[str, Any]], rows: list[dict[str, Any]], cells: list[Cell]) -> str:
    """The board's labels and cells in SVG, drawn here rather than by a template loop: a page
    and a move POST draw 36 to 144 cells. Every value is the site's own (numbers, letters,
    arrows), so there is nothing to escape."""
    parts = [
        f'<text class="col-label{" blocked" if col["blocked"] else ""}'
        f'{" shifted" if col["shifted"] else ""}" x="{col["x"]}" y="18"'
        f' text-anchor="middle">{col["letter"]}</text>'
        for col in columns
    ]
    parts.append("\n  ")
    parts += [
        f'<text class="row-label" x="14" y="{row["y"]}" text-anchor="middle">{row["number"]}</text>'
        for row in rows
    ]
    parts.append("\n  ")
    parts += [
        f'<g class="cell{" on-path" if c.step else ""}{" new" if c.new else ""}{place}{c.glyph}'
        "</text></g>"
        for c, place in zip(cells, _cell_places(len(rows)), strict=True)
    ]
    return mark_safe("".join(parts))  # noqa: S308 - the site's own numbers and letters only


@functools.cache
def _cell_places(size: int) -> list[str]:
    """Each cell's SVG between its classes and its arrow, row by row: its name and place, the
    same on every board of its size (made once, not for every cell of every board drawn)."""
    half = CELL // 2
    return [
        f'" data-cell="{column_letter(c)}{r + 1}"><rect x="{x}" y="{y}" width="{CELL}"'
        f' height="{CELL}"></rect><text x="{x + half}" y="{y + half + 7}" text-anchor="middle">'
        for r in range(size)
        for c in range(size)
        for x, y in [(MARGIN + c * CELL, MARGIN + r * CELL)]
    ]


def table_rows(rows: list[dict[str, Any]], name: Callable[[int], str]) -> SafeString:
    """The board's table for a screen reader, row by row: each cell's arrow, the markers on
    it (their players' names, escaped) and its step on the path drawn."""
    out = []
    for row in rows:
        out.append(f'<tr><th scope="row">{row["number"]}</th>')
        for c in row["cells"]:
            markers = (
                "".join(f"; {escape(name(seat))}'s marker" for seat in c.markers)
                if c.markers
                else ""
            )
            step = f"; path step {c.step}" if c.step else ""
            out.append(f"<td>{c.words}{markers}{step}</td>")
        out.append("</tr>\n  ")
    return mark_safe("".join(out))  # noqa: S308 - names escaped above


def board_html(board: dict[str, Any], name: Callable[[int], str]) -> SafeString:
    """The board (`UI.board`'s dict): the picture, and for a screen reader its table and
    caption. Drawn here rather than by a template: a move's answer draws it for every move.
    The players' names are escaped; every other value is the site's own, escaped all the same
    where it is text."""
    preview = board["preview"]
    side = board["side"]
    path_d = board["path_d"]
    previewing = ' class="previewing"' if preview else ""
    out = [
        '<figure class="board" id="board">\n\n'
        f'<svg viewBox="0 0 {side} {side}" width="{side}" height="{side}" aria-hidden="true"'
        f"{previewing}>\n  {board['grid_svg']}\n  "
    ]
    if path_d:
        out.append(
            f'<path class="path{" preview" if preview else ""}"'
            f' id="{"preview-path" if preview else "last-path"}"'
            f' data-colour="{board["path_colour"]}" d="{path_d}"></path>'
        )
    out.append("\n  ")
    out += [
        f'<path class="marker" data-colour="{m["colour"]}" data-seat="{m["seat"]}"'
        f' data-cell="{m["name"]}" d="{m["shape"]}" transform="translate({m["cx"]} {m["cy"]})">'
        f"<title>{escape(name(m['seat']))} ({m['shape_name']}) on {m['name']}</title></path>"
        for m in board["markers"]
    ]
    out.append(
        '\n</svg>\n<div class="visually-hidden"><table class="board-table" id="board-table">\n'
        "  <caption>The board, row by row from the top: the arrow in each cell"
    )
    if board["markers"]:
        out.append(", the markers")
    if preview:
        out.append(f", and the path your marker would take after shifting {preview['shifts']}")
    elif path_d:
        out.append(", and the last turn's path")
    out.append(".</caption>\n  <thead><tr><td></td>")
    out += [f'<th scope="col">{col["letter"]}</th>' for col in board["columns"]]
    out.append("</tr></thead>\n  <tbody>\n  ")
    out.append(table_rows(board["rows"], name))
    out.append('\n  </tbody>\n</table></div>\n<figcaption id="board-caption">\n  ')
    if preview:
        out.append(_preview_caption(preview))
    elif board["preview_problem"]:
        out.append(f"{escape(board['preview_problem'])}\n  ")
    elif path_d:
        after = f" (after {board['last_shifts']})" if board["last_shifts"] else ""
        out.append(f"The last turn's path{after} is drawn in its player's colour.\n  ")
    out.append(
        "\n  Columns are letters from the left, rows numbers from the top.\n"
        "</figcaption>\n</figure>"
    )
    return mark_safe("".join(out))  # noqa: S308 - names escaped above


def _preview_caption(preview: dict[str, Any]) -> str:
    """The board's caption for a preview (`UI._preview_words`): where the marker would go and
    where it may end."""
    if preview["stopped"]:
        goes = (
            f"as far as {preview['end']}, onto a new arrow (?), which drops in at random"
            " when you play."
        )
    else:
        goes = f"to {preview['end']}."
    ends = preview["ends"]
    if len(ends) > 1 or preview["stopped"]:
        where = "; ".join(
            f"{e['cell']}{' (the right edge: a win)' if e['wins'] else ''}, {e['chance']}"
            for e in ends
        )
        may_end = f"Where it may end: {where}."
    elif ends and ends[0]["wins"]:
        may_end = "That is the right edge: a win."
    else:
        may_end = ""
    return (
        f"\n    <strong>Preview of {preview['shifts']}:</strong> your marker would go {goes}"
        f"\n    {may_end}\n    The board shows it after the shifts; the new arrows (?) are not"
        " known before you play.\n  "
    )


def column_choices_html(board: dict[str, Any], shift: str) -> SafeString:
    """The move form's radio buttons of one shift ("first" or "second"), a column each: a
    column that may not be shifted is greyed and disabled, described by the form's sentence
    that says why (#first-blocked, #second-blocked), the one chosen in the draft is checked
    unless it is one of those (as static/js/site.js unchecks it)."""
    chosen = board["chosen"].get(shift)
    described = f' aria-describedby="{shift}-blocked"'
    out = []
    for col in board["columns"]:
        letter = col["letter"]
        blocked = col["blocked"] if shift == "first" else col["blocked_second"]
        checked = chosen == letter and not blocked
        title = (
            f' title="Column {letter} cannot be shifted: a marker stands in its bottom row"'
            if blocked and shift == "first"
            else ""
        )
        out.append(
            f'\n      <label class="column-choice{" blocked" if blocked else ""}"{title}>\n'
            f'        <input type="radio" name="{shift}" id="{shift}-{letter}" value="{letter}"'
            f"{' disabled' if blocked else ''}{described if blocked else ''}"
            f"{' checked' if checked else ''} required>"
            f" {letter}</label>\n    "
        )
    return mark_safe("".join(out))  # noqa: S308 - the site's own letters only


class UI(GameUI):
    slug = "cornmaze"
    create_form: type[CreateForm] = CornmazeCreateForm
    board_template = "games/boards/cornmaze.html"
    move_template = "games/forms/cornmaze_move.html"

    def board(
        self,
        view: JSON,
        viewer: int | None,
        draft: JSON | None = None,
        *,
        yours: bool = True,
        game_over: bool = False,
    ) -> dict[str, Any]:
        size: int = view["size"]
        last = view.get("last") or {}
        chosen = self._chosen(view, viewer, draft)
        shown: Preview | None = None
        problem = ""
        first, second = chosen.get("first"), chosen.get("second")
        if first is not None and second is not None:
            shifts = [first, second]
            problem = shifts_problem(view, shifts)
            if not problem:
                assert viewer is not None
                shown = preview(view, viewer, shifts)
        arrows = shown.arrows if shown else view["arrows"]
        marker_cells = shown.markers if shown else view["markers"]
        path = [tuple(p) for p in (shown.path if shown else last.get("path") or [])]
        steps = {cell: i + 1 for i, cell in enumerate(path)}
        at: dict[tuple[int, int], list[int]] = {}
        for seat, pos in enumerate(marker_cells):
            if pos is not None:
                at.setdefault((pos[0], pos[1]), []).append(seat)
        half = CELL // 2
        cells = [
            Cell(
                glyph=ARROW_GLYPHS.get(arrow, "?"),
                words=ARROW_WORDS.get(arrow, "a new arrow, not known yet"),
                step=steps.get((r, c)),
                markers=tuple(at.get((r, c), ())),
                new=arrow == UNKNOWN,
            )
            for r, row in enumerate(arrows)
            for c, arrow in enumerate(row)
        ]
        markers = []
        for (r, c), seats in at.items():
            for n, seat in enumerate(seats):
                # Markers sharing a cell are spread a little so that each stays visible.
                dx, dy = [(0, 0), (10, 10), (-10, 10), (10, -10), (-10, -10), (0, 12)][n % 6]
                markers.append(
                    {
                        "seat": seat,
                        "colour": colour(seat),
                        "shape": MARKS[colour(seat)].path,
                        "shape_name": MARKS[colour(seat)].name,
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
        # Without JavaScript the second shift's choices are greyed from the first one kept.
        blocked_second = set(
            (view.get("blocked_after") or {}).get(str(first), []) if first is not None else []
        )
        shifted = set(shown.shifts) if shown else set()
        columns = [
            {
                "index": c,
                "letter": column_letter(c),
                "x": MARGIN + c * CELL + half,
                "blocked": c in blocked,
                "blocked_second": c in blocked_second,
                "shifted": c in shifted,
            }
            for c in range(size)
        ]
        rows = [
            {
                "number": r + 1,
                "y": MARGIN + r * CELL + half + 5,
                "cells": cells[r * size : (r + 1) * size],
            }
            for r in range(size)
        ]
        return {
            "size": size,
            "markers": markers,
            "path_d": path_d(path, size),
            "path_colour": colour(viewer if shown and viewer is not None else last.get("seat", 0))
            if path
            else "",
            "side": MARGIN + size * CELL + 4,
            "columns": columns,
            "rows": rows,
            "grid_svg": grid_svg(columns, rows, cells),
            "blocked_after_json": json.dumps(blocked_after),
            "second_blocked": bool(blocked_second),
            "chosen": {k: column_letter(v) for k, v in chosen.items() if v is not None},
            "preview": self._preview_words(shown, size) if shown else None,
            "preview_problem": problem,
            "last_shifts": " then ".join(column_letter(c) for c in last.get("shifts", [])),
        }

    @staticmethod
    def _chosen(view: JSON, viewer: int | None, draft: JSON | None) -> dict[str, int | None]:
        """The shifts the viewer has chosen for this turn, kept in its draft."""
        if not draft or viewer is None or view["to_move"] != viewer:
            return {}
        if draft.get("turn") != view["turn"]:
            return {}
        return {"first": draft.get("first"), "second": draft.get("second")}

    @staticmethod
    def _preview_words(shown: Preview, size: int) -> dict[str, Any]:
        end = shown.path[-1]
        stopped = shown.arrows[end[0]][end[1]] == UNKNOWN
        return {
            "shifts": " then ".join(column_letter(c) for c in shown.shifts),
            "end": f"{column_letter(end[1])}{end[0] + 1}",
            "stopped": stopped,
            "ends": [
                {
                    "cell": f"{column_letter(c)}{r + 1}",
                    "chance": chance(p),
                    "wins": c == size - 1,
                }
                for p, (r, c) in shown.ends
            ],
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
        """The shifts chosen so far, for the preview: either may be missing yet."""
        size: int = view["size"]
        kept: JSON = {"turn": view["turn"]}
        for name in ("first", "second"):
            letter = (data.get(name) or "").strip().lower()
            if not letter:
                kept[name] = None
            elif len(letter) == 1 and "a" <= letter <= column_letter(size - 1):
                kept[name] = ord(letter) - ord("a")
            else:
                raise MoveInputError(
                    f"Choose a column from a to {column_letter(size - 1)} for the {name} shift."
                )
        return kept
