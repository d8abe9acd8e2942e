"""Maze Race bots. Each sees only its runner's view: the cells it has seen, with their walls.

- "wall": the right-hand wall follower. It keeps its right hand on a wall; starting from a1
  with its hand on the outer wall, it follows the wall round to o15, which touches the same
  outer wall, so it always gets out, by a long way round.
- "flood": the micromouse flood fill. Every wall it has not seen is taken to be open; it counts
  the steps from each cell to the exit on that optimistic maze and steps downhill, counting
  again after every step.
- "strong": reasons about what the fog can hold. The maze is a uniformly drawn spanning tree
  with a few loops, and for such a tree the way from the exit to the part already seen enters
  it through opening k (a seen cell's open wall into the fog) with the probability that a
  random walk in the fog, started at the exit, first reaches the fog cell behind opening k
  (Wilson's algorithm says so). The same walks, started from every fog cell, give how big the
  branch behind each opening is expected to be. Trying an opening costs going there and, if it
  is the wrong one, walking its branch and back; the bot tries first the opening with the least
  cost for its chance, as in the classic search for a prize hidden in one of several boxes.
  Fog the exit cannot be in, and fog with no way to the exit, is never entered.

`hint(view)` is the strong bot's next step with the route it plans: the known way to the
opening it chose, then the shortest way through the fog from there, taking unseen walls open.

On the bench's 10,000 mazes "strong" takes 3.55% fewer steps than "flood", and 3.47% and 3.30%
on two other sets of 10,000 (prefixes "wide" and "heldout"), each with a standard error of 0.3
points. A block of 1,000 mazes is too few to judge a few percent by: the bench's first 1,000
give 2.7%, its ten blocks 2.0% to 5.3%.
Tried on separate seeds, none beating the plain rule above: an exact search order over
the travel between openings; a fixed or estimated size for a wrong branch; raising the
probabilities to powers 0.65 to 2; mixing in flood's distance or handing over to flood late; a
penalty for turning back; grouping openings by first step (it oscillated).

Sampling the fog did not help either. Completions drawn by Wilson's algorithm in the exit's
fog (the openings as the root, 12 to 16 per decision, about 10 ms) agree with the chances above.
Percentages below are steps against this rule on the first 300 to 400 bench seeds:
- a rollout: in each completion, the cost of trying one opening first and then the others in
  index order, a wrong branch costing the cells that must be stood in to see it all (those not
  shown down a straight corridor): +25%;
- the index with that walking cost in place of the expected fog: +8% when the cost is taken
  over the completions where the branch is wrong, +44% over all of them.
Every step shows new cells, the next decision draws new completions, and their noise sends the
runner back and forth between far openings. Drawing every completion from fixed random arrows
per cell (Propp and Wilson's cycle popping), so that the completions change only near the new
cells, halves the harm (rollout +13%, walking cost +17%) but leaves it. Keeping the closed-form
expected fog and scaling it by each branch's sampled share of cells to walk (relative to all
the branches) gave 3.0% over flood on the bench seeds but 2.4% on held-out ones (-0.5 +- 0.5
points against this rule): no gain, for twice the time.

This rule does not oscillate, so there is nothing for a commitment to an opening to fix. On the
1,000 bench seeds it changes target about 1.2 times a run while the old opening is still fog,
and never by turning back. It turns back outside dead ends 2.9 times a run (flood 3.2).
Two more inputs to the same index, measured against this rule on both seed sets (bench, then
held-out, standard error 0.15 to 0.3 points), gave no gain:
- a wrong branch's fog counted only in mazes where the exit is not behind it (the
  box-search swap argument asks for that). Exact up to one total, the expected fog in wrong
  branches, taken from 16 Wilson draws: -0.0 and -0.1 points, slower and over 100 ms at worst.
  Taking the exit alone as absorbing, with no draws, changed no decision.
- trying an opening costing d - 1 steps each way, since it shows from the seen cell before it:
  -0.5 and +0.7 points. The two seed sets disagree by more than the change; on the bench's
  10,000 mazes and on 10,000 others, -0.0 and +0.2 points (standard error 0.1).

Nor is there a better choice to learn from what this view offers (`bench/mazerace_choices.py`).
On 600 separate seeds (prefix "train") every one of this rule's 25,000 real choices was replayed
once per opening: walk to that opening, then play on by this rule, in the true maze. Choosing by
that measured cost would take 33.1 steps from a choice on average (it knows the maze); this
rule's choice takes 37.0, flood's 37.3. A log-linear ranking of eleven inputs (this rule's own
ratio among them, with travel, branch size, chance, fog distance to the exit, fog size) fitted
to the measured costs on 70% of the seeds does no better on the rest (37.628 against 37.636);
a small neural ranker with geometry added fitted its own choices better and the others worse.
Loops are what the tree model leaves out: 1.8 openings a choice join the exit through the fog,
not one (16% of those given a chance of 0.03, 76% at 0.65). Yet chances counted over 24
completions that redo the generator's loop step, as the index, made the choices worse (39.0).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import lru_cache

from games.bots import JSON, register
from games.engines.mazegen import (
    BIT,
    CELL_OF,
    CELLS,
    EXIT,
    NAMES,
    NEIGHBOURS,
    OPPOSITE,
    STEP,
    direction_between,
    search,
)

UNSEEN = -1
# Walking a wrong branch to rule it out costs about this many steps per cell it is expected to
# hold (in and out again, less what the runner sees down straight corridors).
BRANCH_COST = 1.0


def knowledge(view: JSON) -> list[int]:
    """Open-wall bits per cell as the runner has seen them, UNSEEN for the fog."""
    known = [UNSEEN] * CELLS
    for name, bits in view["cells"].items():
        known[CELL_OF[name]] = bits
    return known


def _may_pass(known: Sequence[int], cell: int, direction: str, other: int) -> bool:
    """Whether the wall may be open: it is, if a cell on either side was seen with it open; it
    may be, if neither side was seen."""
    if known[cell] != UNSEEN:
        return bool(known[cell] & BIT[direction])
    if known[other] != UNSEEN:
        return bool(known[other] & BIT[OPPOSITE[direction]])
    return True


def optimistic_distances(known: Sequence[int], goal: int = EXIT) -> list[int]:
    """Steps from every cell to `goal`, taking every unseen wall as open (-1: no way)."""
    return search(goal, lambda cell, direction, other: _may_pass(known, cell, direction, other))[0]


def _heading(view: JSON) -> str | None:
    path = view["path"]
    if len(path) < 2:
        return None
    return direction_between(CELL_OF[path[-2]], CELL_OF[path[-1]])


# --- wall follower -----------------------------------------------------------------------

RIGHT = {"N": "E", "E": "S", "S": "W", "W": "N"}
LEFT = {turn: direction for direction, turn in RIGHT.items()}


@register("mazerace", "wall")
def wall_bot(view: JSON, seat: int, rng: random.Random) -> JSON:
    heading = _heading(view) or "S"  # on a1 facing south, the right hand is on the outer wall
    for direction in (RIGHT[heading], heading, LEFT[heading], OPPOSITE[heading]):
        if direction in view["open"]:
            return {"dir": direction}
    raise ValueError("a runner always has a way out of its cell")


# --- flood fill --------------------------------------------------------------------------


@register("mazerace", "flood")
def flood_bot(view: JSON, seat: int, rng: random.Random) -> JSON:
    known = knowledge(view)
    found = optimistic_distances(known)
    here = CELL_OF[view["at"]]
    heading = _heading(view)
    best: tuple[int, int, str] | None = None
    for direction in view["open"]:
        other = here + STEP[direction]
        # Ties go straight on, then in the order N, E, S, W.
        rank = (found[other], direction != heading, direction)
        if best is None or rank < best:
            best = rank
    if best is None:
        raise ValueError("a runner always has a way out of its cell")
    return {"dir": best[2]}


# --- strong ------------------------------------------------------------------------------


def _seen_routes(known: Sequence[int], here: int) -> tuple[list[int], list[int]]:
    """Steps from `here` to every seen cell through seen cells, and the cell before each."""
    return search(
        here,
        lambda cell, direction, other: (
            bool(known[cell] & BIT[direction]) and known[other] != UNSEEN
        ),
    )


def exit_fog(known: Sequence[int]) -> set[int]:
    """The unseen cells joined to the (unseen) exit by unseen cells."""
    found, _ = search(EXIT, lambda _cell, _direction, other: known[other] == UNSEEN)
    return {cell for cell in range(CELLS) if found[cell] >= 0}


def _solve_banded(
    cells: list[int], index: dict[int, int], region: set[int], sources: list[list[float]]
) -> list[list[float]]:
    """Solve L x = b for each b in `sources`, where L is the fog's graph Laplacian with the
    openings absorbing: L[v][v] = fog neighbours of v, L[v][w] = -1 for fog neighbours w that
    are not openings. Gaussian elimination on the band of the row-major order, keeping only the
    upper half since L stays symmetric (no pivoting is needed: L is diagonally dominant)."""
    n = len(cells)
    width = 1
    for i, cell in enumerate(cells):
        for _, other in NEIGHBOURS[cell]:
            j = index.get(other)
            if j is not None:
                width = max(width, j - i)
    upper = [[0.0] * (width + 1) for _ in range(n)]  # upper[i][t] = L[i][i + t]
    for i, cell in enumerate(cells):
        row = upper[i]
        for _, other in NEIGHBOURS[cell]:
            if other in region:
                row[0] += 1.0
                j = index.get(other)
                if j is not None and j > i:
                    row[j - i] = -1.0
    values = [list(source) for source in sources]
    for k in range(n):
        top = upper[k]
        pivot = top[0]
        for t in range(1, min(width, n - 1 - k) + 1):
            entry = top[t]
            if entry == 0.0:
                continue
            factor = entry / pivot
            row = upper[k + t]
            # zip stops at the shorter top[t:]: the entries past the band stay as they are.
            row[: width + 1 - t] = [a - factor * b for a, b in zip(row, top[t:], strict=False)]
            for column in values:
                column[k + t] -= factor * column[k]
    for k in range(n - 1, -1, -1):
        top = upper[k]
        reach = min(width, n - 1 - k)
        for column in values:
            total = column[k]
            for t in range(1, reach + 1):
                total -= top[t] * column[k + t]
            column[k] = total / top[0]
    return values


@lru_cache(maxsize=256)
def _branch_odds(
    region: frozenset[int], openings: frozenset[int]
) -> dict[int, tuple[float, float]]:
    """For each opening: the chance the exit's way in passes through it, and the number of fog
    cells its branch is expected to hold (counting the opening's own cell)."""
    cells = sorted(region - openings)
    index = {cell: i for i, cell in enumerate(cells)}
    at_exit = [0.0] * len(cells)
    at_exit[index[EXIT]] = 1.0
    everywhere = [1.0] * len(cells)
    from_exit, from_all = _solve_banded(cells, index, set(region), [at_exit, everywhere])
    odds: dict[int, tuple[float, float]] = {}
    for opening in openings:
        chance = 0.0
        size = 1.0
        for _, other in NEIGHBOURS[opening]:
            j = index.get(other)
            if j is not None:
                chance += from_exit[j]
                size += from_all[j]
        odds[opening] = (chance, size)
    return odds


def plan(view: JSON, whole: bool = True) -> list[int]:
    """The strong bot's route from the runner's cell (first) towards the exit (last). With
    `whole` false, only the first step is sure to be there: when every opening is reached by
    the same first step, the chances need not be worked out."""
    known = knowledge(view)
    here = CELL_OF[view["at"]]
    found, before = _seen_routes(known, here)
    if known[EXIT] != UNSEEN and found[EXIT] >= 0:
        return _route_back(before, here, EXIT)
    region = exit_fog(known)
    entries = openings(known, found, region)
    if not entries:
        raise ValueError("the view shows no way into the fog that hides the exit")
    if EXIT in entries:
        target = EXIT
    elif len(entries) == 1:
        target = next(iter(entries))
    else:
        if not whole:
            firsts = {
                _first_step(before, here, last, opening) for opening, (_, last) in entries.items()
            }
            if len(firsts) == 1:
                return [here, firsts.pop()]
        odds = _branch_odds(frozenset(region), frozenset(entries))
        target = min(entries, key=lambda opening: _search_cost(entries[opening][0], *odds[opening]))
    last_seen = entries[target][1]
    route = [*_route_back(before, here, last_seen), target]
    return route + _fog_route(region, target)


def openings(
    known: Sequence[int], found: Sequence[int], region: set[int]
) -> dict[int, tuple[int, int]]:
    """The openings into `region` (fog cells behind a seen cell's open wall), each with the
    steps to it from the runner (`found`, from _seen_routes) and the seen cell before it."""
    entries: dict[int, tuple[int, int]] = {}
    for cell in range(CELLS):
        if found[cell] < 0:
            continue
        bits = known[cell]
        for direction, other in NEIGHBOURS[cell]:
            if bits & BIT[direction] and other in region:
                entry = (found[cell] + 1, cell)
                if other not in entries or entry < entries[other]:
                    entries[other] = entry
    return entries


def _search_cost(steps: int, chance: float, size: float) -> tuple[float, int]:
    """What trying an opening first costs for its chance: the way there and back, and the
    branch walked if the exit is not behind it. Trying the openings in increasing order of
    this ratio is the best order when each is tried to the end (swap any two neighbours in an
    order and compare); ties go to the nearer opening."""
    if chance <= 1e-12:
        return (float("inf"), steps)
    return ((2 * steps + BRANCH_COST * size) / chance, steps)


def _first_step(before: Sequence[int], here: int, last_seen: int, opening: int) -> int:
    cell = opening
    if last_seen != here:
        cell = last_seen
        while before[cell] != here:
            cell = before[cell]
    return cell


def _route_back(before: Sequence[int], here: int, goal: int) -> list[int]:
    route = [goal]
    while route[-1] != here:
        route.append(before[route[-1]])
    route.reverse()
    return route


def _fog_route(region: set[int], start: int) -> list[int]:
    """The shortest way through the exit's fog from `start` (left out) to the exit."""
    found, _ = search(EXIT, lambda _cell, _direction, other: other in region)
    route: list[int] = []
    cell = start
    while cell != EXIT:
        cell = min(
            (other for _, other in NEIGHBOURS[cell] if found[other] >= 0),
            key=lambda other: found[other],
        )
        route.append(cell)
    return route


def hint(view: JSON) -> JSON:
    """The strong bot's next step from this view, and the route it plans, as cell names
    (`dir` is None once the runner stands on the exit)."""
    route = plan(view)
    return {
        "dir": direction_between(route[0], route[1]) if len(route) > 1 else None,
        "route": [NAMES[cell] for cell in route],
    }


@register("mazerace", "strong")
def strong_bot(view: JSON, seat: int, rng: random.Random) -> JSON:
    route = plan(view, whole=False)
    return {"dir": direction_between(route[0], route[1])}
