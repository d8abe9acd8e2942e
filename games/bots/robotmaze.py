"""Robot Maze Race bots.

simple: a random warehouse; then it follows a shortest way to J10 that avoids the crates it has
found (taking every unknown cell for empty), two to four commands a turn, run once.

strong, setting up: barriers of crates across the warehouse (rows, columns or anti-diagonals)
with their gaps at alternate ends, the crates left over where they lengthen the way most; the
best of a few for a searching robot. The way through is about twice as long as usual.

strong, running: it plans on warehouses drawn at random among those consistent with what its
robot has learnt (the crates it bumped, the cells it stood on, exactly 20 crates, none on A1 or
J10, a way from A1 to J10). Some are drawn with the crates scattered at random, some built of
barriers like the ones people (and this bot) build, as many of each as the evidence favours.
Every program and repeat count is screened on a first lot of drawn warehouses; the best two
dozen, with the single steps, are then played out on a fresh lot: after the turn a robot that
knows what the turn taught it walks on one step at a time, learning each crate by bumping it,
to a line a fixed distance nearer J10, and a small model (turns to go from the distance left
and the damage to spare) does the rest. What it is worth is the chance of finishing before the
opponent, whose robot runs through our own warehouse so that its distance to J10 is known
exactly (its pace is guessed at first, then watched). Getting out now is a win, 20 damage a
loss; when the race is tight it takes risks, when it is far ahead it is careful.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import product

from games.bots import JSON, register
from games.engines import robotmaze as rules

SIZE = rules.SIZE
CELLS = SIZE * SIZE
START = 0  # A1
GOAL = CELLS - 1  # J10
COMMANDS = "UDLR"
MAX_DAMAGE = rules.MAX_DAMAGE


def _index(name: str) -> int:
    r, c = rules.parse_cell(name)
    return r * SIZE + c


def _move_table() -> list[int]:
    """_NEXT[cell * 4 + command] is the cell a command leads to, or -1 past the edge."""
    table = []
    for cell in range(CELLS):
        r, c = divmod(cell, SIZE)
        for command in COMMANDS:
            dr, dc = rules.DIRECTIONS[command]
            nr, nc = r + dr, c + dc
            table.append(nr * SIZE + nc if 0 <= nr < SIZE and 0 <= nc < SIZE else -1)
    return table


_NEXT = _move_table()
_NEIGHBOURS = [[t for t in _NEXT[cell * 4 : cell * 4 + 4] if t >= 0] for cell in range(CELLS)]
PROGRAMS = ["".join(p) for length in range(1, 5) for p in product(COMMANDS, repeat=length)]
_PROGRAM_COMMANDS = [tuple(COMMANDS.index(ch) for ch in p) for p in PROGRAMS]


def _distances(blocked: Sequence[int], goal: int = GOAL) -> list[int]:
    """Steps from every cell to `goal` around blocked cells; -1 where there is no way."""
    dist = [-1] * CELLS
    dist[goal] = 0
    frontier = [goal]
    d = 0
    neighbours = _NEIGHBOURS
    while frontier:
        d += 1
        following = []
        for cell in frontier:
            for nxt in neighbours[cell]:
                if dist[nxt] < 0 and not blocked[nxt]:
                    dist[nxt] = d
                    following.append(nxt)
        frontier = following
    return dist


def _blocked(rows: list[str]) -> bytearray:
    return bytearray(1 if ch == rules.CRATE else 0 for row in rows for ch in row)


@dataclass
class Knowledge:
    """What a runner has learnt of the warehouse it runs through."""

    at: int
    damage: int
    clear: set[int]
    crates: set[int]
    turns: int

    @classmethod
    def of(cls, robot: JSON) -> Knowledge:
        return cls(
            at=_index(robot["at"]),
            damage=int(robot["damage"]),
            clear={_index(name) for name in robot["visited"]},
            crates={_index(name) for name in robot["crates"]},
            turns=len(robot["moves"]),
        )


def _in_setup(view: JSON, seat: int) -> bool:
    return view["phase"] == "setup" and not view["set_up"][seat]


# simple -----------------------------------------------------------------------------------


def optimistic_program(knowledge: Knowledge, length: int, rng: random.Random) -> str:
    """The first commands of a shortest path to J10 that avoids the known crates, taking
    every unknown cell for empty (ties broken at random)."""
    blocked = bytearray(CELLS)
    for cell in knowledge.crates:
        blocked[cell] = 1
    dist = _distances(blocked)
    at, program = knowledge.at, ""
    while len(program) < length and at != GOAL and dist[at] > 0:
        choices = [
            (command, _NEXT[at * 4 + i])
            for i, command in enumerate(COMMANDS)
            if _NEXT[at * 4 + i] >= 0 and dist[_NEXT[at * 4 + i]] == dist[at] - 1
        ]
        command, at = rng.choice(choices)
        program += command
    return program or rng.choice(COMMANDS)


@register("robotmaze", "simple")
def simple(view: JSON, seat: int, rng: random.Random) -> JSON:
    if _in_setup(view, seat):
        return {"warehouse": rules.random_warehouse(rng)}
    knowledge = Knowledge.of(view["robots"][seat])
    left = MAX_DAMAGE - knowledge.damage
    length = rng.choice([2, 3, 4]) if left > 6 else 1
    return {"program": optimistic_program(knowledge, length, rng), "runs": 1}


# strong: the warehouse ------------------------------------------------------------------------


def _gap_cut(cells: list[int], gap_at_end: bool, rng: random.Random) -> tuple[set[int], int]:
    """A barrier along `cells` (ordered) with one gap near the chosen end."""
    offset = rng.choice([0, 0, 1]) if len(cells) > 4 else 0
    gap = cells[-1 - offset] if gap_at_end else cells[offset]
    return set(cells) - {gap}, gap


def _rows_barriers(rng: random.Random) -> set[int]:
    top = rng.choice([1, 2, 3])
    bottom = rng.choice([r for r in range(top + 3, 9)])
    first, _ = _gap_cut([top * SIZE + c for c in range(SIZE)], True, rng)
    second, _ = _gap_cut([bottom * SIZE + c for c in range(SIZE)], False, rng)
    return first | second


def _diagonal_barriers(rng: random.Random) -> set[int]:
    """Three anti-diagonals r + c = k: every 4-step changes r + c by one, so each is a cut."""
    near, far = rng.choice([(3, 15), (4, 14), (4, 15), (3, 14), (5, 14), (4, 13)])
    crates: set[int] = set()
    for n, k in enumerate((near, 9, far)):
        cells = [r * SIZE + (k - r) for r in range(SIZE) if 0 <= k - r < SIZE]
        cut, _ = _gap_cut(cells, n % 2 == 1, rng)  # top end, then bottom end, then top end
        crates |= cut
    return crates


def _transpose(crates: set[int]) -> set[int]:
    return {(cell % SIZE) * SIZE + cell // SIZE for cell in crates}


def _naive_turns(blocked: bytearray, rng: random.Random) -> float:
    """Turns a searching robot (the simple bot's way) takes through a warehouse; dying counts
    as a long time."""
    knowledge = Knowledge(at=START, damage=0, clear={START}, crates=set(), turns=0)
    for turn in range(1, 40):
        for command in optimistic_program(knowledge, 3, rng):
            target = _NEXT[knowledge.at * 4 + COMMANDS.index(command)]
            if target < 0 or blocked[target]:
                knowledge.damage += 1
                if target >= 0:
                    knowledge.crates.add(target)
                if knowledge.damage >= MAX_DAMAGE:
                    return 40.0
            else:
                knowledge.at = target
                if target == GOAL:
                    return float(turn)
    return 40.0


def hard_warehouse(rng: random.Random, candidates: int = 24) -> list[str]:
    """A legal warehouse with a long, winding path: barriers of crates whose gaps sit at
    alternate ends, the crates left over placed where they lengthen the path or make dead
    ends. The best of a few candidates for a searching robot is kept."""
    families: list[Callable[[random.Random], set[int]]] = [
        _rows_barriers,
        lambda r: _transpose(_rows_barriers(r)),
        _diagonal_barriers,
        lambda r: _transpose(_diagonal_barriers(r)),
    ]
    free = [cell for cell in range(CELLS) if cell not in (START, GOAL)]
    best: tuple[float, list[str]] | None = None
    for _ in range(candidates):
        crates = rng.choice(families)(rng)
        crates.discard(START)
        crates.discard(GOAL)
        blocked = bytearray(CELLS)
        for cell in crates:
            blocked[cell] = 1
        # Each crate left over goes where it lengthens the path most (of a few tried).
        while len(crates) < rules.CRATES:
            options = rng.sample([c for c in free if not blocked[c]], 8)
            scored = []
            for cell in options:
                blocked[cell] = 1
                length = _distances(blocked)[START]
                blocked[cell] = 0
                if length > 0:
                    scored.append((length + rng.random(), cell))
            if not scored:
                continue
            cell = max(scored)[1]
            blocked[cell] = 1
            crates.add(cell)
        length = _distances(blocked)[START]
        if length < 0:
            continue
        score = length / 6 + _naive_turns(blocked, rng) + rng.random()
        if best is None or score > best[0]:
            best = (score, _rows_of(crates))
    if best is None:
        return rules.random_warehouse(rng)
    assert rules.is_legal_warehouse(best[1])
    return best[1]


def _rows_of(crates: set[int]) -> list[str]:
    return [
        "".join(rules.CRATE if r * SIZE + c in crates else rules.EMPTY for c in range(SIZE))
        for r in range(SIZE)
    ]


# strong: the runner -----------------------------------------------------------------------


@dataclass(frozen=True)
class Tuning:
    samples: int = 96  # warehouses drawn to screen every program
    finalists: int = 24  # programs (with a repeat count) scored again
    final_samples: int = 200  # fresh warehouses drawn for them
    barriers: float = 0.5  # belief, before any evidence, that the warehouse is built of barriers
    bump: float = 0.12  # chance that a step into the unknown bumps, in the turns model
    lost: float = 40.0  # turns a wrecked robot counts for, in the turns model
    reach: int = 8  # steps a turn the turns model may try: more would be blind luck
    temperature: float = 0.5  # how sure the race estimate is, in turns, near the end
    vagueness: float = 0.25  # and how much less sure, per turn still to go
    hurry: float = 0.05  # worth of a turn saved, when the race is decided either way
    detour: float = 4.0  # steps lost to a crate in the way, in the believed distance
    hindsight: float = 0.5  # weight of a drawn warehouse's own distance against the belief
    pace: float = 7.0  # steps and bumps a turn, when playing the game out
    horizon: int = 14  # steps nearer J10 played out, before guessing the rest
    opponent_pace: float = 4.5  # steps a turn we expect of an opponent before watching it
    pace_weight: float = 2.0  # turns of watching the opponent that guess is worth


_LONGEST = 60  # distances beyond this are rare; they are valued as this


@cache
def turns_model(bump: float, lost: float, reach: int) -> list[list[float]]:
    """table[spare][distance]: turns still needed by a robot with `spare` damage to spare
    (1 to 20) that is `distance` steps from the exit, if every step it tries bumps with
    chance `bump` (it then stays, and takes a point of damage) and it picks each turn the
    number of steps (1 to `reach`) that leaves it the fewest turns to go. The program cannot
    be stopped, so the choice is made before the turn; a wreck counts as `lost` turns."""
    table = [[lost] * (_LONGEST + 1) for _ in range(MAX_DAMAGE + 1)]
    for spare in range(1, MAX_DAMAGE + 1):
        table[spare][0] = 0.0
        for distance in range(1, _LONGEST + 1):
            # mass[(made, bumps)] after each step; the best number of steps is kept.
            mass = {(0, 0): 1.0}
            ended = 0.0  # turns owed by the runs that ended (a wreck)
            best = math.inf
            for _ in range(reach):
                nxt: dict[tuple[int, int], float] = {}
                for (made, bumps), m in mass.items():
                    for (dm, db), pm in (((1, 0), 1.0 - bump), ((0, 1), bump)):
                        key = (made + dm, bumps + db)
                        if key[0] == distance:
                            continue  # out: nothing more to pay
                        if key[1] == spare:
                            ended += m * pm * lost
                            continue
                        nxt[key] = nxt.get(key, 0.0) + m * pm
                mass = nxt
                later = sum(
                    m * table[spare - bumps][distance - made] for (made, bumps), m in mass.items()
                )
                best = min(best, 1.0 + ended + later)
            table[spare][distance] = best
    return table


def turns_needed(table: list[list[float]], spare: int, distance: int) -> float:
    if distance <= _LONGEST:
        return table[spare][distance]
    return min(table[spare][_LONGEST] * distance / _LONGEST, table[1][_LONGEST])


def sample_warehouses(knowledge: Knowledge, rng: random.Random, count: int) -> list[bytearray]:
    """Warehouses drawn at random among those consistent with the knowledge: the crates
    found, the cells stood on, exactly 20 crates, none on A1 or J10, a path from A1 to J10."""
    unknown = _unknown(knowledge)
    hidden = max(0, rules.CRATES - len(knowledge.crates))
    base = bytearray(CELLS)
    for cell in knowledge.crates:
        base[cell] = 1
    samples: list[bytearray] = []
    tries = 0
    while len(samples) < count:
        tries += 1
        if tries % (count * 10) == 0 and hidden > 0:
            # Rejection keeps failing: take one crate fewer (rare, and only a model).
            hidden -= 1
        blocked = bytearray(base)
        for cell in rng.sample(unknown, min(hidden, len(unknown))):
            blocked[cell] = 1
        if _distances(blocked)[START] >= 0:
            samples.append(blocked)
    return samples


def _unknown(knowledge: Knowledge) -> list[int]:
    return [
        cell
        for cell in range(CELLS)
        if cell not in knowledge.clear and cell not in knowledge.crates and cell != GOAL
    ]


def _cut_cells(kind: str, index: int) -> list[int]:
    """A straight line of cells across the warehouse that every path from A1 to J10 must
    cross: a row, a column, or an anti-diagonal r + c = index (each step changes r + c by
    one), in order along the line."""
    if kind == "row":
        return [index * SIZE + c for c in range(SIZE)]
    if kind == "column":
        return [r * SIZE + index for r in range(SIZE)]
    return [r * SIZE + index - r for r in range(SIZE) if 0 <= index - r < SIZE]


_CUT_RANGES = {"row": range(1, SIZE - 1), "column": range(1, SIZE - 1), "diagonal": range(2, 17)}


def _random_barriers(rng: random.Random) -> frozenset[int]:
    """Crates as a person builds a hard warehouse: one to three parallel barriers across it,
    each with one gap (often at an end), and maybe a spur or two from the edge."""
    kind = rng.choice(list(_CUT_RANGES))
    lines = rng.sample(list(_CUT_RANGES[kind]), rng.choice([1, 2, 2, 3]))
    crates: set[int] = set()
    for index in lines:
        cells = _cut_cells(kind, index)
        gap = rng.choice([cells[0], cells[-1]]) if rng.random() < 0.5 else rng.choice(cells)
        crates.update(cell for cell in cells if cell != gap)
    for _ in range(rng.choice([0, 0, 1, 2])):
        r, c = rng.randrange(SIZE), rng.choice([0, SIZE - 1])
        dr, dc = (0, 1) if c == 0 else (0, -1)
        if rng.random() < 0.5:
            r, c, dr, dc = c, r, dc, dr
        for k in range(rng.randrange(2, 7)):
            crates.add((r + k * dr) * SIZE + c + k * dc)
    crates -= {START, GOAL}
    if len(crates) > rules.CRATES:
        return _random_barriers(rng)
    return frozenset(crates)


@cache
def barrier_pool(size: int = 6000) -> list[frozenset[int]]:
    """A fixed pool of barrier layouts, the prior of the barrier model (a fixed seed keeps a
    bot's moves reproducible)."""
    rng = random.Random("robotmaze barrier pool")
    return [_random_barriers(rng) for _ in range(size)]


def _log_comb(n: int, k: int) -> float:
    if k < 0 or k > n:
        return -math.inf
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


_OPEN_CELLS = CELLS - 2  # all but A1 and J10


def barrier_weights(knowledge: Knowledge) -> tuple[float, list[float]]:
    """(chance of what we saw if the crates were scattered at random, chance of it under
    each barrier layout of the pool, its other crates scattered at random)."""
    crates, clear = knowledge.crates, knowledge.clear - {START, GOAL}
    scattered = _log_comb(_OPEN_CELLS - len(crates) - len(clear), rules.CRATES - len(crates))
    scattered -= _log_comb(_OPEN_CELLS, rules.CRATES)
    weights = []
    for barrier in barrier_pool():
        if not barrier.isdisjoint(clear):
            weights.append(0.0)
            continue
        free = _OPEN_CELLS - len(barrier)
        extra = rules.CRATES - len(barrier)
        found = len(crates - barrier)
        log = _log_comb(free - found - len(clear), extra - found) - _log_comb(free, extra)
        weights.append(math.exp(log) if log > -math.inf else 0.0)
    return math.exp(scattered), weights


def sample_barriers(
    knowledge: Knowledge, rng: random.Random, count: int, weights: list[float]
) -> list[bytearray]:
    """Warehouses consistent with the knowledge under the barrier model: a layout of the
    pool drawn by its weight, the crates it lacks scattered among the unknown cells."""
    pool = barrier_pool()
    unknown = _unknown(knowledge)
    samples: list[bytearray] = []
    drawn = rng.choices(pool, weights, k=count * 20)
    for barrier in drawn:
        if len(samples) == count:
            break
        blocked = bytearray(CELLS)
        for cell in barrier | knowledge.crates:
            blocked[cell] = 1
        room = [cell for cell in unknown if not blocked[cell]]
        missing = rules.CRATES - len(barrier | knowledge.crates)
        if missing < 0 or missing > len(room):
            continue
        for cell in rng.sample(room, missing):
            blocked[cell] = 1
        if _distances(blocked)[START] >= 0:
            samples.append(blocked)
    return samples


def sample_model(
    knowledge: Knowledge, rng: random.Random, count: int, barrier_prior: float
) -> list[bytearray]:
    """Warehouses for the bot to plan on: from the barrier model and from scattered crates,
    as many of each as the evidence favours (Bayes, with `barrier_prior` before any)."""
    scattered, weights = barrier_weights(knowledge)
    barrier_evidence = barrier_prior * sum(weights) / len(weights)
    total = barrier_evidence + (1 - barrier_prior) * scattered
    share = barrier_evidence / total if total > 0 else 0.0
    structured = sample_barriers(knowledge, rng, round(count * share), weights) if share else []
    return structured + sample_warehouses(knowledge, rng, count - len(structured))


def _value_table(tuning: Tuning, opponent_turns: float) -> list[list[float]]:
    """table[damage][distance]: the worth of ending this turn there, not yet out."""
    model = turns_model(tuning.bump, tuning.lost, tuning.reach)
    return [
        [
            _race_value(
                tuning, 1.0 + turns_needed(model, MAX_DAMAGE - damage, distance), opponent_turns
            )
            for distance in range(CELLS + 1)
        ]
        for damage in range(MAX_DAMAGE)
    ]


def _race_value(tuning: Tuning, ours: float, theirs: float) -> float:
    """Chance that we finish first (we move before their next turn), plus a small hurry.
    Both estimates are rougher the further off they are, so the chance is flatter then."""
    spread = tuning.temperature + tuning.vagueness * (min(ours, 20.0) + min(theirs, 20.0)) / 2
    gap = (theirs - ours + 0.5) / spread
    return 1.0 / (1.0 + math.exp(-gap)) - tuning.hurry * ours


def _opponent_turns(view: JSON, seat: int, tuning: Tuning) -> float:
    """Turns the opponent still needs. Its robot runs through our own warehouse, so we know
    its true distance to J10: a guess of its pace says how long that takes, and as the
    game goes on, the pace it has kept counts more."""
    rows = view["warehouses"][seat]
    robot = view["robots"][1 - seat]
    model = turns_model(tuning.bump, tuning.lost, tuning.reach)
    spare = MAX_DAMAGE - int(robot["damage"])
    if rows is None:
        return 18 / tuning.opponent_pace
    dist = _distances(_blocked(rows))
    left = max(dist[_index(robot["at"])], 1)
    # Before it has shown its pace, a guess: a good runner's pace, slower near its limit.
    expected = max(left / tuning.opponent_pace, turns_needed(model, spare, left))
    turns = len(robot["moves"])
    made = dist[START] - left
    if turns:
        paced = left * turns / max(made, 1)
        weight = turns / (turns + tuning.pace_weight)
        expected = (1 - weight) * expected + weight * paced
    return max(1.0, expected)


def crate_chances(samples: Sequence[bytearray]) -> list[float]:
    """The share of the samples with a crate on each cell."""
    return [sum(column) / len(samples) for column in zip(*samples, strict=True)]


def believed_distances(chances: list[float], crates: set[int], detour: float) -> list[float]:
    """The expected cost to J10 from each cell, as the robot knows the warehouse: a step onto
    a cell costs 1, plus `detour` times the chance of a crate there (for the bump and the way
    round); the known crates cannot be crossed."""
    enter = [math.inf if cell in crates else 1.0 + detour * chances[cell] for cell in range(CELLS)]
    cost = [math.inf] * CELLS
    cost[GOAL] = 0.0
    heap = [(0.0, GOAL)]
    while heap:
        c, cell = heapq.heappop(heap)
        if c > cost[cell]:
            continue
        step = c + enter[cell]  # from a neighbour onto this cell, then on to J10
        for nxt in _NEIGHBOURS[cell]:
            if step < cost[nxt] and nxt not in crates:
                cost[nxt] = step
                heapq.heappush(heap, (step, nxt))
    return [min(c, float(CELLS)) for c in cost]


def _final_scores(
    candidates: list[tuple[int, int]],
    samples: list[bytearray],
    knowledge: Knowledge,
    opponent_turns: float,
    tuning: Tuning,
) -> list[float]:
    """The mean worth of each (program index, runs) on the samples, playing the game out in
    each after the turn: a robot that knows what the program taught it walks on towards J10
    one step at a time, along the shortest way that avoids the crates it knows, and learns
    each crate by bumping it. Its steps and bumps say how many turns and how much damage
    the rest of the way costs, knowing what we will know then (the cost of finding out is
    in the bumps)."""
    win, lose = _ends(tuning)
    model = turns_model(tuning.bump, tuning.lost, tuning.reach)
    truths = [_distances(blocked) for blocked in samples]
    base = 0
    for cell in knowledge.crates:
        base |= _BIT[cell]
    plans: dict[int, list[int]] = {}  # the walk's first plan, by the crates known then
    scores = []
    for p, runs in candidates:
        commands = _PROGRAM_COMMANDS[p] * runs
        total = 0.0
        for blocked, truth in zip(samples, truths, strict=True):
            pos, damage, known = knowledge.at, knowledge.damage, base
            for command in commands:
                target = _NEXT[pos * 4 + command]
                if target < 0 or blocked[target]:
                    damage += 1
                    if target >= 0:
                        known |= _BIT[target]
                    if damage >= MAX_DAMAGE:
                        break
                else:
                    pos = target
                    if pos == GOAL:
                        break
            if pos == GOAL:
                total += win
                continue
            if damage >= MAX_DAMAGE:
                total += lose
                continue
            if known not in plans:
                plans[known] = _layers(known)
            # Every candidate is played out to the same line (`horizon` steps nearer J10
            # than we are now), so that all are judged at the same progress.
            line = max(0, truth[knowledge.at] - tuning.horizon)
            spare = MAX_DAMAGE - damage
            steps, bumps, pos = _walk(blocked, known, plans[known], pos, spare, truth, line)
            damage += bumps
            if damage >= MAX_DAMAGE:
                total += lose
                continue
            # Past the line, the turns model for the rest of the way as the warehouse has
            # it, with the damage to spare (so damage costs turns).
            rest = turns_needed(model, MAX_DAMAGE - damage, truth[pos])
            total += _race_value(tuning, 1.0 + (steps + bumps) / tuning.pace + rest, opponent_turns)
        scores.append(total / len(samples))
    return scores


def _walk_program(knowledge: Knowledge) -> str:
    """The first (up to 4) commands of the played-out robot's walk from where we are."""
    known = bytearray(CELLS)
    for cell in knowledge.crates:
        known[cell] = 1
    dist = _distances(known)
    pos, program = knowledge.at, ""
    while pos != GOAL and len(program) < 4:
        target = next(n for n in _NEIGHBOURS[pos] if 0 <= dist[n] == dist[pos] - 1)
        program += COMMANDS[_NEXT[pos * 4 : pos * 4 + 4].index(target)]
        pos = target
    return program


def _ends(tuning: Tuning) -> tuple[float, float]:
    """The worth of getting out now, and of a wreck (below that of any slow way out)."""
    return _race_value(tuning, 1.0, math.inf), _race_value(tuning, tuning.lost + 10.0, 0.0)


# The played-out robot plans on bit masks: cell (r, c) is bit 11 r + c, so that a shift by
# 1 moves across and by 11 moves down, and the unused bit 10 of each row stops a row from
# running into the next.
_BIT = [1 << (cell // SIZE * 11 + cell % SIZE) for cell in range(CELLS)]
_ALL = sum(_BIT)


def _layers(known: int) -> list[int]:
    """The cells 0, 1, 2... steps from J10 around the crates in the mask `known`, as masks."""
    free = _ALL & ~known
    front = seen = _BIT[GOAL]
    layers = [front]
    while True:
        front = ((front << 1) | (front >> 1) | (front << 11) | (front >> 11)) & free & ~seen
        if not front:
            return layers
        layers.append(front)
        seen |= front


def _layer_of(layers: list[int], cell: int) -> int:
    bit = _BIT[cell]
    return next(k for k, layer in enumerate(layers) if layer & bit)


def _walk(
    blocked: bytearray,
    known: int,
    layers: list[int],
    pos: int,
    spare: int,
    truth: list[int],
    line: int,
) -> tuple[int, int, int]:
    """A robot walks from `pos` towards J10 one step at a time along the shortest way
    (`layers`) around the crates in the mask `known`, which it fills in as it bumps them,
    until it is within `line` steps of J10 (by the true distances `truth`) or has bumped
    `spare` times: (steps, bumps, where it is)."""
    here = _layer_of(layers, pos)
    steps = bumps = 0
    while truth[pos] > line and bumps < spare:
        # The way is only worked out again when no step that may be free leads on: until
        # then the old one is still a good enough way to head (and it saves much time).
        nearer = layers[here - 1]
        target = -1
        for n in _NEIGHBOURS[pos]:
            if nearer & _BIT[n] and not known & _BIT[n]:
                target = n
                break
        if target < 0:
            layers = _layers(known)
            here = _layer_of(layers, pos)
            continue
        if blocked[target]:
            bumps += 1
            known |= _BIT[target]
        else:
            pos = target
            here -= 1
            steps += 1
    return steps, bumps, pos


def _score(
    programs: Sequence[int],
    samples: list[bytearray],
    knowledge: Knowledge,
    table: list[list[float]],
    tuning: Tuning,
    believed: list[float],
) -> list[float]:
    """A quick total worth over the samples of each program (an index into PROGRAMS) run 1,
    2, 3 and 4 times, scores[i * 4 + runs - 1] for programs[i], from where it ends: its
    distance in the sample (what it will learn) blended with the distance it believes now
    (what it must still find out)."""
    win, lose = _ends(tuning)
    weight = tuning.hindsight
    scores = [0.0] * (len(programs) * 4)
    for blocked in samples:
        dist = [
            min(CELLS, round(weight * d + (1 - weight) * b)) if d >= 0 else CELLS
            for d, b in zip(_distances(blocked), believed, strict=True)
        ]
        for i, p in enumerate(programs):
            commands = _PROGRAM_COMMANDS[p]
            pos, damage, end = knowledge.at, knowledge.damage, 0.0
            for run in range(i * 4, i * 4 + 4):
                if not end:
                    for command in commands:
                        target = _NEXT[pos * 4 + command]
                        if target < 0 or blocked[target]:
                            damage += 1
                            if damage >= MAX_DAMAGE:
                                end = lose
                                break
                        else:
                            pos = target
                            if pos == GOAL:
                                end = win
                                break
                scores[run] += end or table[damage][dist[pos]]
    return scores


def choose_program(
    view: JSON, seat: int, rng: random.Random, tuning: Tuning | None = None
) -> tuple[str, int]:
    """The program and repeat count with the best chance of winning the race."""
    tuning = tuning or Tuning()
    knowledge = Knowledge.of(view["robots"][seat])
    opponent = _opponent_turns(view, seat, tuning)
    table = _value_table(tuning, opponent)
    every = range(len(PROGRAMS))
    samples = sample_model(knowledge, rng, tuning.samples, tuning.barriers)
    believed = believed_distances(crate_chances(samples), knowledge.crates, tuning.detour)
    screen = _score(every, samples, knowledge, table, tuning, believed)
    # The best few are scored again on fresh warehouses: the best of many noisy scores is
    # mostly luck, and fresh samples do not share it.
    ranked = sorted(range(len(screen)), key=screen.__getitem__, reverse=True)
    finalists = [divmod(i, 4) for i in ranked[: tuning.finalists]]
    # Also a single step each way, and the first steps of the way the played-out robot
    # walks: the careful moves the screen may undervalue (and playing the rest out from
    # there is then at worst as good as that robot).
    walk = _walk_program(knowledge)
    for p in [*range(4), *(PROGRAMS.index(walk[:n]) for n in range(2, len(walk) + 1))]:
        if (p, 0) not in finalists:
            finalists.append((p, 0))
    samples = sample_model(knowledge, rng, tuning.final_samples, tuning.barriers)
    candidates = [(p, run + 1) for p, run in finalists]
    final = _final_scores(candidates, samples, knowledge, opponent, tuning)
    best = max(final)
    p, runs = rng.choice([c for c, s in zip(candidates, final, strict=True) if s >= best - 1e-9])
    return PROGRAMS[p], runs


@register("robotmaze", "strong")
def strong(view: JSON, seat: int, rng: random.Random) -> JSON:
    if _in_setup(view, seat):
        return {"warehouse": hard_warehouse(rng)}
    program, runs = choose_program(view, seat, rng)
    return {"program": program, "runs": runs}
