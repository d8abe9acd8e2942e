"""Seat.finished_at, a copy of the game's, and its index (seat_user_finished) in place of
seat_user_game; and PlayerResult, a player's results per game, counted from the games already
over. Both kept by services.game_end from now on."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
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


def seats_finished_at(apps, schema_editor):
    """Before the index is built: one pass over the seats, then one sort."""
    Game = apps.get_model("games", "Game")
    Seat = apps.get_model("games", "Seat")
    finished_at = Game.objects.filter(pk=OuterRef("game_id")).values("finished_at")[:1]
    Seat.objects.filter(game__status__in=["finished", "aborted"]).update(
        finished_at=Subquery(finished_at)
    )


def player_results(apps, schema_editor):
    """The rule of games.archive.results_recount as it stood at this migration."""
    Move = apps.get_model("games", "Move")
    Seat = apps.get_model("games", "Seat")
    PlayerResult = apps.get_model("games", "PlayerResult")
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
        Seat.objects.filter(user__isnull=False, place__isnull=False, game__status="finished")
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


class Migration(migrations.Migration):
    dependencies = [
        ("games", "0004_seat_seat_user_game"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="seat",
            name="finished_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(seats_finished_at, migrations.RunPython.noop),
        migrations.RemoveIndex(
            model_name="seat",
            name="seat_user_game",
        ),
        migrations.AddIndex(
            model_name="seat",
            index=models.Index(
                fields=["user", "-finished_at", "-game"],
                include=("place",),
                name="seat_user_finished",
            ),
        ),
        migrations.CreateModel(
            name="PlayerResult",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("cornmaze", "Corn maze"),
                            ("robotmaze", "Robot Maze Race"),
                            ("mazerace", "Maze Race"),
                        ],
                        max_length=16,
                    ),
                ),
                ("played", models.PositiveIntegerField(default=0)),
                ("won", models.PositiveIntegerField(default=0)),
                ("lost", models.PositiveIntegerField(default=0)),
                ("timed_out", models.PositiveIntegerField(default=0)),
                (
                    "user",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="results",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("user", "kind"), name="player_result_unique_kind"
                    )
                ],
            },
        ),
        migrations.RunPython(player_results, migrations.RunPython.noop),
    ]
