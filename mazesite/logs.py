"""Logs: one JSON object a line (structlog), each carrying the request id, the user and the game
of the request it was written in, and one `request` line per request with its status and time.

LOG_FORMAT=json (the default without DEBUG) or console (the default with DEBUG). Every logger
of the site and of Django goes through the same formatter, so `logger.warning(...)` in games/
carries the request's fields too. The request id is the client's X-Request-ID when it is a
sane token (a balancer's), a new one otherwise, and goes back in the response's X-Request-ID.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import structlog
from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import SimpleLazyObject, empty

REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{8,64}")

# The paths whose last part is a secret: whoever reads the logs must not be able to follow a
# guest's return link, an invite, a calendar feed, an address check, an unsubscribe or a
# password reset. Matched where a path starts a field or follows a space or quote, as in
# Django's own "Not Found: /accounts/calendar/....ics".
SECRET_IN_PATH = re.compile(
    r"(?:^|(?<=[\s'\"]))"
    r"(/accounts/(?:verify|guest|calendar)/|/unsubscribe/|/games/\d+/invite/|/accounts/reset/[^/\s]+/)"
    r"[^/\s?#'\"]+"
)
REDACTED = "[secret]"


def redact_path(text: str) -> str:
    return SECRET_IN_PATH.sub(lambda m: m.group(1) + REDACTED, text)


def redact_secrets(logger: Any, method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """A structlog processor: no secret of a path in the `path` field or in the message."""
    for key in ("path", "event"):
        value = event_dict.get(key)
        if isinstance(value, str) and "/" in value:
            event_dict[key] = redact_path(value)
    return event_dict


SHARED_PROCESSORS: list[Any] = [
    structlog.contextvars.merge_contextvars,
    redact_secrets,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def logging_config(fmt: str, level: str) -> dict[str, Any]:
    """settings.LOGGING: every record through structlog's formatter."""
    renderer = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "structlog": {
                "()": structlog.stdlib.ProcessorFormatter,
                "processors": [
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info,
                    renderer,
                ],
                "foreign_pre_chain": SHARED_PROCESSORS,
            }
        },
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "structlog"}},
        "root": {"handlers": ["console"], "level": level},
        # Our own `request` line says it once, with the request's fields.
        "loggers": {"django.server": {"level": "WARNING"}},
    }


def configure() -> None:
    structlog.configure(
        processors=[
            # Before the others: a line below the level (the request line at LOG_LEVEL=WARNING)
            # costs nothing more.
            structlog.stdlib.filter_by_level,
            *SHARED_PROCESSORS,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


log = structlog.get_logger("mazesite.request")


def _user(request: HttpRequest) -> str | None:
    """ "pk:name" of the signed-in user; only "pk", from the session, while nothing in the
    request has read the user: the log reads no user of its own (a poll reads none)."""
    user = getattr(request, "user", None)
    if user is None:
        return None
    if isinstance(user, SimpleLazyObject) and user._wrapped is empty:
        from django.contrib.auth import SESSION_KEY  # not at import: settings import this

        session = getattr(request, "session", None)
        user_id = session.get(SESSION_KEY) if session is not None else None
        return None if user_id is None else str(user_id)
    if not user.is_authenticated:
        return None
    return f"{user.pk}:{user.get_username()}"


class RequestLogMiddleware:
    """Binds request_id (and, once known, user and game) for every line written during the
    request; writes the `request` line. Put it right after AuthenticationMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        sent = request.headers.get("X-Request-ID", "")
        request_id = sent if REQUEST_ID.fullmatch(sent) else uuid.uuid4().hex
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(
            request_id=request_id, method=request.method, path=request.path
        )
        started = time.perf_counter()
        try:
            user = _user(request)
            if user is not None:
                structlog.contextvars.bind_contextvars(user=user)
            response = self.get_response(request)
            after = _user(request)  # a guest this request made, or one who signed in
            if after != user:
                structlog.contextvars.bind_contextvars(user=after)
            response["X-Request-ID"] = request_id
            level = "warning" if response.status_code >= 500 else "info"
            getattr(log, level)(
                "request",
                status=response.status_code,
                ms=round((time.perf_counter() - started) * 1000, 1),
            )
            return response
        finally:
            structlog.contextvars.clear_contextvars()

    def process_view(
        self, request: HttpRequest, view: Any, args: Any, kwargs: dict[str, Any]
    ) -> None:
        game = kwargs.get("game_id")
        if game is not None:
            structlog.contextvars.bind_contextvars(game=game)
        return None
