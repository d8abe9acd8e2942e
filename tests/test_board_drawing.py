"""The boards' drawing functions (games/ui) and the game's partial give the same markup as the
drawing they replaced, for every game state, viewer and draft met in random games."""

from __future__ import annotations

import functools
import random
from pathlib import Path
from typing import Any

import pytest
from django import template
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.template import Engine
from django.template.context import make_context
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from games.engines import cornmaze
from games.engines import robotmaze as rm
from games.engines.base import JSON
from games.models import Game
from games.pages import contexts, game_cache
from games.play import challenges, core, vacations
from games.ui import colour, mark_html
from games.ui import robotmaze as ui
from games.ui.cornmaze import CELL, MARGIN, path_d
from games.ui.tags import seat_name
from tests.conftest import to_move
from tests.test_mazerace_site import an_open_way, make_race, ready_all, step
from tests.test_robotmaze_site import play, set_up

DRAFT_URL = "/games/7/draft?x=<&>"


def grid_html_escaping_everything(
    rows: list[list[dict[str, Any]]],
    columns: list[str],
    *,
    kind: str,
    caption: str,
    robot_name: str,
    draft_url: str,
) -> str:
    """grid_html as it was, escaping each cell's every value."""
    out = [
        f'<table class="warehouse{" " + escape(kind) if kind else ""}"'
        f"{f' aria-labelledby={chr(34)}{escape(caption)}{chr(34)}' if caption else ''}>\n"
        "  <thead><tr><td></td>"
        + "".join(f'<th scope="col">{escape(c)}</th>' for c in columns)
        + "</tr></thead>\n  <tbody>\n"
    ]
    robot_words = f"{escape(robot_name)}'s robot"
    for row in rows:
        out.append(f'    <tr><th scope="row">{escape(str(row[0]["name"])[:1])}</th>\n')
        for cell in row:
            name = escape(cell["name"])
            walls = f" walls-{escape(cell['walls'])}" if cell["walls"] else ""
            out.append(f'      <td class="{escape(cell["classes"])}{walls}" data-cell="{name}">')
            if cell["clickable"]:
                blocks = ", blocks the way" if "blocker" in cell["classes"] else ""
                out.append(
                    f'<button type="submit" name="toggle" value="{name}" id="toggle-{name}"'
                    f' formaction="{escape(draft_url)}" hx-post="{escape(draft_url)}"'
                    f' hx-target="#game" hx-swap="outerHTML" aria-label="{name}{blocks}"'
                    f' aria-pressed="{"true" if cell["crate"] else "false"}"'
                    f' title="{name}"></button>'
                )
            else:
                if cell["robot"]:
                    out.append(f'<span class="robot">{mark_html(cell["robot_colour"])}</span>')
                elif cell["step"]:
                    out.append(
                        f'<span class="step" aria-hidden="true">{escape(cell["step"])}</span>'
                    )
                robot = (robot_words + ("; " if cell["words"] else "")) if cell["robot"] else ""
                out.append(f'<span class="visually-hidden">{robot}{escape(cell["words"])}</span>')
            out.append("</td>\n")
        out.append("    </tr>\n")
    out.append("  </tbody>\n</table>")
    return mark_safe("".join(out))  # noqa: S308 - every value escaped above


ROBOTMAZE_COLUMNS = [str(c) for c in range(1, rm.SIZE + 1)]


def grid_cells_before(
    *,
    crates: set[str] = frozenset(),  # type: ignore[assignment]
    found: set[str] = frozenset(),  # type: ignore[assignment]
    path: list[str] | None = None,
    robot: str | None = None,
    robot_seat: int | None = None,
    blockers: set[str] = frozenset(),  # type: ignore[assignment]
    walls: list[JSON] | None = None,
    clickable: bool = False,
    plan: list[JSON] | None = None,
) -> list[list[dict[str, Any]]]:
    """ui.robotmaze's grid cells as they were made, every cell worked out."""
    order = {cell: i for i, cell in enumerate(path or [])}
    hit = {(w["at"], w["dir"]) for w in walls or []}
    planned: dict[str, list[int]] = {}
    unknown: set[str] = set()
    bumped: set[str] = set()
    for number, planned_step in enumerate(plan or [], start=1):
        if planned_step["result"] in {"clear", "unknown"}:
            planned.setdefault(planned_step["to"], []).append(number)
        if planned_step["result"] == "unknown":
            unknown.add(planned_step["to"])
        if planned_step["result"] in {"crate", "wall"}:
            bumped.add(planned_step["to"] or planned_step["from"])
    rows = []
    for r in range(rm.SIZE):
        row = []
        for c in range(rm.SIZE):
            name = rm.cell_name(r, c)
            classes = []
            words = []
            if name == rm.ENTRANCE:
                classes.append("entrance")
                words.append("entrance")
            if name == rm.EXIT:
                classes.append("exit")
                words.append("exit")
            if name in crates:
                classes.append("crate")
                words.append("crate")
            if name in found:
                classes.append("found")
                words.append("crate found by the robot" if name not in crates else "found")
            if name in order:
                classes.append("path")
                words.append("robot's path")
            if name in blockers:
                classes.append("blocker")
                words.append("blocks the way")
            cell_walls = "".join(d for d in "UDLR" if (name, d) in hit)
            if cell_walls:
                words.append("wall hit " + " and ".join(ui.TOWARDS[d] for d in cell_walls))
            if name in planned:
                classes.append("plan")
                if name in unknown:
                    classes.append("unknown")
                steps = ", ".join(str(n) for n in planned[name])
                words.append(
                    f"program step {steps}" + (", not known yet" if name in unknown else "")
                )
            if name in bumped:
                classes.append("bump")
                words.append("the program bumps here")
            row.append(
                {
                    "name": name,
                    "classes": " ".join(classes),
                    "words": "; ".join(words),
                    "robot": name == robot,
                    "robot_colour": colour(robot_seat) if robot_seat is not None else "",
                    "walls": cell_walls,
                    "clickable": clickable,
                    "crate": name in crates,
                    "step": planned[name][0] if name in planned else None,
                }
            )
        rows.append(row)
    return rows


def robotmaze_states(rng: random.Random) -> list[JSON]:
    """A random Robot Maze Race's states, from set-up to its end (or 80 programs)."""
    state = rm.start(rng.randbytes(32), {}, 2)
    states = [state]
    for seat in (0, 1):
        state, _ = rm.apply(state, seat, {"warehouse": rm.random_warehouse(rng)})
        states.append(state)
    for _ in range(80):
        if state["phase"] == "over":
            break
        (seat,) = rm.to_move(state)
        text = "".join(rng.choice("UDLR") for _ in range(rng.randint(1, 4)))
        state, _ = rm.apply(state, seat, {"program": text, "runs": rng.randint(1, 3)})
        states.append(state)
    return states


def drafts(rng: random.Random) -> list[JSON | None]:
    text = "".join(rng.choice("UDLR") for _ in range(rng.randint(1, 4)))
    return [
        None,
        {"program": {"program": text, "runs": rng.randint(1, 3)}},
        {"warehouse": rm.random_warehouse(rng)},
    ]


def test_robotmaze_boards_are_what_the_grid_cells_before_made(monkeypatch: Any) -> None:
    rng = random.Random(11)
    for _ in range(3):
        for state in robotmaze_states(rng):
            for viewer in (None, 0, 1):
                view = rm.view(state, viewer)
                for draft in drafts(rng):
                    board = ui.UI().board(view, viewer, draft)
                    with monkeypatch.context() as patched:
                        patched.setattr(ui, "_grid", grid_cells_before)
                        assert ui.UI().board(view, viewer, draft) == board


def test_robotmaze_grids_are_the_markup_that_escaped_every_value() -> None:
    rng = random.Random(13)
    drawn = 0
    for _ in range(3):
        for state in robotmaze_states(rng):
            for viewer in (None, 0, 1):
                view = rm.view(state, viewer)
                for draft in drafts(rng):
                    board = ui.UI().board(view, viewer, draft)
                    grids = [
                        (g["rows"], g.get("kind") or "", g["id"], "Ann <&> 'B'")
                        for g in board["grids"]
                    ]
                    if board["editor"]:
                        grids.append((board["editor"]["rows"], "editor", "editor-title", ""))
                    for rows, kind, caption, robot_name in grids:
                        named = {
                            "kind": kind,
                            "caption": caption,
                            "robot_name": robot_name,
                            "draft_url": DRAFT_URL,
                        }
                        assert ui.grid_html(rows, **named) == grid_html_escaping_everything(
                            rows, ROBOTMAZE_COLUMNS, **named
                        )
                        drawn += 1
    assert drawn > 500


# The game's partial as the templates drew it before its loops were drawn in Python: copies of
# those templates, found before the site's own (templates_before/games/game_partial.html is
# the inside of game.html's `game` partial).
TEMPLATES_BEFORE = Path(__file__).parent / "templates_before"
NAMES = ["Ann <&> 'B'", 'Bo "b" </td>', "Cy&amp;"]

# The old templates' own tag, as it was (the templates before use this module as a builtin).
register = template.Library()


@register.simple_tag
def cornmaze_table_rows(board: dict[str, Any], seats: list[Any]) -> SafeString:
    out = []
    for row in board["rows"]:
        out.append(f'<tr><th scope="row">{row["number"]}</th>')
        for c in row["cells"]:
            markers = "".join(f"; {escape(seat_name(seats, seat))}'s marker" for seat in c.markers)
            step = f"; path step {c.step}" if c.step else ""
            out.append(f"<td>{c.words}{markers}{step}</td>")
        out.append("</tr>\n  ")
    return mark_safe("".join(out))  # noqa: S308 - names escaped above


@register.simple_tag
def robot_grid(
    grid: dict[str, Any],
    board: dict[str, Any],
    seats: list[Any],
    game: Any,
    kind: str | None = None,
    caption: str | None = None,
) -> str:
    robot_seat = grid.get("robot_seat") if kind is None else None
    return grid_html_escaping_everything(
        grid["rows"],
        ROBOTMAZE_COLUMNS,
        kind=grid.get("kind") or "" if kind is None else kind,
        caption=grid.get("id") or "" if caption is None else caption,
        robot_name=seat_name(seats, robot_seat) if robot_seat is not None else "",
        draft_url=reverse("game_draft", args=[game.pk]),
    )


@functools.cache
def engine_before() -> Engine:
    config: dict[str, Any] = settings.TEMPLATES[0]
    return Engine(
        dirs=[str(TEMPLATES_BEFORE), *map(str, config["DIRS"])],
        app_dirs=True,
        context_processors=config["OPTIONS"]["context_processors"],
        builtins=[*config["OPTIONS"]["builtins"], __name__],
    )


def assert_partial_as_before(
    game: Game, user: Any, *, draft: JSON | None = None, error: str = "", kept: bool = False
) -> None:
    """The partial drawn now is the one the old templates draw from the same context: the
    kept one (with its marks, as a move's answer draws it) or one for its request alone."""
    game.refresh_from_db()
    request = RequestFactory().get("/")
    request.user = user or AnonymousUser()
    context = contexts.game_context(game, request.user, error=error, draft=draft)
    if kept:
        context = game_cache.marked(context)
    else:
        context["csrf_token"] = "a-token<&>"
    before = engine_before().get_template("games/game_partial.html")
    drawn = render_to_string("games/game.html#game", context, request)
    assert drawn == before.render(make_context(context_before(context), request))


def context_before(context: dict[str, Any]) -> dict[str, Any]:
    """The context with what the old templates read that is drawn in Python now: a Robot Maze
    Race's commands, runs and each command's place in the program form."""
    board = context.get("board")
    if context["game"].kind != "robotmaze" or board is None:
        return context
    program = board["program"]
    if program is not None:
        chosen = program.get("program", "")
        slots = [
            {"slot": i + 1, "value": chosen[i] if i < len(chosen) else ""}
            for i in range(rm.MAX_COMMANDS)
        ]
        program = {**program, "slots": slots}
    board = {
        **board,
        "program": program,
        "commands": ui.COMMAND_WORDS,
        "run_choices": list(range(1, rm.MAX_RUNS + 1)),
    }
    return {**context, "board": board}


def cornmaze_drafts(rng: random.Random, game: Game) -> list[JSON | None]:
    """Shifts chosen for the seat to move: none, one, a pair that may be refused, a legal pair."""
    assert game.state is not None
    size = game.state["size"]
    first, second = rng.randrange(size), rng.randrange(size)
    legal = rng.choice(cornmaze.legal_moves(game.state))
    turn = game.state["turn"]
    return [
        None,
        {"turn": turn, "first": first, "second": None},
        {"turn": turn, "first": first, "second": second},
        {"turn": turn, "first": legal[0], "second": legal[1]},
    ]


@pytest.mark.django_db
def test_cornmaze_partial_is_the_markup_the_templates_drew(make_user: Any) -> None:
    rng = random.Random(17)
    spectator = make_user("Spec <i>")
    for number, (seats, size, clock_options, rated) in enumerate(
        [(2, 6, None, True), (3, 8, {"bank_days": 7}, False), (2, 12, {"weekends_off": True}, True)]
    ):
        players = [make_user(f"{name}{number}") for name in NAMES[:seats]]
        with core.bot_tasks_paused():
            game = core.game_create(
                kind="cornmaze",
                creator=players[0],
                options={"size": size},
                clock_choice="P3D",
                seats=[core.SeatPlan() for _ in range(seats)],
                clock_options=clock_options,
                rated=rated,
            )
            for viewer in (players[0], spectator, None):
                assert_partial_as_before(game, viewer, kept=True)
            for player in players[1:]:
                core.game_join(game_id=game.pk, user=player)
        if number == 1:
            mover = to_move(game)
            core.time_give(game_id=game.pk, user=players[(mover + 1) % seats], seat_index=mover)
            vacations.vacation_start(user=players[2])
        while True:
            game.refresh_from_db()
            for viewer in (*players, spectator, None):
                assert_partial_as_before(game, viewer, kept=True)
                assert_partial_as_before(game, viewer, error="No <b>such</b> move.")
            if game.is_over or game.ply > 14:
                break
            mover = to_move(game)
            for draft in cornmaze_drafts(rng, game):
                assert_partial_as_before(game, players[mover], draft=draft)
            if game.ply == 9:
                core.game_resign(game_id=game.pk, user=players[(mover + 1) % seats])
                continue
            assert game.state is not None
            with core.bot_tasks_paused():
                core.move_submit(
                    game_id=game.pk,
                    user=players[mover],
                    number=game.ply,
                    move={"shifts": rng.choice(cornmaze.legal_moves(game.state))},
                )
        if game.is_over:
            challenges.rematch_offer(game_id=game.pk, user=players[0])
            for viewer in (*players, spectator, None):
                assert_partial_as_before(game, viewer)


@pytest.mark.django_db
def test_the_other_games_partials_are_the_markup_the_templates_drew(make_user: Any) -> None:
    """The seats' list is every game's: a Robot Maze Race with a time bank, and a slow and a
    live Maze Race, drawn as before."""
    spectator = make_user("Spec <i>")
    players = [make_user(name) for name in NAMES[:2]]
    with core.bot_tasks_paused():
        robots = core.game_create(
            kind="robotmaze",
            creator=players[0],
            options={},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
            clock_options={"bank_days": 7},
        )
        core.game_join(game_id=robots.pk, user=players[1])
    races = [make_race(clock="P3D"), make_race(people=1, bots=("wall",))]
    for game in (robots, *races):
        viewers = [s.user for s in game.seats.all() if s.user is not None]
        for ply in range(4):
            for viewer in (*viewers, spectator, None):
                assert_partial_as_before(game, viewer, kept=True)
                assert_partial_as_before(game, viewer, error="Not <b>now</b>.")
            if game.kind == "robotmaze":
                if ply == 0:
                    set_up(game)
                else:
                    play(game, "RD", 1)
            elif ply == 0 and game.clock_duration is None:
                ready_all(game)  # its countdown, drawn before and after
            elif ply < 3 and game.clock_duration is not None:
                step(game, 0, an_open_way(game, 0))


def robotmaze_drafts(rng: random.Random, game: Game, seat: int) -> list[JSON | None]:
    """What a Robot Maze Race player may have drafted: during set-up none, a legal warehouse, a
    clear one and one with a crate on the entrance and crates that block the way; in play none,
    a program the robot's grid knows only in part, and one of four commands run four times."""
    assert game.state is not None
    if game.state["phase"] == "setup":
        blocked = ["X" + "." * 9, ".X" + "." * 8, "X" + "." * 9] + ["." * 10] * 7
        return [
            None,
            {"warehouse": rm.random_warehouse(rng)},
            {"warehouse": ["." * 10] * 10},
            {"warehouse": blocked},
        ]
    text = "".join(rng.choice("UDLR") for _ in range(rng.randint(1, 3)))
    return [
        None,
        {"program": {"program": text, "runs": rng.randint(1, 3)}},
        {"program": {"program": "RDRD", "runs": 4}},
    ]


@pytest.mark.django_db
def test_robotmaze_partial_is_the_markup_the_templates_drew(make_user: Any) -> None:
    """Every viewer of a Robot Maze Race, from set-up (one warehouse placed, then both) through
    play with drafts and errors to the end (both warehouses shown): a game played to its end or
    to 40 plies and resigned, and one resigned early, rated, with a rematch offered."""
    rng = random.Random(19)
    spectator = make_user("Spec <i>")
    for number, (resign_at, rated) in enumerate([(40, False), (4, True)]):
        players = [make_user(f"{name}{number}") for name in NAMES[:2]]
        with core.bot_tasks_paused():
            game = core.game_create(
                kind="robotmaze",
                creator=players[0],
                options={},
                clock_choice="P3D",
                seats=[core.SeatPlan(), core.SeatPlan()],
                clock_options={"bank_days": 7} if rated else None,
                rated=rated,
            )
            core.game_join(game_id=game.pk, user=players[1])
        while True:
            game.refresh_from_db()
            assert game.state is not None
            for viewer in (*players, spectator, None):
                assert_partial_as_before(game, viewer, kept=True)
                assert_partial_as_before(game, viewer, error="No <b>such</b> program.")
            if game.is_over:
                break
            movers = rm.to_move(game.state)
            for seat in movers:
                for draft in robotmaze_drafts(rng, game, seat):
                    assert_partial_as_before(game, players[seat], draft=draft)
            seat = rng.choice(movers)
            if game.ply >= resign_at:
                core.game_resign(game_id=game.pk, user=players[seat])
                continue
            if game.state["phase"] == "setup":
                move: JSON = {"warehouse": rm.random_warehouse(rng)}
            else:
                text = "".join(rng.choice("UDLRRD") for _ in range(rng.randint(1, 4)))
                move = {"program": text, "runs": rng.randint(1, 4)}
            with core.bot_tasks_paused():
                core.move_submit(
                    game_id=game.pk,
                    user=players[seat],
                    number=core.move_number(game, seat),
                    move=move,
                )
        if rated:
            challenges.rematch_offer(game_id=game.pk, user=players[0])
            for viewer in (*players, spectator, None):
                assert_partial_as_before(game, viewer)


def test_a_corn_maze_path_that_wraps_leaves_by_one_edge_and_comes_in_by_the_other() -> None:
    def centre(n: int) -> int:
        return MARGIN + n * CELL + CELL // 2

    top, bottom = MARGIN, MARGIN + 8 * CELL
    # Down off the bottom row of column c to its top row, then right; and up off the top.
    down = path_d([(6, 2), (7, 2), (0, 2), (0, 3)], 8)
    assert down == (
        f"M{centre(2)},{centre(6)} L{centre(2)},{centre(7)} L{centre(2)},{bottom}"
        f" M{centre(2)},{top} L{centre(2)},{centre(0)} L{centre(3)},{centre(0)}"
    )
    up = path_d([(0, 4), (7, 4)], 8)
    x = centre(4)
    assert up == f"M{x},{centre(0)} L{x},{top} M{x},{bottom} L{x},{centre(7)}"
    # Without a wrap, one line from centre to centre.
    assert path_d([(3, 0), (3, 1), (2, 1)], 8) == (
        f"M{centre(0)},{centre(3)} L{centre(1)},{centre(3)} L{centre(1)},{centre(2)}"
    )
