"""Response headers: a Content-Security-Policy that allows no inline script or style (and
templates that need none), `Cache-Control` that keeps running games out of every cache, and HEAD
answered wherever GET is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from games.accounts.guests import guest_create
from games.mail import preferences
from games.models import Game
from tests.conftest import play_to_the_end, seat_user

pytestmark = pytest.mark.django_db

TEMPLATES = Path(settings.BASE_DIR) / "templates"


def directives(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {
        name: values
        for name, *values in (part.split() for part in policy.split(";") if part.strip())
    }


# Content-Security-Policy


def test_pages_carry_a_policy_without_inline_script_or_style(client: Client) -> None:
    policy = directives(client.get(reverse("lobby")))
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert "'unsafe-inline'" not in policy["default-src"]


def test_the_policy_built_once_is_the_librarys_and_follows_the_settings(settings) -> None:
    from csp.middleware import CSPMiddleware
    from django.http import HttpResponse
    from django.test import RequestFactory

    from games.web.middleware import PolicyMiddleware

    def answer(middleware: type, **attributes: object) -> HttpResponse:
        def view(request: object) -> HttpResponse:
            response = HttpResponse("x")
            for name, value in attributes.items():
                setattr(response, name, value)
            return response

        return middleware(view)(RequestFactory().get("/"))

    assert (
        answer(PolicyMiddleware)["Content-Security-Policy"]
        == (answer(CSPMiddleware)["Content-Security-Policy"])
    )
    # A response that changes its policy is the library's to answer.
    changed = {"_csp_update": {"img-src": ["https://example.org"]}}
    assert "https://example.org" in answer(PolicyMiddleware, **changed)["Content-Security-Policy"]
    assert "Content-Security-Policy" not in answer(PolicyMiddleware, _csp_exempt=True)
    # A policy changed in the settings is built again.
    policy = {"DIRECTIVES": {**settings.CONTENT_SECURITY_POLICY["DIRECTIVES"]}}
    policy["DIRECTIVES"]["connect-src"] = ["'self'", "https://events.example.org"]
    settings.CONTENT_SECURITY_POLICY = policy
    assert "https://events.example.org" in answer(PolicyMiddleware)["Content-Security-Policy"]


# What the policy would refuse, found in the templates: a <script> with a body, an on...=
# handler, hx-on, a javascript: URL, hx-vals/hx-headers that run code, a style attribute or a
# <style> block. (Mails are read in mail programs, not under our policy.)
FORBIDDEN = [
    (re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I), "an inline <script>"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "an on... handler"),
    (re.compile(r"\bhx-on", re.I), "hx-on"),
    (re.compile(r"javascript:", re.I), "a javascript: URL"),
    (re.compile(r"""hx-(vals|headers|vars)=['"]\s*(js|javascript):""", re.I), "code in hx-vals"),
    (re.compile(r"\sstyle\s*=", re.I), "a style attribute"),
    (re.compile(r"<style", re.I), "a <style> block"),
]


def test_no_template_needs_what_the_policy_refuses() -> None:
    found = []
    for path in sorted(TEMPLATES.rglob("*.html")):
        if path.relative_to(TEMPLATES).parts[0] == "emails":
            continue
        text = path.read_text()
        for pattern, what in FORBIDDEN:
            found += [f"{path.relative_to(TEMPLATES)}: {what}" for _ in pattern.finditer(text)]
    assert found == []


def test_every_seat_colour_is_painted_by_the_style_sheet() -> None:
    from games.ui import SEAT_COLOURS, colour

    css = (Path(settings.BASE_DIR) / "static/css/site.css").read_text()
    for seat in range(8):
        assert f'[data-colour="{colour(seat)}"] {{ --seat: #' in css
    assert {colour(seat) for seat in range(12)} == set(range(SEAT_COLOURS))


# Cache-Control


def cache_control(response) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part}


def test_a_running_game_is_kept_out_of_every_cache(make_cornmaze) -> None:
    game = make_cornmaze()
    client = Client()
    client.force_login(seat_user(game, 0))
    page = reverse("game", args=[game.pk])
    htmx = {"HX-Request": "true"}

    responses = {
        "page": client.get(page),
        "partial": client.get(page, headers=htmx),
        "poll, changed": client.get(page, {"since": "0"}, headers=htmx),
        "poll, unchanged": client.get(page, {"since": str(game.version)}, headers=htmx),
        "record": client.get(reverse("game_record", args=[game.pk])),
        "refused move": client.post(reverse("game_move", args=[game.pk]), {"ply": "99"}),
        "spectator": Client().get(page),
    }

    assert responses["poll, unchanged"].status_code == 204
    for what, response in responses.items():
        assert {"private", "no-store"} <= cache_control(response), what
        assert "public" not in cache_control(response), what


def test_a_finished_game_may_be_cached_a_little(make_cornmaze) -> None:
    game = play_to_the_end(make_cornmaze(size=6))
    record = Client().get(reverse("game_record", args=[game.pk]))
    assert cache_control(record) == {"public", "max-age=300"}
    page = Client().get(reverse("game", args=[game.pk]))
    # The page shows who is signed in: the browser alone may keep it.
    assert cache_control(page) == {"private", "max-age=60"}
    poll = Client().get(
        reverse("game", args=[game.pk]),
        {"since": str(game.version)},
        headers={"HX-Request": "true"},
    )
    assert poll.status_code == 286
    assert "no-store" in cache_control(poll)


# HEAD wherever GET


def url_patterns(patterns=None, prefix: str = ""):
    """(name, route) of every view in the URLconf, outside the admin."""
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if not route.startswith("admin/"):
                yield from url_patterns(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield entry.name, entry.pattern


SKIPPED = {"healthz"}  # its own work (GET and HEAD with the checks behind them)


def test_every_get_view_answers_head(make_cornmaze) -> None:
    game = make_cornmaze()
    finished = play_to_the_end(make_cornmaze(size=6))
    guest = guest_create()
    player = seat_user(game, 0)
    samples = {
        "game_id": [game.pk, finished.pk],
        "kind": ["cornmaze"],
        "name": [player.get_username()],
        "key": [guest.profile.guest_key],  # type: ignore[attr-defined]
        "token": [preferences.unsubscribe_token(user_id=player.pk, kind="reminder"), "bad"],
        "uidb64": ["MQ"],
    }
    clients = {"anonymous": Client(), "player": Client(), "guest": Client()}
    clients["player"].force_login(player)
    clients["guest"].force_login(guest)

    checked, refused = set(), []
    for name, pattern in url_patterns():
        if name in SKIPPED:
            continue
        params = list(getattr(pattern, "converters", {}))
        for i in range(max(len(samples.get(p, [""])) for p in params) if params else 1):
            kwargs = {p: samples[p][min(i, len(samples[p]) - 1)] for p in params}
            url = reverse(name, kwargs=kwargs)
            for who, client in clients.items():
                get = client.get(url)
                if get.status_code == 405:
                    continue  # a POST-only view
                head = client.head(url)
                checked.add(name)
                if head.status_code != get.status_code or head.content:
                    refused.append(f"{who} HEAD {url}: {head.status_code}, GET {get.status_code}")
    assert refused == []
    # The walk found the views that matter, with their parameters filled in.
    assert {"lobby", "game", "game_record", "game_replay", "archive", "player"} <= checked
    assert {"rules", "account", "signup", "login", "unsubscribe", "guest_return"} <= checked
    assert Game.objects.count() == 2
