"""Corn maze bots. Each sees only its seat's view; neither knows the arrows that shifts draw.

- `simple` wins at once when it surely can; otherwise it goes as far right as it can, guessing
  that every new arrow points right.
- `strong` weighs every pair of shifts by its chance to exit now (each drawn arrow any of the
  four, branching only where the walk reads one) plus, where the walk does not exit, its chance
  on the board it leaves: it plays the next opponent's likely reply, then counts its own best
  chance to exit after it, and beyond that a model of the race fitted on games between the bots.

Both look at pairs of columns without order where they can: c then e leaves the same board as
e then c, the new arrows being unknown either way.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from games.bots import JSON, register
from games.engines.cornmaze import (
    RIGHT,
    UNKNOWN,
    Branch,
    column_masks,
    end_branches,
    exit_chance,
    flat_board,
    legal_moves,
    shift_flat,
)

Markers = list[list[int] | None]


@dataclass(frozen=True)
class Shifted:
    """The board and markers after a pair of shifts, the drawn arrows still unknown."""

    shifts: list[int]
    board: list[int]
    markers: Markers


def _shifted(
    board: Sequence[int], markers: Markers, size: int, shifts: Sequence[int], new: int
) -> Shifted:
    after = list(board)
    moved: Markers = [None if m is None else list(m) for m in markers]
    for index, col in enumerate(shifts):
        shift_flat(after, size, col, new + index)
        for marker in moved:
            if marker is not None and marker[1] == col:
                marker[0] = (marker[0] + 1) % size
    return Shifted(list(shifts), after, moved)


def _unordered(moves: list[list[int]]) -> list[list[int]]:
    """One order of each pair: shifting c then e leaves the same board as e then c (the two new
    arrows are unknown either way), so only legality can tell the orders apart."""
    seen: set[tuple[int, int]] = set()
    unique = []
    for first, second in moves:
        key = (min(first, second), max(first, second))
        if key not in seen:
            seen.add(key)
            unique.append([first, second])
    return unique


@lru_cache(maxsize=4096)
def _pairs_near_bottom(size: int, low: frozenset[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    markers: Markers = [list(marker) for marker in low]
    moves = legal_moves({"size": size, "markers": markers, "to_move": 0})
    return tuple((first, second) for first, second in _unordered(moves))


def _pairs(markers: Markers, size: int) -> tuple[tuple[int, int], ...]:
    """One legal order of every pair of columns. Only markers in the two bottom rows can block
    a shift, so the answer is cached on those."""
    low = frozenset((m[0], m[1]) for m in markers if m is not None and m[0] >= size - 2)
    return _pairs_near_bottom(size, low)


def _cell(marker: Sequence[int], size: int) -> int:
    return marker[0] * size + marker[1]


@register("cornmaze", "simple")
def simple(view: JSON, seat: int, rng: random.Random) -> JSON:
    size = view["size"]
    board = flat_board(view["arrows"])
    moves = legal_moves(view)
    best: list[list[int]] = []
    best_col = -1
    for shifts in moves:
        after = _shifted(board, view["markers"], size, shifts, UNKNOWN)
        mine = after.markers[seat]
        assert mine is not None
        start = _cell(mine, size)
        branches, _ = end_branches(after.board, size, start)
        if all(cell % size == size - 1 for _, cell, _ in branches):
            return {"shifts": shifts}
        guessed = [RIGHT if arrow >= UNKNOWN else arrow for arrow in after.board]
        ((_, end, _),), _ = end_branches(guessed, size, start)
        col = end % size
        if col > best_col:
            best, best_col = [], col
        if col == best_col:
            best.append(shifts)
    return {"shifts": rng.choice(best)}


# --- strong ------------------------------------------------------------------------------
#
# The strong bot looks two turns ahead: its own (every pair of shifts, every way the drawn
# arrows its walk reads may point) and the next opponent's expected reply, which tries first to
# exit and then to get as far right as it can. It then values the board the reply leaves by its
# own best chance to exit there, and failing that by a model of the rest of the race.

# f, the chance that a seat to move still wins the race if it does not exit this turn: a
# logistic model fitted on 15,000 positions of two-seat 8x8 games between the bots (log loss
# 0.457, against 0.565 for a constant). logit f = MOVER[d] + OTHER[d'] + OTHER_EXIT * e', where
# d and d' are the distances of the seat's marker and of its opponent's marker from the last
# column (1 to 7; farther counts as 7) and e' is the opponent's best chance to exit on the board.
MOVER = (2.5, 1.75, 0.95, 0.28, -0.23, -0.62, -1.15)
OTHER = (-2.96, -0.95, -0.13, 0.43, 0.83, 1.11, 1.81)
OTHER_EXIT = -1.56


def _still_wins(mover: Sequence[int], other: Sequence[int], size: int, other_exit: float) -> float:
    """f above: `mover` is to move and does not exit; its chance to win the race even so."""
    d_mover = min(max(size - 1 - mover[1], 1), len(MOVER)) - 1
    d_other = min(max(size - 1 - other[1], 1), len(OTHER)) - 1
    z = MOVER[d_mover] + OTHER[d_other] + OTHER_EXIT * other_exit
    return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class Turn:
    """One seat's pair of shifts on a board: where its walk may end, drawn arrows unknown."""

    seat: int
    size: int
    after: Shifted
    branches: list[Branch]

    @property
    def exit(self) -> float:
        last = self.size - 1
        return sum(prob for prob, end, _ in self.branches if end % self.size == last)

    def mean_column(self) -> float:
        return sum(prob * (end % self.size) for prob, end, _ in self.branches)

    def rest(self) -> list[tuple[float, list[int], Markers]]:
        """The walks that do not exit: (probability, board with the drawn arrows the walk read
        filled in, markers after the walk)."""
        size = self.size
        rest = []
        for prob, end, taken in self.branches:
            if end % size == size - 1:
                continue
            board = self.after.board
            if taken:
                board = list(board)
                for unknown, arrow in taken:
                    board[board.index(unknown)] = arrow
            markers = list(self.after.markers)
            markers[self.seat] = list(divmod(end, size))
            rest.append((prob, board, markers))
        return rest


def _turn(
    board: Sequence[int], markers: Markers, size: int, seat: int, shifts: list[int], new: int
) -> Turn:
    after = _shifted(board, markers, size, shifts, new)
    mine = after.markers[seat]
    assert mine is not None
    return Turn(seat, size, after, end_branches(after.board, size, _cell(mine, size))[0])


def _best_chance(board: Sequence[int], markers: Markers, size: int, seat: int, new: int) -> float:
    """The best chance `seat` has of exiting on its turn from this board (draws unknown)."""
    marker = markers[seat]
    assert marker is not None
    row, col = marker
    masks = column_masks(size)
    # A pair of shifts away from every cell of the unshifted walk leaves that walk as it is.
    unshifted, reach = exit_chance(board, size, row * size + col)
    best = 0.0
    after_first: dict[int, list[int]] = {}
    for first, second in _pairs(markers, size):
        if reach & (masks[first] | masks[second]):
            shifted = after_first.get(first)
            if shifted is None:
                shifted = after_first[first] = list(board)
                shift_flat(shifted, size, first, new)
            after = shifted[:]
            shift_flat(after, size, second, new + 1)
            start = (row + (first == col) + (second == col)) * size + col
            chance, _ = exit_chance(after, size, start)
        else:
            chance = unshifted
        if chance > best:
            best = chance
            if best >= 1.0:
                break
    return best


def _reply(board: list[int], markers: Markers, size: int, seat: int) -> Turn:
    """The turn we expect from `seat`: its best chance to exit, then the farthest it gets."""
    marker = markers[seat]
    assert marker is not None
    masks = column_masks(size)
    unshifted, reach = end_branches(board, size, _cell(marker, size))
    unshifted_key = _key(unshifted, size)
    best_key = (-1.0, -1.0)
    best_shifts = (0, 0)
    for shifts in _pairs(markers, size):
        if reach & (masks[shifts[0]] | masks[shifts[1]]):
            key = _key(_turn(board, markers, size, seat, list(shifts), UNKNOWN + 2).branches, size)
        else:
            key = unshifted_key
        if key > best_key:
            best_key, best_shifts = key, shifts
            if key[0] >= 1.0:
                break
    return _turn(board, markers, size, seat, list(best_shifts), UNKNOWN + 2)


def _key(branches: list[Branch], size: int) -> tuple[float, float]:
    """What a seat looks for in a turn: its chance to exit, then the column it reaches."""
    last = size - 1
    exit_ = sum(prob for prob, end, _ in branches if end % size == last)
    return exit_, sum(prob * (end % size) for prob, end, _ in branches)


def _opponents(view: JSON, seat: int) -> list[int]:
    """The seats still in play, in the order they move after `seat`."""
    seats = view["seats"]
    return [
        other
        for step in range(1, seats)
        if (other := (seat + step) % seats) not in view["dropped"]
        and view["markers"][other] is not None
    ]


def _position_value(
    board: list[int], markers: Markers, size: int, seat: int, opponents: list[int]
) -> float:
    """Our chance on a board where our walk did not exit, the opponents to move.

    The next opponent makes its expected reply; the later ones only threaten to exit from this
    board. Where the reply does not exit, we exit with our best chance on the board it leaves,
    or else win the race later with the chance f gives."""
    survive = 1.0
    for other in opponents[1:]:
        survive *= 1.0 - _best_chance(board, markers, size, other, UNKNOWN + 2)
        if survive <= 0.0:
            return 0.0
    nearest = opponents[0]
    value = 0.0
    for prob, after, moved in _reply(board, markers, size, nearest).rest():
        mine, theirs = moved[seat], moved[nearest]
        assert mine is not None and theirs is not None
        own = _best_chance(after, moved, size, seat, UNKNOWN + 4)
        if own < 1.0:
            their_exit = _best_chance(after, moved, size, nearest, UNKNOWN + 4)
            own += (1.0 - own) * _still_wins(mine, theirs, size, their_exit)
        value += prob * own
    return survive * value


@register("cornmaze", "strong")
def strong(view: JSON, seat: int, rng: random.Random) -> JSON:
    size = view["size"]
    board = flat_board(view["arrows"])
    markers: Markers = view["markers"]
    opponents = _opponents(view, seat)
    pairs = list(_pairs(markers, size))
    rng.shuffle(pairs)
    turns = [_turn(board, markers, size, seat, list(shifts), UNKNOWN) for shifts in pairs]
    best = max(turns, key=lambda turn: turn.exit)
    if best.exit >= 1.0 or not opponents:
        return {"shifts": best.after.shifts}
    best_value = -1.0
    for turn in turns:
        # A little for the columns gained splits ties, as in a lost cause where every move
        # leaves an opponent a sure exit: it may still miss it.
        value = turn.exit + 0.001 * turn.mean_column() / size
        for prob, after, moved in turn.rest():
            value += prob * _position_value(after, moved, size, seat, opponents)
        if value > best_value:
            best, best_value = turn, value
    return {"shifts": best.after.shifts}
