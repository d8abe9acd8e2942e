"""Ratings (issue 15, part 3): every finished rated game between registered players and bots
changes their ratings from their places, in the transaction that ends it; guests' games,
aborted and unrated games change nothing; the recompute gives the same numbers as the updates
made as the games ended (and a property test says so of any sequence of games); the player
page, the leaderboard and a game's end show them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.accounts.guests import guest_create
from games.archive import rating_reads, ratings
from games.models import Game, Profile, Rating, RatingChange, Seat
from games.play import core
from tests.conftest import a_legal_move, seat_user, to_move
from tests.test_archive import T0, bulk_finished

pytestmark = pytest.mark.django_db


def registered(make_user, name: str | None = None) -> User:
    user = make_user(name)
    Profile.objects.create(user=user)
    return user


def game_with(players: Sequence[User | str], *, kind: str = "cornmaze", rated: bool = True) -> Game:
    """A started game with these people (users) and bots (levels) in its seats, in order."""
    first = players[0]
    assert isinstance(first, User)
    options: dict[str, Any] = {"size": 8} if kind == "cornmaze" else {}
    clock = "P3D"
    if kind == "mazerace":
        options = {"mode": "slow"}
    with core.bot_tasks_paused():
        game = core.game_create(
            kind=kind,
            creator=first,
            options=options,
            clock_choice=clock,
            seats=[core.SeatPlan(bot=p if isinstance(p, str) else "") for p in players],
            rated=rated,
        )
        for player in players[1:]:
            if isinstance(player, User):
                core.game_join(game_id=game.pk, user=player)
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    return game


def end_with(game: Game, places: Sequence[int] | None, *, at=None) -> Game:
    """End the game as a last move does: under its lock, through play.core.game_end."""
    with transaction.atomic():
        locked = core.game_locked(game.pk)
        core.game_end(
            locked,
            at=at or T0,
            reason="exit" if places is not None else "aborted",
            places=places,
        )
        locked.save()
    game.refresh_from_db()
    return game


def rating_of(who: User | str, kind: str = "cornmaze") -> Rating:
    if isinstance(who, str):
        return Rating.objects.get(bot=who, kind=kind)
    return Rating.objects.get(user=who, kind=kind)


def snapshot() -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """Every rating and every change, by who and which game: what a recompute must give again."""
    current = set(
        Rating.objects.values_list("user_id", "bot", "kind", "mu", "sigma", "ordinal", "games")
    )
    changes = set(
        RatingChange.objects.values_list(
            "game_id",
            "seat",
            "rating__user_id",
            "rating__bot",
            "seq",
            "place",
            "mu_before",
            "sigma_before",
            "mu_after",
            "sigma_after",
        )
    )
    return current, changes


# --- what a game's end changes -----------------------------------------------------------------


def test_a_rated_game_changes_both_ratings_from_the_places(make_user):
    ann, bob = registered(make_user, "ann"), registered(make_user, "bob")
    game = end_with(game_with([ann, bob]), [2, 1])
    assert game.rated and game.rating_seq == 1
    won, lost = rating_of(bob), rating_of(ann)
    assert won.mu > ratings.MU > lost.mu
    assert won.sigma < ratings.SIGMA and lost.sigma < ratings.SIGMA
    assert (won.games, lost.games) == (1, 1)
    assert won.ordinal == pytest.approx(won.mu - 3 * won.sigma)
    changes = {c.seat: c for c in RatingChange.objects.filter(game=game)}
    assert set(changes) == {0, 1}
    assert (changes[1].mu_before, changes[1].sigma_before) == (ratings.MU, ratings.SIGMA)
    assert (changes[1].mu_after, changes[1].sigma_after) == (won.mu, won.sigma)
    assert (changes[0].place, changes[1].place) == (2, 1)
    # The next game starts from there.
    second = end_with(game_with([ann, bob]), [1, 2])
    assert second.rating_seq == 2
    change = RatingChange.objects.get(game=second, seat=1)
    assert (change.mu_before, change.sigma_before) == (won.mu, won.sigma)
    assert rating_of(bob).games == 2


def test_places_among_many_players_and_shared_places(make_user):
    people = [registered(make_user) for _ in range(4)]
    end_with(game_with(people), [3, 1, 3, 2])
    mus = [rating_of(p).mu for p in people]
    assert mus[1] > mus[3] > mus[0]
    assert mus[0] == mus[2]  # equal places, equal starts: equal ratings


def test_bots_are_rated_players_one_per_level(make_user):
    ann = registered(make_user, "ann")
    end_with(game_with([ann, "simple"]), [2, 1])
    end_with(game_with([ann, "strong"]), [2, 1])
    simple, strong = rating_of("simple"), rating_of("strong")
    assert simple.user is None and simple.games == 1 and strong.games == 1
    assert rating_of(ann).games == 2
    # A level twice in one game is rated once, at its better seat.
    game = end_with(game_with([ann, "simple", "simple"]), [2, 3, 1])
    assert rating_of("simple").games == 2
    assert set(RatingChange.objects.filter(game=game).values_list("seat", flat=True)) == {0, 2}


def test_guests_unrated_games_aborted_games_and_bots_alone_change_nothing(make_user):
    ann, bob = registered(make_user, "ann"), registered(make_user, "bob")
    guest = guest_create()
    with_guest = game_with([ann, guest])
    assert not with_guest.rated  # the guest's join turned it off, and the page says so
    end_with(with_guest, [1, 2])
    guests_own = game_with([guest, ann])
    assert not guests_own.rated
    end_with(guests_own, [1, 2])
    unrated = game_with([ann, bob], rated=False)
    end_with(unrated, [1, 2])
    aborted = end_with(game_with([ann, bob]), None)
    assert aborted.status == Game.Status.ABORTED and aborted.rating_seq is None
    with core.bot_tasks_paused():
        bots_only = core.game_create(
            kind="cornmaze",
            creator=ann,
            options={"size": 8},
            clock_choice="P3D",
            seats=[core.SeatPlan(bot="simple"), core.SeatPlan(bot="strong")],
        )
    assert not bots_only.rated
    end_with(bots_only, [1, 2])
    assert not Rating.objects.exists() and not RatingChange.objects.exists()
    assert not Game.objects.filter(rating_seq__isnull=False).exists()


def test_a_finished_game_that_may_not_be_rated_says_so(make_user):
    ann, bob = registered(make_user, "ann"), registered(make_user, "bob")
    game = game_with([ann, bob])
    # bob became a guest after joining (as a row changed by hand could): the end checks again.
    Profile.objects.filter(user=bob).update(is_guest=True)
    game = end_with(game, [1, 2])
    assert not game.rated and game.rating_seq is None
    assert not Rating.objects.exists()


def test_games_ending_in_one_sweep_are_rated_in_finish_order(make_user):
    ann, bob, cat = (registered(make_user, n) for n in ("ann", "bob", "cat"))
    games = [game_with([ann, bob]), game_with([bob, cat])]
    for game in games:  # a move first: a game with no move would be aborted
        seat = to_move(game)
        core.move_submit(
            game_id=game.pk,
            user=seat_user(game, seat),
            number=0,
            move={"shifts": a_legal_move(game)},
        )
    # Both clocks ran out: the sweep ends the two games in one batch.
    Seat.objects.filter(game__in=games, deadline__isnull=False).update(
        deadline=T0 - timedelta(days=1)
    )
    with transaction.atomic():
        expired = [
            (core.game_locked(s.game_id), s.index)
            for s in Seat.objects.filter(game__in=games, deadline__isnull=False).order_by("-game")
        ]
        assert core.seats_time_out(expired) == 2
    for game in games:
        game.refresh_from_db()
        assert game.status == Game.Status.FINISHED and game.result_reason == "timeout"
    # Numbered in the batch's finish order (equal times: by id), whatever the batch's order.
    assert [g.rating_seq for g in games] == [1, 2]
    assert rating_of(bob).games == 2
    before = snapshot()
    ratings.ratings_recompute()
    assert snapshot() == before


# --- the recompute -----------------------------------------------------------------------------


def test_recompute_gives_the_numbers_of_the_updates(make_user):
    people = [registered(make_user) for _ in range(5)]
    guest = guest_create()
    plan: list[tuple[list[User | str], list[int] | None, str]] = [
        ([people[0], people[1]], [1, 2], "cornmaze"),
        ([people[1], people[2], "simple"], [2, 2, 1], "cornmaze"),
        ([people[0], "strong"], [2, 1], "robotmaze"),
        ([people[3], people[0], people[4], "simple", "simple"], [4, 1, 2, 3, 5], "cornmaze"),
        ([people[2], guest], [1, 2], "cornmaze"),
        ([people[1], people[0]], None, "cornmaze"),
        ([people[4], people[1]], [1, 2], "mazerace"),
    ]
    # Ends at equal times, and in an order that is not the games' ids: the order is the ends'.
    games = [game_with(players, kind=kind) for players, _, kind in plan]
    for game, (_, places, _) in reversed(list(zip(games, plan, strict=True))):
        end_with(game, places, at=T0)
    before = snapshot()
    assert len(before[1]) == 2 + 3 + 2 + 4 + 0 + 0 + 2
    out = StringIO()
    call_command("ratings_recompute", stdout=out)
    assert "5 rated games" in out.getvalue()
    assert snapshot() == before
    # And again: a recompute changes nothing.
    ratings.ratings_recompute()
    assert snapshot() == before


def test_recompute_rates_finished_games_loaded_by_sql(make_user):
    ann, bob = registered(make_user, "ann"), registered(make_user, "bob")
    guest = guest_create()
    loaded = bulk_finished(3, [ann, bob], winner=0)
    with_guest = bulk_finished(1, [ann, guest], winner=0)
    bulk_finished(1, [ann, bob], status="aborted", winner=None)
    assert ratings.ratings_recompute() == 3
    assert rating_of(ann).games == 3 and rating_of(ann).mu > rating_of(bob).mu
    # Numbered in finish order, oldest first: bulk_finished made the first one the newest.
    seqs = [Game.objects.get(pk=g.pk).rating_seq for g in loaded]
    assert seqs == [3, 2, 1]
    assert not Game.objects.get(pk=with_guest[0].pk).rated
    # Then a game that ends on the site follows them.
    game = end_with(game_with([ann, bob]), [1, 2])
    assert game.rating_seq == 4 and rating_of(ann).games == 4
    before = snapshot()
    ratings.ratings_recompute()
    assert snapshot() == before


PLAYERS = ["p0", "p1", "p2", "p3", "simple", "strong"]


@st.composite
def finished_games(draw: Any) -> list[tuple[str, list[str], list[int] | None, bool]]:
    """A sequence of games: kind, who sits where, the places (None: aborted), rated or not."""
    games = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["cornmaze", "robotmaze"]))
        size = 2 if kind == "robotmaze" else draw(st.integers(2, 6))
        people = draw(
            st.lists(st.sampled_from(PLAYERS[:4]), min_size=1, max_size=size, unique=True)
        )
        bots = draw(st.lists(st.sampled_from(PLAYERS[4:]), min_size=size - len(people)))
        seats = draw(st.permutations(people + bots[: size - len(people)]))
        if isinstance(seats[0], str) and seats[0] in PLAYERS[4:]:
            seats = sorted(seats, key=lambda who: who in PLAYERS[4:])  # a person creates it
        aborted = draw(st.integers(0, 9)) == 0
        places = (
            None if aborted else draw(st.lists(st.integers(1, size), min_size=size, max_size=size))
        )
        games.append((kind, list(seats), places, draw(st.booleans()) or True))
    return games


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=finished_games(), reverse=st.booleans())
def test_any_sequence_of_games_recomputes_to_the_incremental_ratings(plan, reverse, make_user):
    with transaction.atomic():
        users = {name: registered(make_user) for name in PLAYERS[:4]}
        made = []
        for kind, seats, places, rated in plan:
            who = [users.get(s, s) for s in seats]
            made.append((game_with(who, kind=kind, rated=rated), places))
        for game, places in reversed(made) if reverse else made:
            end_with(game, places, at=T0)
        before = snapshot()
        ratings.ratings_recompute()
        assert snapshot() == before
        transaction.set_rollback(True)


# --- the pages ---------------------------------------------------------------------------------


def test_the_game_end_shows_each_players_change(client, make_user):
    ann, bob = registered(make_user, "ann"), registered(make_user, "bob")
    running = game_with([ann, bob])
    page = client.get(f"/games/{running.pk}/").content.decode()
    assert 'id="rated"' in page and "Rated game." in page and "rating-change" not in page
    game = end_with(running, [1, 2])
    page = client.get(f"/games/{game.pk}/").content.decode()
    before = ratings.display(ratings.MU, ratings.SIGMA)
    up = ratings.display(rating_of(ann).mu, rating_of(ann).sigma)
    down = ratings.display(rating_of(bob).mu, rating_of(bob).sigma)
    shown = re.findall(r'class="rating-change">rating (\d+) \(<span class="(\w*)">([^<]+)<', page)
    assert shown == [
        (str(up), "up", f"+{up - before}"),
        (str(down), "down" if down < before else "up" if down > before else "", shown[1][2]),
    ]
    unrated = end_with(game_with([ann, bob], rated=False), [1, 2])
    page = client.get(f"/games/{unrated.pk}/").content.decode()
    assert "Not rated." in page and "rating-change" not in page


def test_the_new_game_form_has_a_rated_checkbox_on_by_default(client, make_user):
    ann = registered(make_user, "ann")
    client.force_login(ann)
    page = client.get("/new/cornmaze/").content.decode()
    assert re.search(r'<input type="checkbox" name="rated"[^>]*checked', page)
    client.post("/new/cornmaze/", {"size": "8", "seats": "2", "clock": "P3D"})
    client.post("/new/cornmaze/", {"size": "8", "seats": "2", "clock": "P3D", "rated": "on"})
    assert list(Game.objects.order_by("id").values_list("rated", flat=True)) == [False, True]
    # A guest's game is never rated.
    anybody = Client()
    anybody.post("/new/cornmaze/", {"size": "8", "seats": "2", "clock": "P3D", "rated": "on"})
    assert Game.objects.order_by("id").last().rated is False  # type: ignore[union-attr]


def test_the_player_page_shows_each_rating_and_its_chart(client, make_user):
    ann, bob = registered(make_user, "ann"), registered(make_user, "bob")
    page = client.get("/players/ann/").content.decode()
    assert 'id="ratings"' not in page
    for n in range(6):
        end_with(game_with([ann, bob]), [1, 2] if n % 3 else [2, 1], at=T0 + timedelta(hours=n))
    end_with(game_with([ann, "strong"], kind="robotmaze"), [2, 1])
    page = client.get("/players/ann/").content.decode()
    section = page.split('id="ratings"')[1].split("</section>")[0]
    corn = section.split('data-kind="cornmaze"')[1].split("</li>")[0]
    rating = rating_of(ann)
    assert (
        f'<strong class="rating-value">{ratings.display(rating.mu, rating.sigma)}</strong>' in corn
    )
    assert f"± {ratings.uncertainty(rating.sigma)}" in corn and "6 rated games" in corn
    points = re.search(r'<polyline class="rating-line" points="([^"]+)"', corn)
    assert points is not None and len(points.group(1).split()) == 7  # the start, then 6 games
    assert 'role="img"' in corn and "Corn maze rating over 6 games" in corn
    robots = section.split('data-kind="robotmaze"')[1].split("</li>")[0]
    assert re.search(r"\b1 rated game\b", robots), robots
    assert "(from 5 rated games)" in robots, robots
    # The history is the newest HISTORY_POINTS games.
    players = rating_reads.player_ratings(ann.pk)
    assert [r.kind for r in players] == ["cornmaze", "robotmaze"]
    assert players[0].history[-1] == ratings.display(rating.mu, rating.sigma)


def test_the_history_drawn_is_the_newest_games(make_user, monkeypatch):
    ann, bob = registered(make_user, "ann"), registered(make_user, "bob")
    monkeypatch.setattr(rating_reads, "HISTORY_POINTS", 3)
    for n in range(5):
        end_with(game_with([ann, bob]), [1, 2], at=T0 + timedelta(hours=n))
    changes = list(
        RatingChange.objects.filter(rating__user=ann)
        .order_by("seq")
        .values_list("mu_before", "sigma_before", "mu_after", "sigma_after")
    )
    (shown,) = rating_reads.player_ratings(ann.pk)
    assert shown.history == [ratings.display(*changes[2][:2])] + [
        ratings.display(*c[2:]) for c in changes[2:]
    ]
    assert "the last 3 of 5 games" in shown.chart


def test_the_leaderboard_lists_players_with_enough_games_best_first_in_pages(client, make_user):
    people = [registered(make_user, f"lead{n:02d}") for n in range(56)]
    # Each plays 5 games against the next one; the lower number wins.
    for n, person in enumerate(people):
        other = people[(n + 1) % len(people)]
        first = min(person, other, key=lambda u: u.username)
        bulk_finished(5, [person, other], winner=[person, other].index(first))
    newcomer = registered(make_user, "newcomer")
    bulk_finished(2, [newcomer, "simple"], winner=0)
    ratings.ratings_recompute()
    page = client.get("/leaderboard/cornmaze/")
    assert page.status_code == 200
    html = page.content.decode()
    names = re.findall(r'<th scope="row"><a href="/players/([^/]+)/">', html)
    ranks = [int(r) for r in re.findall(r'<td class="num rank">(\d+)</td>', html)]
    assert len(names) == rating_reads.LEADERBOARD_PAGE and ranks == list(range(1, 51))
    assert "newcomer" not in html and "Bot (simple)" not in html  # fewer than 5 games
    best = sorted(
        Rating.objects.filter(kind="cornmaze", games__gte=5), key=lambda r: (-r.ordinal, r.id)
    )
    assert names == [r.user.username for r in best[:50] if r.user]
    after = re.search(r'href="\?after=(\d+)" rel="next"', html)
    assert after is not None
    second = client.get(f"/leaderboard/cornmaze/?after={after.group(1)}").content.decode()
    assert [int(r) for r in re.findall(r'<td class="num rank">(\d+)</td>', second)] == list(
        range(51, 57)
    )
    assert 'rel="next"' not in second and "Back to the top" in second
    assert client.get("/leaderboard/chess/").status_code == 404
    empty = client.get("/leaderboard/mazerace/").content.decode()
    assert 'id="leaderboard-empty"' in empty
