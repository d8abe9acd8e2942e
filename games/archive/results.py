"""The players' results per game (PlayerResult), written as each game ends (play.core.game_end
calls `results_count`) and counted again from every finished game (`results_recount`)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Q,
    Subquery,
    Value,
    When,
)
from django.db.models.lookups import IsNull

from games.models import Game, Move, PlayerResult, Seat

# In the SQL of both Django back ends the site runs on: PostgreSQL, and SQLite for `make run`.
RESULTS_ADD = """
    INSERT INTO games_playerresult (user_id, kind, played, won, lost, timed_out)
    VALUES {values}
    ON CONFLICT (user_id, kind) DO UPDATE SET
        played = games_playerresult.played + excluded.played,
        won = games_playerresult.won + excluded.won,
        lost = games_playerresult.lost + excluded.lost,
        timed_out = games_playerresult.timed_out + excluded.timed_out
"""


def results_count(ended: Sequence[tuple[Game, Sequence[Seat]]]) -> None:
    """Add games that have just ended, each with all its seats placed, to their players'
    results (PlayerResult): two queries at most for the lot. Called by play.core.game_end, the
    one way a game ends; an increment, so that games ending at once for a player each count."""
    finished = [(g, seats) for g, seats in ended if g.status == Game.Status.FINISHED]
    crowded = [g.pk for g, seats in finished if len(seats) > 2]
    timeouts = set(
        Move.objects.filter(game_id__in=crowded, move__timeout=True).values_list("game_id", "seat")
        if crowded
        else []
    )
    tally: dict[tuple[int, str], list[int]] = {}
    for game, seats in finished:
        for seat in seats:
            if seat.user_id is None or seat.place is None:
                continue
            won = seat.place == 1
            if won:
                timed_out = False
            elif len(seats) > 2:
                timed_out = (game.pk, seat.index) in timeouts
            else:
                timed_out = game.result_reason == "timeout"
            played_won_lost_timed = tally.setdefault((seat.user_id, game.kind), [0, 0, 0, 0])
            played_won_lost_timed[0] += 1
            played_won_lost_timed[1 if won else 2] += 1
            played_won_lost_timed[3] += timed_out
    if not tally:
        return
    # In a fixed order, so that two transactions ending games lock the rows in turn.
    params: list[int | str] = []
    for (user_id, kind), figures in sorted(tally.items()):
        params += [user_id, kind, *figures]
    values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(tally))
    with connection.cursor() as cursor:
        cursor.execute(RESULTS_ADD.format(values=values), params)


@transaction.atomic
def results_recount() -> None:
    """Every player's results counted again from every finished game, by the rule of
    results_count: for games stored without play.core.game_end (bench/archive.py fills with
    SQL; tests make games in bulk; `manage.py results_recount`). In one transaction, so that a
    player page never reads the table half counted."""
    # A LIMIT 1 subquery, not EXISTS: PostgreSQL may turn an EXISTS into one scan of every
    # seat, hashed; this stays one probe of seat_unique_index per lost seat.
    third_seat = Subquery(Seat.objects.filter(game=OuterRef("game_id"), index=2).values("id")[:1])
    timeout_move = Move.objects.filter(
        game=OuterRef("game_id"), seat=OuterRef("index"), move__timeout=True
    )
    lost_on_time = Case(
        When(place=1, then=Value(False)),
        When(IsNull(third_seat, False), then=Exists(timeout_move)),
        default=ExpressionWrapper(Q(game__result_reason="timeout"), output_field=BooleanField()),
        output_field=BooleanField(),
    )
    counts = (
        Seat.objects.filter(
            user__isnull=False, place__isnull=False, game__status=Game.Status.FINISHED
        )
        .annotate(lost_on_time=lost_on_time)
        .values("user", "game__kind")
        .annotate(
            played=Count("id"),
            won=Count("id", filter=Q(place=1)),
            lost=Count("id", filter=~Q(place=1)),
            timed_out=Count("id", filter=Q(lost_on_time=True)),
        )
        .order_by()
    )
    PlayerResult.objects.all().delete()
    PlayerResult.objects.bulk_create(
        PlayerResult(
            user_id=c["user"],
            kind=c["game__kind"],
            played=c["played"],
            won=c["won"],
            lost=c["lost"],
            timed_out=c["timed_out"],
        )
        for c in counts.iterator(chunk_size=10_000)
    )
