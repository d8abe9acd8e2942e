"""Input that no page of the site takes is refused here, before a view, a session or a query sees
it: a NUL character anywhere in a request (PostgreSQL keeps none in text and errs on one in a
query, which used to answer 500), any single value longer than every field of ours, and a body
larger than Django reads (before it is read: Django would write an uploaded file of any size to
disk to parse the form). Each form still checks its fields against their columns; this is the
floor under all of them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from http import HTTPStatus
from typing import Any

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse

NUL = "\x00"
# Longer than anything a page of ours sends: a path, a token, an address, a passphrase.
MAX_CHARS = 2000

NUL_REFUSED = (
    "This request holds a NUL character, which no page of this site takes. "
    "Check the address or the form and try again."
)
TOO_LONG = (
    f"Part of this request is longer than anything this site takes (at most {MAX_CHARS:,} "
    "characters). Shorten it and try again."
)
# The one field that takes more: a game record's text, pasted to be checked (the view checks
# it against RECORD_MAX_BYTES).
LONG_FIELDS = {"record_verify": "text"}


def too_large() -> str:
    """The sentence for a body larger than DATA_UPLOAD_MAX_MEMORY_SIZE."""
    return (
        "This request is larger than anything this site takes (at most "
        f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 2**20} MB)."
    )


def _values(request: HttpRequest) -> Iterator[tuple[str, int]]:
    """Every value in the request that the site may read, each with the most characters it may
    have: the path, the query string's and the form's names and values, the cookies."""
    yield request.path, MAX_CHARS
    for key, values in request.GET.lists():
        yield key, MAX_CHARS
        yield from ((value, MAX_CHARS) for value in values)
    long_field = _long_field(request.path) if request.method == "POST" else None
    for key, values in request.POST.lists():
        most = settings.DATA_UPLOAD_MAX_MEMORY_SIZE if key == long_field else MAX_CHARS
        yield key, MAX_CHARS
        yield from ((value, most) for value in values)
    for key, value in request.COOKIES.items():
        yield key, MAX_CHARS
        yield value, MAX_CHARS


def _long_field(path: str) -> str | None:
    """The form field posted to `path` that may be longer than MAX_CHARS, if any."""
    return next((field for name, field in LONG_FIELDS.items() if path == reverse(name)), None)


def request_problem(request: HttpRequest) -> str | None:
    """Why no page of the site can take this request, or None. Headers are checked for NUL
    only: a browser's own headers may be long."""
    headers = (v for k, v in request.META.items() if k.startswith("HTTP_") and isinstance(v, str))
    if any(NUL in header for header in headers):
        return NUL_REFUSED
    if _declared_length(request) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        return too_large()
    for value, most in _values(request):
        if NUL in value:
            return NUL_REFUSED
        if len(value) > most:
            return TOO_LONG
    return None


def _declared_length(request: HttpRequest) -> int:
    """The body's length as the request declares it (Django reads no more), 0 if unreadable."""
    try:
        return max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0


class InputGuardMiddleware:
    """Answers 400 with a sentence to a request that `request_problem` refuses: for htmx the
    sentence alone, which the page's error line shows (static/js/site.js), else a page that
    says it, with the site's header to go on from (a record too large to check, say). Either
    way before a session or a query: the page is drawn for nobody signed in."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = request_problem(request)
        if problem is None:
            return self.get_response(request)
        if request.headers.get("HX-Request") == "true":
            return HttpResponseBadRequest(problem, content_type="text/plain; charset=utf-8")
        # The session is not read (its cookie may be the problem): the page does not say who
        # is signed in, nor offer to sign in.
        request.user = AnonymousUser()
        context = {"message": problem, "viewer_unknown": True}
        response = render(request, "400.html", context, status=HTTPStatus.BAD_REQUEST)
        policy_set(response)  # PolicyMiddleware, further in, does not get to add it
        return response


class FormPageMiddleware:
    """A GET of an address that only takes a form's post (a refused form's page reloaded or
    restored, since without JavaScript a refusal is drawn at the form's address; a link
    followed) goes to the page of that form instead of a blank 405: a game's action to the
    game's page, an account's to the account page, any other to the lobby."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if response.status_code != HTTPStatus.METHOD_NOT_ALLOWED or request.method not in {
            "GET",
            "HEAD",
        }:
            return response
        match = request.resolver_match
        game_id = match.kwargs.get("game_id") if match is not None else None
        if game_id is not None:
            return redirect("game", game_id)
        if request.path.startswith(reverse("account")):
            return redirect("account")
        return redirect("lobby")


class PolicyMiddleware(CSPMiddleware):
    """django-csp's middleware, with the site's policy built once: no view of ours changes it
    (no csp_update/csp_replace/csp_exempt, no nonce), and building it costs more than the rest
    of the response headers together. A response or request that does change it goes the
    library's own way."""

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if getattr(request, "_csp_nonce", None) is not None or any(
            hasattr(response, name) for name in _POLICY_CHANGES
        ):
            return super().process_response(request, response)
        if (
            response.status_code in (HTTPStatus.INTERNAL_SERVER_ERROR, HTTPStatus.NOT_FOUND)
            and settings.DEBUG
        ):
            return response  # the debug pages, as the library leaves them
        policy_set(response)
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response


# What a view may set on a response to change its policy (csp.decorators).
_POLICY_CHANGES = tuple(
    f"_csp_{part}{suffix}"
    for part in ("config", "update", "replace", "exempt")
    for suffix in ("", "_ro")
)


def policy_set(response: HttpResponseBase) -> None:
    """The site's Content-Security-Policy (and its report-only twin) on `response`, where it
    has none yet."""
    header, report_only = _policies()
    if header and HEADER not in response:
        response[HEADER] = header
    if report_only and HEADER_REPORT_ONLY not in response:
        response[HEADER_REPORT_ONLY] = report_only


@functools.cache
def _policies() -> tuple[str, str]:
    """The Content-Security-Policy and its report-only twin, from the settings."""
    return build_policy(), build_policy(report_only=True)


@receiver(setting_changed)
def _policy_changed(setting: str, **kwargs: Any) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _policies.cache_clear()
