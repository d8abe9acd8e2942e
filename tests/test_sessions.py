"""Sessions from the cache, kept in the database (games/accounts/sessions.py): a signed-in
request reads its session with no query, and while the cache does not answer (a closed port:
a real address where nobody listens) the site signs people in and out and shows their pages
from the database alone, without a 500 and without signing anyone out."""

from __future__ import annotations

import re
import socket
from typing import Any

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-passphrase"


def closed_port() -> int:
    """A local port where nobody listens: bound, then closed again."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def cache_down() -> Any:
    """The sessions' cache at a closed port; everything else keeps the site's cache."""
    caches = {
        **settings.CACHES,
        "down": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
            "OPTIONS": {"socket_timeout": 1, "socket_connect_timeout": 1},
        },
    }
    return override_settings(CACHES=caches, SESSION_CACHE_ALIAS="down")


def whoami(client: Client) -> str | None:
    response = client.get(reverse("lobby"))
    assert response.status_code == 200
    found = re.search(r'<span class="whoami"[^>]*>([^<]*)</span>', response.content.decode())
    return found.group(1) if found else None


def test_the_session_is_read_from_the_cache(make_user) -> None:
    make_user("theseus", password=PASSWORD)
    client = Client()
    assert (
        client.post(reverse("login"), {"username": "theseus", "password": PASSWORD}).status_code
        == 302
    )
    assert whoami(client) == "theseus"
    with CaptureQueriesContext(connection) as captured:
        assert whoami(client) == "theseus"
    assert not [q for q in captured.captured_queries if "django_session" in q["sql"]]


def test_without_the_cache_people_sign_in_stay_signed_in_and_sign_out(make_user) -> None:
    make_user("ariadne", password=PASSWORD)
    client = Client()
    # Signed in while the cache answered: the session is in the cache and in the database.
    assert (
        client.post(reverse("login"), {"username": "ariadne", "password": PASSWORD}).status_code
        == 302
    )
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    with cache_down():
        # Still signed in, from the database.
        assert whoami(client) == "ariadne"
        assert client.post(reverse("logout")).status_code == 302
        assert whoami(client) is None
        assert not Session.objects.filter(session_key=key).exists()
        # A new sign-in (a new session key, asked of the cache and the database) works too.
        response = client.post(reverse("login"), {"username": "ariadne", "password": PASSWORD})
        assert response.status_code == 302
        assert whoami(client) == "ariadne"
    # And once the cache is back, the session made while it was away is read.
    assert whoami(client) == "ariadne"


def test_a_guest_made_while_the_cache_is_down_keeps_its_seat() -> None:
    with cache_down():
        client = Client()
        form = {"size": "8", "seats": "2", "clock": "P3D", "seat_1": "person"}
        response = client.post(reverse("game_new", args=["cornmaze"]), form)
        assert response.status_code == 302
        page = client.get(response.url)
        assert page.status_code == 200
        assert b"<em>(you)</em>" in page.content


def test_the_cache_keeps_a_session_at_most_session_cache_seconds(make_user) -> None:
    import redis
    from django.core.cache import cache

    make_user("minos", password=PASSWORD)
    client = Client()
    client.post(reverse("login"), {"username": "minos", "password": PASSWORD})
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    raw = redis.Redis.from_url(settings.CACHES["default"]["LOCATION"])
    ttl = raw.ttl(cache.make_key(f"django.contrib.sessions.cached_db{key}"))
    assert 0 < ttl <= settings.SESSION_CACHE_SECONDS < settings.SESSION_COOKIE_AGE


def test_the_cache_parses_redis_replies_in_c() -> None:
    """hiredis is installed (pyproject.toml) and redis-py takes it for the site's cache."""
    from django.core.cache import cache
    from redis._parsers import _HiredisParser

    client = cache._cache.get_client(write=False)  # type: ignore[attr-defined]
    connection = client.connection_pool.get_connection()
    try:
        assert isinstance(connection._parser, _HiredisParser)
    finally:
        client.connection_pool.release(connection)
