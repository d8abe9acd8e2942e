"""The boards' drawing functions (games/ui) give the same markup as the drawing they replaced,
for every game state, viewer and draft met in random games."""

from __future__ import annotations

import random
from typing import Any

from django.utils.html import escape
from django.utils.safestring import mark_safe

from games.engines import robotmaze as rm
from games.engines.base import JSON
from games.ui import mark_html
from games.ui import robotmaze as ui

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
                        args = (rows, [str(c) for c in board["columns"]])
                        named = {
                            "kind": kind,
                            "caption": caption,
                            "robot_name": robot_name,
                            "draft_url": DRAFT_URL,
                        }
                        assert ui.grid_html(*args, **named) == grid_html_escaping_everything(
                            *args, **named
                        )
                        drawn += 1
    assert drawn > 500
