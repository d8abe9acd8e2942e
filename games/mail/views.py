"""The email settings page, the unsubscribe link every mail carries, and the mark that a player
has a game open (so the worker holds their "your turn" mail until they leave)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from games import clock
from games.mail import preferences, watching
from games.mail.preferences import NotificationError
from games.models import EmailPreferences


class EmailPreferencesForm(forms.ModelForm):
    class Meta:
        model = EmailPreferences
        fields = ["turn_mails", "reminder", "game_over", "challenge", "chat"]
        labels = {
            "turn_mails": "When it is your turn",
            "reminder": "Reminders",
            "game_over": "Game over",
            "challenge": "Challenges",
            "chat": "Chat",
        }
        widgets = {"turn_mails": forms.RadioSelect}
        # The page says it beside each box (no aria-describedby to a text it does not show).
        help_texts = {"reminder": "", "game_over": "", "challenge": "", "chat": ""}


def game_watched(request: HttpRequest, game_id: int) -> None:
    """Called by the game page's poll. Reads the user id from the session, not `request.user`,
    to keep the poll at one query for the session and none for the user."""
    user_id = request.session.get(SESSION_KEY)
    if user_id is not None:
        watching.watching_mark(game_id=game_id, user_id=int(user_id))


def game_watch(request: HttpRequest, game_id: int) -> tuple[str, float, int] | None:
    """The cache entry that `game_watched` writes (watching.watching_entry), for the game page
    to write with its own cache read; None for a visitor."""
    user_id = request.session.get(SESSION_KEY)
    if user_id is None:
        return None
    return watching.watching_entry(game_id=game_id, user_id=int(user_id))


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def email_settings(request: HttpRequest) -> HttpResponse:
    user = request.user
    form = EmailPreferencesForm(
        request.POST if request.method == "POST" else None,
        instance=preferences.preferences_for(user),
    )
    if request.method == "POST" and form.is_valid():
        preferences.preferences_update(
            user=user,
            turn_mails=form.cleaned_data["turn_mails"],
            reminder=form.cleaned_data["reminder"],
            game_over=form.cleaned_data["game_over"],
            challenge=form.cleaned_data["challenge"],
            chat=form.cleaned_data["chat"],
        )
        messages.success(request, "Your email settings are saved.")
        return redirect("email_settings")
    status = 400 if request.method == "POST" else 200
    assert user.pk is not None, "behind login_required"
    zone = preferences.user_zone(user.pk)
    digest_at = clock.now().replace(
        hour=settings.DIGEST_HOUR_UTC, minute=0, second=0, microsecond=0
    )
    context = {
        "form": form,
        "address": getattr(user, "email", ""),
        "verified": bool(preferences.verified_address(user)),
        "digest_utc": f"{digest_at:%H:%M}",
        # Today's hour in the player's zone: a change of summer time moves it by an hour.
        "digest_local": f"{digest_at.astimezone(zone):%H:%M}",
        "zone": zone.key,
    }
    return render(request, "accounts/email_settings.html", context, status=status)


# No CSRF check and no sign-in: the signed token is the permission, and a mail program's
# one-click POST (RFC 8058, body "List-Unsubscribe=One-Click") carries neither.
@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    try:
        if request.method == "POST":
            user, kind = preferences.unsubscribe(token=token)
        else:
            user, kind = preferences.unsubscribe_read(token=token)
    except NotificationError as exc:
        return render(request, "notifications/unsubscribe.html", {"error": str(exc)}, status=400)
    context = {
        "done": request.method == "POST",
        # The link opened again after its POST: nothing is left to ask.
        "already": request.method != "POST" and preferences.unsubscribed(user=user, kind=kind),
        "name": user.get_username(),
        "what": preferences.UNSUBSCRIBE_WHAT[preferences.Kind(kind)],
        "token": token,
    }
    return render(request, "notifications/unsubscribe.html", context)
