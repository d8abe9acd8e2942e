"""Maze Race on the page: the runner's fogged maze, drawn only from its own view (the cells it
has seen, with their walls, and its path), the strip, the four steering buttons, Ready and the
countdown, the hint; once the race is over, the whole maze with every runner's path and the
results. A spectator sees the strip only until the end."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.http import QueryDict
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from games.bots import levels
from games.engines import mazegen
from games.engines import mazerace as rules
from games.engines.base import JSON
from games.models import Clock, Game
from games.ui import MARKS, CreateForm, GameUI, MoveInputError, colour, wording
from games.web.inputs import AsciiIntegerField

CELL = 30  # pixels per cell
MARGIN = 24  # room for the column letters and row numbers
PERSON = "person"
LIVE = "live"
RACES = [
    (LIVE, "live race"),
    (Clock.DAYS_3, "slow race: 3 days to get out"),
    (Clock.DAYS_30, "slow race: 30 days to get out"),
]
ARROWS = {"N": "↑", "E": "→", "S": "↓", "W": "←"}
# The steering pad's buttons in the order they are seen (its top row, its middle row from the
# left, its bottom row), which is the order the Tab key and a screen reader take them in.
PAD = "NWES"
# Each runner's path is drawn a little off the middle of the cells so that paths that share a
# corridor stay apart on the results page.
PATH_OFFSETS = [(-4, -4), (4, 4), (4, -4), (-4, 4)]
MS = timedelta(milliseconds=1)


BANK_HELP = "A slow race only: added once to the race's clock. A live race keeps its own clock."
WEEKENDS_OFF_HELP = (
    "A slow race only: its clock stops on Saturdays and Sundays, in each runner's own time zone."
)


class MazeraceCreateForm(CreateForm):
    race = forms.ChoiceField(label="Race", choices=RACES, initial=LIVE)
    seats = AsciiIntegerField(
        min_value=rules.MIN_SEATS, max_value=rules.MAX_SEATS, initial=2, label="Runners"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [(PERSON, "a person (open seat)")] + [
            (level, f"bot: {level}") for level in levels(rules.SLUG)
        ]
        for i in range(1, rules.MAX_SEATS):
            self.fields[f"seat_{i}"] = forms.ChoiceField(
                choices=choices, initial=PERSON, required=False, label=f"Runner {i + 1}"
            )
        # A race has no moves to add a day back: its bank is added once.
        self.fields["bank"].help_text = BANK_HELP
        self.fields["weekends_off"].help_text = WEEKENDS_OFF_HELP

    def create_args(self) -> tuple[JSON, str, list[str]]:
        race = self.cleaned_data["race"]
        seats: int = self.cleaned_data["seats"]
        bots = [""] + [
            ""
            if (self.cleaned_data.get(f"seat_{i}") or PERSON) == PERSON
            else self.cleaned_data[f"seat_{i}"]
            for i in range(1, seats)
        ]
        if race == LIVE:
            return {"mode": "live"}, Clock.LIVE, bots
        return {"mode": "slow"}, race, bots


def _centre(name: str) -> tuple[int, int]:
    row, col = divmod(mazegen.CELL_OF[name], mazegen.SIZE)
    return MARGIN + col * CELL + CELL // 2, MARGIN + row * CELL + CELL // 2


def _points(names: list[str], offset: tuple[int, int] = (0, 0)) -> str:
    dx, dy = offset
    return " ".join(f"{x + dx},{y + dy}" for x, y in map(_centre, names))


def _walls(cells: dict[str, int]) -> str:
    """One SVG path for the closed walls of the given cells (and of no other cell)."""
    parts = []
    for name, bits in cells.items():
        row, col = divmod(mazegen.CELL_OF[name], mazegen.SIZE)
        x, y = MARGIN + col * CELL, MARGIN + row * CELL
        if not bits & mazegen.BIT["N"]:
            parts.append(f"M{x} {y}h{CELL}")
        if not bits & mazegen.BIT["S"]:
            parts.append(f"M{x} {y + CELL}h{CELL}")
        if not bits & mazegen.BIT["W"]:
            parts.append(f"M{x} {y}v{CELL}")
        if not bits & mazegen.BIT["E"]:
            parts.append(f"M{x + CELL} {y}v{CELL}")
    return "".join(parts)


def _table(
    seen: dict[str, int],
    here: dict[str, list[str]],
    visited: set[str],
    exit_cell: str,
    yours: bool,
) -> str:
    """The maze as a table for a screen reader, row by row: the open ways of every cell seen,
    fog for the others, where each runner is, the path walked. Built here, not in a template
    loop, as the cells are (it is sent twice a second)."""
    head = "".join(f'<th scope="col">{c}</th>' for c in mazegen.COLUMNS)
    rows = []
    for r in range(mazegen.SIZE):
        cells = []
        for c in range(mazegen.SIZE):
            name = mazegen.NAMES[r * mazegen.SIZE + c]
            words = []
            if name in seen:
                ways = [rules.WORDS[d] for d in mazegen.DIRECTIONS if seen[name] & mazegen.BIT[d]]
                words.append("open " + ", ".join(ways) if ways else "closed")
            else:
                words.append("fog")
            if name == exit_cell:
                words.append("exit")
            if name in visited:
                words.append("your path" if yours else "the runner's path")
            words += here.get(name, [])
            cells.append(f"<td>{'; '.join(words)}</td>")
        rows.append(f'<tr><th scope="row">{r + 1}</th>{"".join(cells)}</tr>')
    return f"<thead><tr><td></td>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"


def seconds(ms: int) -> str:
    """A race time as the results show it: `12.75 s`, never broken before its unit."""
    return f"{ms / 1000:.2f}\u00a0s"


class UI(GameUI):
    slug = rules.SLUG
    create_form: type[CreateForm] = MazeraceCreateForm
    board_template = "games/boards/mazerace.html"
    board_foot_template = "games/boards/mazerace_foot.html"
    move_template = "games/forms/mazerace_move.html"
    hide_log = True  # a race is hundreds of steps; the record has them
    move_number_field = "step"  # the runner's own count of steps (engine.move_number)

    def board(
        self,
        view: JSON,
        viewer: int | None,
        draft: JSON | None = None,
        *,
        yours: bool = True,
        game_over: bool = False,
    ) -> dict[str, Any]:
        """The maze as this viewer may see it: a runner's own seen cells and path during the
        race, nothing of the maze for a spectator, everything once the race is over."""
        over = view["over"]
        if over:
            seen = dict(zip(mazegen.NAMES, mazegen.decode(view["maze"]), strict=True))
            tracks = list(enumerate(view["runners"]))
        elif viewer is not None:
            seen = dict(view["cells"])
            tracks = [(viewer, view)]
        else:
            return {"maze": False, "over": False}
        visited = set() if over else set(view["path"])
        cells = []
        for name in mazegen.NAMES:
            x, y = _centre(name)
            classes = ["seen" if name in seen else "fog"]
            if name in visited:
                classes.append("visited")
            if name == view["exit"]:
                classes.append("exit")
            # Built here, not in a template loop: the page is drawn twice a second per runner.
            cells.append(
                format_html(
                    '<rect class="cell {}" data-cell="{}"{} x="{}" y="{}" width="{}" '
                    'height="{}"></rect>',
                    " ".join(classes),
                    name,
                    format_html(' data-open="{}"', seen[name]) if name in seen else "",
                    x - CELL // 2,
                    y - CELL // 2,
                    CELL,
                    CELL,
                )
            )
        several = len(tracks) > 1
        paths = [
            {
                "seat": seat,
                "colour": colour(seat),
                "cells": " ".join(track["path"]),
                "points": _points(
                    track["path"], PATH_OFFSETS[seat % len(PATH_OFFSETS)] if several else (0, 0)
                ),
            }
            for seat, track in tracks
        ]
        runners = []
        here: dict[str, list[str]] = {}
        places = (view.get("result") or {}).get("places") or [] if over else []
        for seat, track in tracks:
            dx, dy = PATH_OFFSETS[seat % len(PATH_OFFSETS)] if several else (0, 0)
            x, y = _centre(track["at"])
            runners.append(
                {
                    "seat": seat,
                    "at": track["at"],
                    "x": x + dx,
                    "y": y + dy,
                    "colour": colour(seat),
                    "shape": MARKS[colour(seat)].path,
                    "shape_name": MARKS[colour(seat)].name,
                }
            )
            if places:
                said = f"the runner placed {places[seat]} ends here"
            elif over:  # the whole maze in the middle of a replay: the runners in seat order
                said = f"runner {seat + 1} is here"
            else:
                said = "you are here" if yours else "the runner is here"
            here.setdefault(track["at"], []).append(said)
        hint = None
        if not over and draft and (draft.get("hint") or {}).get("steps") == view["steps"]:
            found = draft["hint"]
            hint = {
                "dir": found["dir"],
                "word": rules.WORDS.get(found["dir"] or "", ""),
                "points": _points(found["route"]),
                "steps": len(found["route"]) - 1,
            }
        open_ways = [] if over else view["open"]
        exit_x, exit_y = _centre(view["exit"])
        size = mazegen.SIZE
        return {
            "maze": True,
            "over": over,
            "ended": bool(places),
            "side": MARGIN + size * CELL + 4,
            "cell": CELL,
            "inner": size * CELL,
            "margin": MARGIN,
            "cells": mark_safe("".join(cells)),  # each part is format_html's
            # Only fixed words and cell names: nothing to escape.
            "table": mark_safe(_table(seen, here, visited, view["exit"], yours)),
            "yours": yours,
            "walls": _walls(seen),
            "paths": paths,
            "runners": runners,
            "exit": {"x": exit_x, "y": exit_y},
            "columns": [
                {"letter": mazegen.COLUMNS[c], "x": MARGIN + c * CELL + CELL // 2}
                for c in range(size)
            ],
            "rows": [
                {"number": r + 1, "y": MARGIN + r * CELL + CELL // 2 + 4} for r in range(size)
            ],
            "sentence": "" if over else view["sentence"],
            "at": "" if over else view["at"],
            "buttons": [
                {
                    "dir": d,
                    "arrow": ARROWS[d],
                    "word": rules.WORDS[d],
                    "open": d in open_ways,
                }
                for d in PAD
            ],
            "hint": hint,
        }

    def page_context(
        self, game: Game, view: JSON | None, viewer: int | None, now: datetime
    ) -> dict[str, Any]:
        """What the race page adds to the game page: the phase and its times, who is ready,
        the strip, the results, and how often the page polls."""
        seats = list(game.seats.all())
        live = game.clock == Clock.LIVE
        if view is None:  # waiting for players
            return {}
        over = game.is_over
        elapsed = 0
        if game.race_starts_at is not None:
            elapsed = (now - game.race_starts_at) // MS
        if over:
            phase = "over"
        elif not live:
            phase = "slow"
        elif game.race_starts_at is None:
            phase = "ready"
        elif elapsed < 0:
            phase = "countdown"
        else:
            phase = "running"
        strip = [
            {
                "seat": row["seat"],
                "name": seats[row["seat"]].name,
                "colour": colour(row["seat"]),
                "steps": row["steps"],
                "out": row["out"],
                "place": row["place"],
                "you": row["seat"] == viewer,
            }
            for row in view["strip"]
        ]
        mine = view if viewer is not None and not over else None
        runner_in = mine is not None and mine["out"] is None
        # When the page may send this runner's next step: when its last one has landed, or,
        # during the countdown, at the start (a key pressed early waits for it).
        landed_in = -elapsed if phase == "countdown" else 0
        if mine is not None and mine.get("landed_ms") is not None and phase == "running":
            landed_in = max(0, int(mine["landed_ms"]) - elapsed)
        deadline = view["deadline_ms"]
        starts_in = -elapsed if phase == "countdown" else 0
        deadline_in = (
            max(0, deadline - elapsed)
            # The 30 s deadline, once somebody is out (the 10-minute limit is in the rules).
            if phase == "running" and deadline is not None and deadline < rules.RACE_LIMIT_MS
            else None
        )
        race = {
            "live": live,
            "phase": phase,
            "over": over,
            "has_bot": any(s.bot for s in seats),
            "strip": strip,
            "ready": [
                {
                    "seat": s.index,
                    "name": s.name,
                    "ready": s.ready_at is not None,
                    "colour": colour(s.index),
                }
                for s in seats
            ],
            "you_ready": viewer is not None and seats[viewer].ready_at is not None,
            "can_steer": runner_in and phase in {"countdown", "running", "slow"},
            "starts_in_ms": starts_in,
            "starts_in_s": -(-starts_in // 1000),
            "elapsed_ms": max(0, elapsed),
            "elapsed_s": max(0, elapsed) // 1000,
            "deadline_in_ms": deadline_in,
            "deadline_in_s": None if deadline_in is None else -(-deadline_in // 1000),
            "landed_in_ms": landed_in,
            "results": self._results(view, seats, live) if view["over"] else [],
        }
        return {
            "race": race,
            "poll_every": "500ms" if live and not over else "3s",
            "events_url": events_url(game, viewer) if live and not over else "",
            "status_template": "games/boards/mazerace_status.html",
            "hide_resign": not runner_in,
        }

    @staticmethod
    def _results(view: JSON, seats: list[Any], live: bool) -> list[JSON]:
        places = (view["result"] or {}).get("places") or [None] * len(seats)
        rows = []
        for seat, track in enumerate(view["runners"]):
            exited = track["out"] == "exit"
            rows.append(
                {
                    "seat": seat,
                    "name": seats[seat].name,
                    "colour": colour(seat),
                    "place": places[seat],
                    "time": seconds(track["landed_ms"])
                    if exited and live and track["landed_ms"] is not None
                    else "",
                    "steps": track["steps"],
                    "covered": track["covered"],
                    "how": wording.how_out(track["out"]),
                }
            )
        rows.sort(key=lambda row: (row["place"] or 99, row["seat"]))
        return rows

    def parse_move(self, data: QueryDict, view: JSON) -> JSON:
        given = (data.get("dir") or "").strip()
        by_word = {word: d for d, word in rules.WORDS.items()}
        direction = given.upper() if given.upper() in rules.WORDS else by_word.get(given.lower())
        if direction is None:
            raise MoveInputError("Choose a direction: north, east, south or west.")
        return {"dir": direction}

    def draft_update(self, data: QueryDict, view: JSON, draft: JSON | None) -> JSON:
        raise MoveInputError("A step needs no preparing: press a direction.")


def events_url(game: Game, viewer: int | None) -> str:
    """The live race's event stream (mazesite/events.py) for this page: a runner is told only
    that the race moved and fetches its own board; a spectator is sent the spectator's board.
    static/js/site.js reads it from the game's `data-events`; the page polls while it is off,
    as it does while a private race waits for players (its stream is not found: a stranger
    may not learn that it exists)."""
    if not settings.RACE_EVENTS or (game.status == Game.Status.OPEN and game.invite_token):
        return ""
    mode = "watch" if viewer is None else "runner"
    return f"{settings.RACE_EVENTS_ORIGIN}/games/{game.pk}/events?as={mode}"
