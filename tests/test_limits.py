"""Limits on abuse (games/web/limits.py): guests, sign-ups, wrong passwords, verification and reset
mails, joins, new games and moves, each counted per client, address, account or seat; the
client's address as far as trusted proxies say; 429 with a sentence and Retry-After."""

from __future__ import annotations

import re
from collections.abc import Iterator

import hypothesis
import pytest
import time_machine
from django.contrib.auth.models import User
from django.core import mail
from django.db import connection
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse
from django_ratelimit.core import _split_rate
from hypothesis import strategies as st

from games.accounts.guests import guest_create
from games.engines.mazerace import STEP_MS
from games.models import Game, Profile
from games.play import core
from games.web import limits

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"


@pytest.fixture(autouse=True)
def still_time() -> Iterator[None]:
    """Counts are kept in fixed windows: with the clock held, no window ends mid-test."""
    with time_machine.travel("2031-03-04 05:06:07+00:00", tick=False):
        yield


@pytest.fixture
def rates(settings):
    """Set some rates for one test; the others stay the site's."""

    def set_rates(**overrides: str) -> None:
        settings.RATE_LIMITS = {**settings.RATE_LIMITS, **overrides}

    return set_rates


def assert_limited(response, sentence: str) -> None:
    assert response.status_code == 429
    seconds = int(response["Retry-After"])
    assert seconds >= 1
    text = response.content.decode()
    assert sentence in text
    assert re.search(r"Try again in \d+ (second|seconds|minutes|hours)\.", text), text


def signup_data(name: str, email: str = "") -> dict[str, str]:
    return {"username": name, "email": email, "password1": PASSWORD, "password2": PASSWORD}


# Whose address


def test_without_proxies_the_peer_is_the_client_whatever_it_forwards(settings) -> None:
    settings.TRUSTED_PROXIES = 0
    request = RequestFactory().get(
        "/", REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="198.51.100.1, 198.51.100.2"
    )
    assert limits.client_ip(request) == "203.0.113.9"


@pytest.mark.parametrize(
    ("proxies", "forwarded", "client"),
    [
        (1, "198.51.100.1", "198.51.100.1"),
        # Whatever the client wrote stands left of what our proxy appended.
        (1, "10.9.9.9, 6.6.6.6, 198.51.100.1", "198.51.100.1"),
        (2, "6.6.6.6, 198.51.100.1, 192.0.2.50", "198.51.100.1"),
        (1, "2001:db8::1", "2001:db8::1"),
        (1, "", "192.0.2.10"),  # no header: the peer
        (1, "not-an-address", "192.0.2.10"),
    ],
)
def test_with_proxies_the_client_is_counted_from_the_right(
    settings, proxies: int, forwarded: str, client: str
) -> None:
    settings.TRUSTED_PROXIES = proxies
    request = RequestFactory().get("/", REMOTE_ADDR="192.0.2.10", HTTP_X_FORWARDED_FOR=forwarded)
    assert limits.client_ip(request) == client


def test_a_forged_forwarded_for_does_not_escape_the_limit(settings, rates) -> None:
    settings.TRUSTED_PROXIES = 0
    rates(signup_client="2/h")
    for i in range(2):
        response = Client().post(
            reverse("signup"), signup_data(f"runner{i}"), HTTP_X_FORWARDED_FOR=f"10.0.0.{i}"
        )
        assert response.status_code == 302

    response = Client().post(
        reverse("signup"), signup_data("runner9"), HTTP_X_FORWARDED_FOR="10.0.0.99"
    )

    assert_limited(response, "Too many sign-ups came from your network")
    assert not User.objects.filter(username="runner9").exists()


def test_behind_a_proxy_each_client_has_its_own_count(settings, rates) -> None:
    settings.TRUSTED_PROXIES = 1
    rates(signup_client="1/h")
    proxy = "192.0.2.1"  # every request reaches the site from the proxy
    first = Client(REMOTE_ADDR=proxy).post(
        reverse("signup"), signup_data("one"), HTTP_X_FORWARDED_FOR="198.51.100.1"
    )
    other = Client(REMOTE_ADDR=proxy).post(
        reverse("signup"), signup_data("two"), HTTP_X_FORWARDED_FOR="198.51.100.2"
    )
    # The first client again, writing a fake address in front of the one the proxy appends.
    again = Client(REMOTE_ADDR=proxy).post(
        reverse("signup"), signup_data("three"), HTTP_X_FORWARDED_FOR="7.7.7.7, 198.51.100.1"
    )

    assert (first.status_code, other.status_code) == (302, 302)
    assert_limited(again, "Too many sign-ups")


# The answer


def test_a_limited_htmx_request_gets_the_sentence_alone(make_cornmaze, rates) -> None:
    rates(move_seat="1/5s")
    game = make_cornmaze()
    seat = game.seats.get(index=0)
    client = Client()
    client.force_login(seat.user)
    url = reverse("game_move", args=[game.pk])
    client.post(url, {"ply": "999"}, headers={"HX-Request": "true"})

    response = client.post(url, {"ply": "999"}, headers={"HX-Request": "true"})

    assert response.status_code == 429
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode().startswith("Too many moves in a short time")
    assert int(response["Retry-After"]) >= 1


def test_a_limited_page_request_gets_a_page(rates) -> None:
    rates(signup_client="1/h")
    Client().post(reverse("signup"), signup_data("first"))
    response = Client().post(reverse("signup"), signup_data("second"))
    assert_limited(response, "Too many sign-ups")
    assert b"<h1>Please wait a little</h1>" in response.content


def test_the_sentence_says_when(rates) -> None:
    rates(signup_client="1/2h")
    Client().post(reverse("signup"), signup_data("first"))
    response = Client().post(reverse("signup"), signup_data("second"))
    seconds = int(response["Retry-After"])
    assert 0 < seconds <= 7200
    if seconds >= 90 * 60:
        expected = f"{-(-seconds // 3600)} hours"
    elif seconds >= 90:
        expected = f"{-(-seconds // 60)} minutes"
    else:
        expected = f"{seconds} second"
    assert f"Try again in {expected}" in response.content.decode()


def test_a_dead_cache_lets_requests_through(settings) -> None:
    """The limits' cache gone (a port where nothing listens): the site works on, uncounted."""
    settings.CACHES = {
        **settings.CACHES,
        "dead": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
        },
    }
    settings.RATELIMIT_USE_CACHE = "dead"
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "signup_client": "1/h"}
    for name in ("first", "second"):
        assert Client().post(reverse("signup"), signup_data(name)).status_code == 302


# Guests


NEW_CORNMAZE = {"size": "8", "clock": "P3D", "seats": "2"}


def test_guests_per_client(rates) -> None:
    rates(guest_client="3/10m")
    url = reverse("game_new", args=["cornmaze"])
    for _ in range(3):
        # Each a new browser: a new guest.
        assert Client().post(url, NEW_CORNMAZE).status_code == 302
    assert Profile.objects.filter(is_guest=True).count() == 3

    response = Client().post(url, NEW_CORNMAZE)

    assert_limited(response, "Too many new guests came from your network")
    assert Profile.objects.filter(is_guest=True).count() == 3
    assert Game.objects.count() == 3
    # Another network is not held up.
    assert Client(REMOTE_ADDR="203.0.113.30").post(url, NEW_CORNMAZE).status_code == 302


def test_guest_names_never_run_out() -> None:
    """Every name of today's space taken (Guest 1 to Guest 99999): newcomers still get one."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO auth_user (username, password, first_name, last_name, email,"
                " is_superuser, is_staff, is_active, date_joined)"
                " SELECT 'Guest ' || n, '!', '', '', '', false, false, true, now()"
                " FROM generate_series(1, 99999) AS n"
            )
    else:
        User.objects.bulk_create(
            [User(username=f"Guest {n}", password="!") for n in range(1, 100_000)],
            batch_size=10_000,
        )
    assert User.objects.filter(username__startswith="Guest ").count() == 99_999
    for _ in range(5):
        guest = guest_create()
        assert re.fullmatch(r"Guest \d{6,}", guest.username), guest.username
        assert guest.profile.is_guest


def test_guest_names_look_the_same() -> None:
    assert re.fullmatch(r"Guest \d{5}", guest_create().username)


# Sign-up and sign-in


def test_sign_ups_per_client() -> None:
    (limit, _period) = _split_rate(limits.rate("signup_client"))
    for i in range(limit):
        assert Client().post(reverse("signup"), signup_data(f"person{i}")).status_code == 302
    response = Client().post(reverse("signup"), signup_data("one-too-many"))
    assert_limited(response, "Too many sign-ups came from your network")
    assert not User.objects.filter(username="one-too-many").exists()


def test_wrong_passwords_lock_the_account_even_for_the_right_one(make_user) -> None:
    make_user("minos", password=PASSWORD)
    (limit, _period) = _split_rate(limits.rate("login_failed_account"))
    for i in range(limit):
        # From many addresses, the name written in any way that signs in: the account's count.
        name = ("minos", "MINOS", "\uff4d\uff49\uff4e\uff4f\uff53")[i % 3]  # full-width
        response = Client(REMOTE_ADDR=f"198.51.100.{i}").post(
            reverse("login"), {"username": name, "password": f"guess {i}"}
        )
        assert response.status_code == 200

    response = Client().post(reverse("login"), {"username": "MINOS", "password": PASSWORD})

    assert_limited(response, "Too many wrong passwords were tried for this account")
    # Another account from elsewhere is not held up.
    make_user("ariadne", password=PASSWORD)
    fine = Client(REMOTE_ADDR="203.0.113.7").post(
        reverse("login"), {"username": "ariadne", "password": PASSWORD}
    )
    assert fine.status_code == 302


def test_wrong_passwords_per_client(make_user, rates) -> None:
    rates(login_failed_client="3/15m")
    make_user("minos", password=PASSWORD)
    client = Client(REMOTE_ADDR="203.0.113.8")
    for i in range(3):
        client.post(reverse("login"), {"username": f"nobody{i}", "password": "x"})

    response = client.post(reverse("login"), {"username": "minos", "password": PASSWORD})

    assert_limited(response, "Too many wrong passwords were tried from your network")
    right = Client(REMOTE_ADDR="203.0.113.99").post(
        reverse("login"), {"username": "minos", "password": PASSWORD}
    )
    assert right.status_code == 302


def test_the_right_password_does_not_count(make_user) -> None:
    make_user("minos", password=PASSWORD)
    (limit, _period) = _split_rate(limits.rate("login_failed_account"))
    for _ in range(limit + 2):
        response = Client().post(reverse("login"), {"username": "minos", "password": PASSWORD})
        assert response.status_code == 302


# Mails


def test_verification_mails_per_address(
    make_user, mailoutbox: list[mail.EmailMessage], django_capture_on_commit_callbacks
) -> None:
    user = make_user("minos")
    user.email = "minos@example.com"
    user.save()
    client = Client()
    client.force_login(user)
    (limit, _period) = _split_rate(limits.rate("verify_mail_address"))
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(limit):
            # From several addresses: the count is the mail address's.
            client.defaults["REMOTE_ADDR"] = f"198.51.100.{i}"
            assert client.post(reverse("email_verify_resend")).status_code == 302
        response = client.post(reverse("email_verify_resend"))
        # Someone else signing up with that address is held too, and nobody is created.
        signup = Client().post(reverse("signup"), signup_data("thief", email="MINOS@example.com"))

    assert_limited(response, "We have sent enough verification links to that address")
    assert_limited(signup, "We have sent enough verification links to that address")
    assert not User.objects.filter(username="thief").exists()
    assert len(mailoutbox) == limit


def test_verification_mails_per_client(make_user, rates, django_capture_on_commit_callbacks):
    rates(verify_mail_client="2/h")
    client = Client()
    client.force_login(make_user("minos"))
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(2):
            response = client.post(reverse("email_change"), {"email": f"a{i}@example.com"})
            assert response.status_code == 302
        response = client.post(reverse("email_change"), {"email": "a9@example.com"})
    assert_limited(response, "Your network has asked for too many verification links")
    assert User.objects.get(username="minos").email == "a1@example.com"


def verified_user(make_user, name: str, email: str) -> User:
    user = make_user(name)
    user.email = email
    user.save()
    Profile.objects.update_or_create(user=user, defaults={"email_verified": True})
    return user


def test_reset_mails_go_only_to_verified_addresses(
    make_user, mailoutbox: list[mail.EmailMessage]
) -> None:
    unverified = make_user("theseus")
    unverified.email = "theseus@example.com"
    unverified.save()
    Profile.objects.create(user=unverified, email_verified=False)
    verified_user(make_user, "minos", "minos@example.com")

    for address in ("theseus@example.com", "minos@example.com"):
        response = Client().post(reverse("password_reset"), {"email": address})
        assert response.status_code == 302

    (message,) = mailoutbox
    assert message.to == ["minos@example.com"]


def test_reset_mails_per_address_and_per_client(
    make_user, rates, mailoutbox: list[mail.EmailMessage]
) -> None:
    verified_user(make_user, "minos", "minos@example.com")
    (limit, _period) = _split_rate(limits.rate("reset_mail_address"))
    for i in range(limit):
        response = Client(REMOTE_ADDR=f"198.51.100.{i}").post(
            reverse("password_reset"), {"email": "minos@example.com"}
        )
        assert response.status_code == 302
    response = Client().post(reverse("password_reset"), {"email": "Minos@Example.com"})
    assert_limited(response, "We have sent enough password-reset links to that address")
    assert len(mailoutbox) == limit

    # One client asking for many addresses, known or not, is held too.
    rates(reset_mail_client="2/h")
    client = Client(REMOTE_ADDR="203.0.113.20")
    for i in range(2):
        client.post(reverse("password_reset"), {"email": f"someone{i}@example.com"})
    response = client.post(reverse("password_reset"), {"email": "someone9@example.com"})
    assert_limited(response, "Your network has asked for too many password-reset links")


# Players and seats


def test_games_created_per_player(make_user, rates) -> None:
    rates(create_player="2/h")
    client = Client()
    client.force_login(make_user())
    url = reverse("game_new", args=["cornmaze"])
    for _ in range(2):
        assert client.post(url, NEW_CORNMAZE).status_code == 302
    response = client.post(url, NEW_CORNMAZE)
    assert_limited(response, "You have created too many games in a short time")
    assert Game.objects.count() == 2
    # Another player is not held up.
    other = Client()
    other.force_login(make_user())
    assert other.post(url, NEW_CORNMAZE).status_code == 302


def test_a_refused_form_does_not_count_but_over_the_limit_is_still_refused(
    make_user, rates
) -> None:
    rates(create_player="2/h", signup_client="1/h")
    client = Client()
    client.force_login(make_user())
    url = reverse("game_new", args=["cornmaze"])
    for _ in range(3):  # a form sent back with a mistake, again and again
        assert client.post(url, {**NEW_CORNMAZE, "size": "99"}).status_code == 400
    for _ in range(2):
        assert client.post(url, NEW_CORNMAZE).status_code == 302
    assert_limited(client.post(url, NEW_CORNMAZE), "You have created too many games")
    # Over the limit, a form with a mistake is refused for the limit, before it is read.
    assert_limited(client.post(url, {**NEW_CORNMAZE, "size": "99"}), "too many games")
    assert Game.objects.count() == 2
    for _ in range(3):
        taken = Client().post(reverse("signup"), {**signup_data("ann"), "password2": "other"})
        assert taken.status_code == 400
    assert Client().post(reverse("signup"), signup_data("ann")).status_code == 302
    assert_limited(
        Client().post(reverse("signup"), signup_data("bob")), "Too many sign-ups came from"
    )


def test_two_requests_at_the_same_moment_each_hold_their_place(rates) -> None:
    """Counted before the view runs: a second request arriving while the first is being done
    is refused at a limit of one, however the two interleave."""
    rates(chat_player="1/h")
    inner: list[BaseException | int] = []

    @limits.limit("chat_player", lambda request: "user:7", done_only=True)
    def view(request):
        if not inner:  # the first request; the second arrives before it is done
            try:
                inner.append(view(RequestFactory().post("/")).status_code)
            except limits.Limited as exc:
                inner.append(exc)
        return HttpResponse("done")

    assert view(RequestFactory().post("/")).status_code == 200
    assert len(inner) == 1 and isinstance(inner[0], limits.Limited)


def test_a_request_that_fails_gives_its_count_back(rates) -> None:
    rates(chat_player="1/h")
    fail = [True, False]

    @limits.limit("chat_player", lambda request: "user:8", done_only=True)
    def view(request):
        if fail.pop(0):
            raise RuntimeError("the view failed")
        return HttpResponse("done")

    with pytest.raises(RuntimeError):
        view(RequestFactory().post("/"))
    assert view(RequestFactory().post("/")).status_code == 200
    with pytest.raises(limits.Limited):
        view(RequestFactory().post("/"))


def test_joins_per_player(make_user, rates) -> None:
    rates(join_player="2/h")
    creator = make_user()
    joiner = make_user()
    games = [
        core.game_create(
            kind="cornmaze",
            creator=creator,
            options={"size": 8},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
        )
        for _ in range(3)
    ]
    client = Client()
    client.force_login(joiner)
    for game in games[:2]:
        assert client.post(reverse("game_join", args=[game.pk])).status_code == 302

    response = client.post(reverse("game_join", args=[games[2].pk]))

    assert_limited(response, "You have joined too many games in a short time")
    assert not games[2].seats.filter(user=joiner).exists()


def test_moves_per_seat_beyond_the_live_speed(make_cornmaze, rates) -> None:
    game = make_cornmaze()
    user = game.seats.get(index=0).user
    (limit, period) = _split_rate(limits.rate("move_seat"))
    # A held key in a live race steps once every STEP_MS, with one more step waiting: the rate
    # leaves that at least half again as much room.
    assert limit >= 1.5 * (period * 1000 / STEP_MS + 1)
    # The same limit over a longer window: the clock is held, but Redis forgets a window's
    # count `period` real seconds on, and a busy machine may take longer for the flood.
    rates(move_seat=f"{limit}/600s")
    client = Client()
    client.force_login(user)
    url = reverse("game_move", args=[game.pk])
    for _ in range(limit):
        # A stale ply is refused (409) but counts: a flood costs the same whatever it posts.
        assert client.post(url, {"ply": "999"}).status_code == 409
    response = client.post(url, {"ply": "999"})
    assert_limited(response, "Too many moves in a short time")
    # The other seat of the same game, and the same player in another game, are not held up.
    other = Client()
    other.force_login(game.seats.get(index=1).user)
    assert other.post(url, {"ply": "999"}).status_code == 409


# The suite itself


@hypothesis.settings(
    max_examples=5, suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture]
)
@hypothesis.given(name=st.text(min_size=1, max_size=5))
def test_each_hypothesis_example_counts_from_zero(rates, name: str) -> None:
    """A fuzz test may post hundreds of requests from one address: each example starts afresh
    (tests/conftest.py), so only a test that means to reaches a limit."""
    rates(signup_client="1/h")
    request = RequestFactory().post("/", REMOTE_ADDR="127.0.0.1")
    limits.check(request, "signup_client", limits.client_ip(request))  # the example's first
