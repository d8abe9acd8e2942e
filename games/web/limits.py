"""Limits on abuse: how often one client, one address, one account or one seat may do a thing.

Counts live in the cache (Redis), counted by django-ratelimit in fixed windows (on Redis, a count
is made in one round trip, with the same windows and keys); the rates are one table in settings
(`RATE_LIMITS`). A view calls `check` (or is decorated with `limit`) where the
thing is about to happen; over the limit it raises `Limited`, which `LimitMiddleware` answers
with 429, a sentence saying when to try again, and `Retry-After`. The client's address comes
from `client_ip`, which trusts X-Forwarded-For only as far as the settings say proxies of ours
stand in front of the site."""

from __future__ import annotations

import functools
import ipaddress
import logging
import math
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django_ratelimit.core import (
    EXPIRATION_FUDGE,
    _get_window,
    _make_cache_key,
    _split_rate,
    get_usage,
)

logger = logging.getLogger(__name__)

# What each limit stops, as the person who hits it reads it; "Try again in ..." follows.
SENTENCES = {
    "guest_client": "Too many new guests came from your network in a short time.",
    "signup_client": "Too many sign-ups came from your network in a short time.",
    "login_failed_account": "Too many wrong passwords were tried for this account.",
    "login_failed_client": "Too many wrong passwords were tried from your network.",
    "verify_mail_address": "We have sent enough verification links to that address for now.",
    "verify_mail_client": "Your network has asked for too many verification links.",
    "reset_mail_address": "We have sent enough password-reset links to that address for now.",
    "reset_mail_client": "Your network has asked for too many password-reset links.",
    "join_player": "You have joined too many games in a short time.",
    "create_player": "You have created too many games in a short time.",
    "move_seat": "Too many moves in a short time, more than the fastest race allows.",
    "calendar_client": "Your network has fetched too many calendar feeds.",
    "calendar_feed": "This calendar feed was fetched too often.",
    "calendar_link_player": "You have made too many new calendar links.",
    "chat_player": "You have sent many chat messages in a short time.",
    "chat_action_player": "You have muted or reported many times in a short time.",
    "record_verify_client": "Your network has had many records checked in a short time.",
}

View = TypeVar("View", bound=Callable[..., HttpResponseBase])


class Limited(Exception):
    """A limit was reached: `str(exc)` is the sentence for the person, `retry_after` the
    seconds until the count starts again."""

    def __init__(self, name: str, retry_after: int) -> None:
        self.name = name
        self.retry_after = max(1, retry_after)
        super().__init__(f"{SENTENCES[name]} Try again in {_duration(self.retry_after)}.")


def client_ip(request: HttpRequest) -> str:
    """The client's address. With `TRUSTED_PROXIES` = 0 the peer is the client (REMOTE_ADDR);
    with N, the Nth address from the right of X-Forwarded-For, the one our outermost proxy saw
    (each proxy appends its peer, so whatever a client writes there stands further left)."""
    remote = request.META.get("REMOTE_ADDR", "") or "0.0.0.0"
    proxies: int = settings.TRUSTED_PROXIES
    if proxies <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [part for part in forwarded if part]
    if not forwarded:
        return remote
    candidate = forwarded[-proxies] if len(forwarded) >= proxies else forwarded[0]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote


def player_key(request: HttpRequest) -> str:
    """A signed-in user by id, anyone else by address."""
    if request.user.is_authenticated:
        return f"user:{request.user.pk}"
    return f"ip:{client_ip(request)}"


def rate(name: str) -> str:
    try:
        value: str = settings.RATE_LIMITS[name]
    except KeyError:
        raise ImproperlyConfigured(f"RATE_LIMITS has no rate for {name!r}.") from None
    return value


def check(request: HttpRequest, name: str, value: str) -> None:
    """Count one for `value` under the limit `name`; raise Limited once over it."""
    _check(request, name, value)


def _check(request: HttpRequest, name: str, value: str) -> tuple[Any, str] | None:
    """`check`, answering where the count was made (the cache and its key; None when not
    counted), for `_give_back`."""
    usage = _usage(request, name, value, increment=True)
    if usage is not None and usage["should_limit"]:
        raise Limited(name, usage["time_left"])
    return None if usage is None else usage["counted"]


def _give_back(counted: tuple[Any, str] | None) -> None:
    """Take back one count that `_check` made, in its own window."""
    if counted is None:
        return
    cache, key = counted
    try:
        cache.decr(key)
    except ValueError:  # the window's count has expired: nothing to give back
        pass
    except Exception:  # noqa: BLE001 - any cache failure, as in _usage
        logger.warning("rate limit count not given back: the cache failed", exc_info=True)


def refuse_if_reached(request: HttpRequest, name: str, value: str) -> None:
    """Raise Limited if `value` has used up its count under `name`, without counting: for
    things counted only when they fail (a wrong password)."""
    usage = _usage(request, name, value, increment=False)
    if usage is not None and (usage["should_limit"] or usage["count"] >= usage["limit"]):
        raise Limited(name, usage["time_left"])


def count(request: HttpRequest, name: str, value: str) -> None:
    """Count one for `value` under `name`, without refusing anything now."""
    _usage(request, name, value, increment=True)


def limit(
    name: str, key: Callable[..., str | None], *, method: str = "POST", done_only: bool = False
) -> Callable[[View], View]:
    """A view decorator: each `method` request counts for `key(request, **view_kwargs)` (None:
    not counted) under the limit `name`. With `done_only`, a request the view refused (an answer
    of 400 or more, or an exception) is given its count back, so a form sent back with a mistake
    costs nothing. It is counted before the view runs all the same: two requests at the same
    moment each hold their place, and one over the limit is refused before the view reads it."""

    def decorator(view: View) -> View:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            value = key(request, **kwargs) if request.method == method else None
            if value is None:
                return view(request, *args, **kwargs)
            counted = _check(request, name, value)
            if not done_only:
                return view(request, *args, **kwargs)
            try:
                response = view(request, *args, **kwargs)
            except BaseException:
                _give_back(counted)
                raise
            if response.status_code >= 400:
                _give_back(counted)
            return response

        return wrapped  # type: ignore[return-value]

    return decorator


def limited_response(request: HttpRequest, exc: Limited) -> HttpResponse:
    """429 with the sentence: a page, or for htmx the sentence alone as text, which the page's
    error line shows without touching the board (static/js/site.js)."""
    if request.headers.get("HX-Request") == "true":
        response = HttpResponse(str(exc), status=429, content_type="text/plain; charset=utf-8")
    else:
        response = render(request, "limited.html", {"message": str(exc)}, status=429)
    response["Retry-After"] = str(exc.retry_after)
    return response


class LimitMiddleware:
    """Answers `Limited`, wherever a view raised it, with `limited_response`."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Limited):
            return limited_response(request, exception)
        return None


def _usage(request: HttpRequest, name: str, value: str, *, increment: bool) -> Any:
    limit_rate = rate(name)
    try:
        cache = caches[getattr(settings, "RATELIMIT_USE_CACHE", "default")]
        if increment and isinstance(cache, RedisCache):
            return _counted_on_redis(cache, name, value, limit_rate)
        usage = get_usage(
            request,
            group=name,
            key=lambda _group, _request: value,
            rate=limit_rate,
            method=get_usage.ALL,
            increment=increment,
        )
        if usage is not None:
            counted = (cache, _window_key(name, value, limit_rate)[1])
            usage["counted"] = counted if increment else None
        return usage
    except Exception:  # noqa: BLE001 - any cache failure
        # A limit that cannot count lets the request through: a dead cache must not take the
        # site down with it (RATELIMIT_FAIL_OPEN does the same for a count that went missing).
        logger.warning("rate limit %s not counted: the cache failed", name, exc_info=True)
        return None


def _counted_on_redis(cache: RedisCache, name: str, value: str, limit_rate: str) -> Any:
    """Count one as django-ratelimit's get_usage does (the same fixed window and key), in one
    round trip: the window's counter made if missing and incremented, in one pipeline."""
    if not getattr(settings, "RATELIMIT_ENABLE", True):
        return None
    limit, period = _split_rate(limit_rate)
    window, window_key = _window_key(name, value, limit_rate)
    key = cache.make_and_validate_key(window_key)
    # The site's cache keeps one client per pool (mazesite/cache.py).
    pipe = cache._cache.get_client(key, write=True).pipeline(transaction=False)
    pipe.set(key, 0, ex=period + EXPIRATION_FUDGE, nx=True)
    pipe.incr(key)
    count = pipe.execute()[-1]
    return {
        "count": count,
        "limit": limit,
        "should_limit": count > limit,
        "time_left": window - int(time.time()),
        "counted": (cache, window_key),
    }


def _window_key(name: str, value: str, limit_rate: str) -> tuple[int, str]:
    """The end of the window now running for `value` under `name`, and django-ratelimit's key
    for its count there."""
    _limit, period = _split_rate(limit_rate)
    window = _get_window(value, period)
    return window, _make_cache_key(name, window, limit_rate, value, get_usage.ALL)


def _duration(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} second{'' if seconds == 1 else 's'}"
    minutes = math.ceil(seconds / 60)
    if minutes < 90:
        return f"{minutes} minutes"
    hours = math.ceil(seconds / 3600)
    return f"{hours} hours"
