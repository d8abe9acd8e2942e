"""Account pages: sign up, the account page, claiming a guest account, the private link that
brings a guest back, email addresses. Sign in, sign out and passwords are Django's views with
our templates (see `account_urls`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm
from django.contrib.auth.models import AnonymousUser, User
from django.forms import Form
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_cache_control
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from games import clock
from games.accounts import calendar, profiles
from games.accounts.forms import (
    ChangePasswordForm,
    ClaimForm,
    EmailForm,
    SignInForm,
    SignupForm,
    TimeZoneForm,
    VacationAutomaticForm,
    VacationForm,
    VerifiedPasswordResetForm,
)
from games.accounts.profiles import AccountError
from games.archive import selectors
from games.mail import preferences
from games.models import Profile
from games.play import vacations
from games.ui import time_html
from games.web import limits


@require_http_methods(["GET", "HEAD", "POST"])
@limits.limit("signup_client", lambda request: limits.client_ip(request), done_only=True)
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        # A guest who signed up afresh would leave its games behind: it should claim instead.
        status = 400 if request.method == "POST" else 200
        return render(request, "accounts/signup.html", {"form": None}, status=status)
    form = SignupForm(request.POST or None)
    # Where the visitor was (an invite link, a game): back there once signed up.
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        next_url = ""
    if request.method == "POST" and form.is_valid():
        _mail_limits(request, "verify", form.cleaned_data["email"])
        try:
            user = profiles.account_create(
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
                email=form.cleaned_data["email"],
                time_zone=form.cleaned_data["time_zone"],
            )
        except AccountError as exc:
            form.add_error(exc.field, str(exc))
        else:
            login(request, user, backend=profiles.AUTH_BACKEND)
            messages.success(request, f"Welcome, {user.username}. Your account is ready.")
            _verification_sent(request, user)
            return redirect(next_url or "lobby")
    status = 400 if request.method == "POST" else 200
    return render(request, "accounts/signup.html", {"form": form, "next": next_url}, status=status)


@require_safe
@login_required
def account(request: HttpRequest) -> HttpResponse:
    return _account_page(request)


@require_POST
@login_required
def guest_claim(request: HttpRequest) -> HttpResponse:
    user = _signed_in(request)
    if not profiles.profile_for(user).is_guest:
        messages.error(request, "This account is already registered; there is nothing to claim.")
        return redirect("account")
    form = ClaimForm(request.POST)
    if form.is_valid():
        _mail_limits(request, "verify", form.cleaned_data["email"])
        try:
            claimed = profiles.guest_claim(
                user=user,
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
                email=form.cleaned_data["email"],
                time_zone=form.cleaned_data["time_zone"],
            )
        except AccountError as exc:
            form.add_error(exc.field, str(exc))
        else:
            # The new password changes the session hash: keep this browser signed in.
            update_session_auth_hash(request, claimed)
            messages.success(
                request,
                f"The account is yours, {claimed.username}. From now on, sign in with that name "
                "and your password.",
            )
            _verification_sent(request, claimed)
            return redirect("account")
    return _account_page(request, claim_form=form, status=400)


@require_POST
@login_required
def time_zone_change(request: HttpRequest) -> HttpResponse:
    user = _signed_in(request)
    form = TimeZoneForm(request.POST)
    if form.is_valid():
        try:
            profile = profiles.time_zone_set(user=user, name=form.cleaned_data["time_zone"])
        except AccountError as exc:
            form.add_error(exc.field, str(exc))
        else:
            messages.success(request, f"Your time zone is {profile.time_zone} now.")
            return redirect("account")
    return _account_page(request, time_zone_form=form, status=400)


@require_POST
@login_required
def email_change(request: HttpRequest) -> HttpResponse:
    user = _signed_in(request)
    form = EmailForm(request.POST)
    if form.is_valid():
        _mail_limits(request, "verify", form.cleaned_data["email"])
        try:
            outcome = profiles.email_address_set(user=user, email=form.cleaned_data["email"])
        except AccountError as exc:
            form.add_error(exc.field, str(exc))
        else:
            if outcome == profiles.EMAIL_KEPT:
                messages.info(request, f"{user.email} is your address already, and verified.")
            elif outcome == profiles.EMAIL_CHANGE_CANCELLED:
                messages.info(
                    request,
                    f"Mail keeps going to {user.email}; the link sent to the new address "
                    "no longer works.",
                )
            else:
                _verification_sent(request, user)
            return redirect("account")
    return _account_page(request, email_form=form, status=400)


@require_POST
@login_required
def email_verify_resend(request: HttpRequest) -> HttpResponse:
    user = _signed_in(request)
    profile = profiles.profile_for(user)
    if profile.email_verified and not profile.pending_email:
        messages.info(request, "Your address is verified already.")
        return redirect("account")
    _mail_limits(request, "verify", profiles.address_to_verify(user, profile))
    try:
        profiles.email_verification_request(user=user)
    except AccountError as exc:
        messages.error(request, str(exc))
    else:
        _verification_sent(request, user)
    return redirect("account")


@require_safe
def email_verify(request: HttpRequest, token: str) -> HttpResponse:
    # A GET may write here: the link proves the mail arrived, and opening it twice is harmless.
    try:
        user = profiles.email_verify(token=token)
    except AccountError as exc:
        return render(request, "accounts/email_verify.html", {"error": str(exc)}, status=400)
    return render(request, "accounts/email_verify.html", {"verified_email": user.email})


@require_http_methods(["GET", "HEAD", "POST"])
def guest_return(request: HttpRequest, key: str) -> HttpResponse:
    # GET only asks: a link preview or a prefetch must not sign anyone in.
    guest = profiles.guest_for_key(key)
    if guest is None:
        return render(request, "accounts/guest_link_invalid.html", status=404)
    if request.method == "POST":
        try:
            profiles.guest_link_login(request=request, key=key)
        except AccountError:
            return render(request, "accounts/guest_link_invalid.html", status=404)
        messages.success(request, f"Welcome back, {guest.username}. Here are your games.")
        return redirect("lobby")
    current = request.user if isinstance(request.user, User) else None
    return render(
        request,
        "accounts/guest_return.html",
        {
            "guest": guest,
            "already": current is not None and current.pk == guest.pk,
            "current_is_guest": current is not None and profiles.profile_for(current).is_guest,
        },
    )


@require_safe
def calendar_feed(request: HttpRequest, token: str) -> HttpResponse:
    # No session: calendar programs send none. The link is the secret; an old one is a 404.
    limits.check(request, "calendar_client", limits.client_ip(request))
    user = calendar.calendar_user(token)
    if user is None:
        raise Http404("No such calendar.")
    limits.check(request, "calendar_feed", f"user:{user.pk}")
    body = calendar.calendar_feed(user=user, site_url=settings.SITE_URL)
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="mazesite.ics"'
    response["X-Robots-Tag"] = "noindex"
    # Only for the one who holds the link: never kept by a shared cache.
    patch_cache_control(response, private=True, max_age=300)
    return response


CALENDAR_ACTIONS = {"new", "stop"}


@require_POST
@login_required
@limits.limit("calendar_link_player", lambda request: limits.player_key(request), done_only=True)
def calendar_link(request: HttpRequest) -> HttpResponse:
    user = _signed_in(request)
    action = request.POST.get("action")
    if action not in CALENDAR_ACTIONS:
        messages.error(request, "Choose “Make a new link” or “Stop the link”.")
        return _account_page(request, status=400)
    if action == "stop":
        calendar.calendar_link_stop(user=user)
        messages.success(
            request, "Your calendar link is stopped: calendars using it get nothing new."
        )
    else:
        calendar.calendar_link_new(user=user)
        messages.success(
            request,
            "Here is your new calendar link. Any link you made before has stopped working.",
        )
    return redirect(f"{reverse('account')}#calendar")


class PasswordChangeView(auth_views.PasswordChangeView):
    """A guest has no password to change: it sets one by claiming the account."""

    form_class = ChangePasswordForm

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        user = request.user
        if isinstance(user, User) and profiles.profile_for(user).is_guest:
            messages.info(request, "A guest account has no password yet: claim it to set one.")
            return redirect("account")
        return super().dispatch(request, *args, **kwargs)


class LoginView(auth_views.LoginView):
    """Django's sign-in, with a limit on wrong passwords per account and per client. Once one is
    reached, even the right password waits until the count starts again."""

    authentication_form = SignInForm

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        for name, value in self._failure_keys():
            limits.refuse_if_reached(request, name, value)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        for name, value in self._failure_keys():
            limits.count(self.request, name, value)
        return super().form_invalid(form)

    def _failure_keys(self) -> list[tuple[str, str]]:
        # One count for every way of writing the name that signs in as the same account.
        username = profiles.username_normalize(self.request.POST.get("username", "").strip())
        username = username.casefold()
        return [
            ("login_failed_account", username),
            ("login_failed_client", limits.client_ip(self.request)),
        ]


class LogoutView(auth_views.LogoutView):
    """Signing out. A guest is first told what it leaves behind and shown its private link (GET,
    or a POST without `confirm`); it signs out with a POST that confirms. Registered users sign
    out with one POST, as the header's button sends it."""

    http_method_names = ["get", "head", "post", "options"]

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        user = request.user
        if not isinstance(user, User):
            return redirect("lobby")
        profile = profiles.profile_for(user)
        link_path = profiles.guest_link_path(user)
        context = {
            "is_guest": profile.is_guest,
            "private_link": request.build_absolute_uri(link_path) if link_path else None,
            "running_games": selectors.running_games_count(user) if profile.is_guest else 0,
        }
        return render(request, "registration/logout_confirm.html", context)

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        user = request.user
        is_guest = isinstance(user, User) and profiles.profile_for(user).is_guest
        if is_guest and request.POST.get("confirm") != "yes":
            return redirect("logout")
        return super().post(request, *args, **kwargs)


class PasswordResetView(auth_views.PasswordResetView):
    form_class = VerifiedPasswordResetForm

    @property
    def extra_email_context(self) -> dict[str, Any]:  # type: ignore[override]
        # Links in mail use the site's public address, like every other mail the site sends.
        return {"site_url": settings.SITE_URL}

    def form_valid(self, form: PasswordResetForm) -> HttpResponse:
        _mail_limits(self.request, "reset", form.cleaned_data["email"])
        return super().form_valid(form)


# --- vacation (issue 14) -----------------------------------------------------------------------


@require_POST
@login_required
def vacation_start(request: HttpRequest) -> HttpResponse:
    user = _signed_in(request)
    if not vacations.is_registered(user):
        messages.error(request, vacations.GUEST_REFUSED)
        return _account_page(request, status=400)
    zone = preferences.user_zone(user.pk)
    form = VacationForm(request.POST, zone_name=zone.key)
    if form.is_valid():
        return_on = form.cleaned_data["return_on"]
        until = None
        if return_on is not None:
            # Back at the start of that day in the player's own time zone, whose "today" it
            # must come after.
            until = vacations.until_for(return_on, zone)
            if return_on <= timezone.localdate(clock.now(), zone):
                form.add_error("return_on", "Choose a return date after today.")
        if form.is_valid():
            try:
                vacation = vacations.vacation_start(user=user, until=until)
            except vacations.VacationTooLong as exc:
                form.add_error("return_on", str(exc))
            except vacations.VacationError as exc:
                messages.error(request, str(exc))
            else:
                assert vacation.until is not None
                # A <time>, as the account page shows the vacation's end: both in the zone of
                # the browser (site.js), UTC without it.
                messages.success(
                    request,
                    format_html(
                        "Enjoy your vacation. Your clocks stop until {}.",
                        time_html(vacation.until),
                    ),
                )
                return redirect("account")
    return _account_page(request, vacation_form=form, status=400)


@require_POST
@login_required
def vacation_end(request: HttpRequest) -> HttpResponse:
    user = _signed_in(request)
    if not vacations.is_registered(user):
        messages.error(request, vacations.GUEST_REFUSED)
        return _account_page(request, status=400)
    try:
        vacation = vacations.vacation_end(user=user)
    except vacations.VacationError as exc:
        messages.error(request, str(exc))
        return _account_page(request, status=409)
    if vacation is None:
        messages.error(request, "You are not on vacation.")
        return _account_page(request, status=400)
    messages.success(
        request,
        f"Welcome back. Your clocks run again; {vacation.days_left} vacation days left.",
    )
    return redirect("account")


@require_POST
@login_required
def vacation_automatic(request: HttpRequest) -> HttpResponse:
    user = _signed_in(request)
    form = VacationAutomaticForm(request.POST)
    if not form.is_valid():
        return _account_page(request, status=400)
    try:
        vacations.automatic_set(user=user, automatic=form.cleaned_data["automatic"])
    except vacations.VacationError as exc:
        messages.error(request, str(exc))
        return _account_page(request, status=400)
    if form.cleaned_data["automatic"]:
        messages.success(request, "Automatic vacation is on.")
    else:
        messages.success(request, "Automatic vacation is off: a clock that runs out loses.")
    return redirect("account")


def _vacation_context(user: User, vacation_form: Form | None) -> dict[str, Any]:
    if not vacations.is_registered(user):
        return {"vacation_for_guest": True}
    now = clock.now()
    vacation = vacations.vacation_for(user, now=now)
    return {
        "vacation": vacation,
        "vacation_on": vacation.on_vacation(now),
        "vacation_form": vacation_form
        or VacationForm(zone_name=preferences.user_zone(user.pk).key),
        "vacation_automatic_form": VacationAutomaticForm(initial={"automatic": vacation.automatic}),
        "vacation_max_days": vacations.MAX_DAYS,
    }


def _account_page(
    request: HttpRequest,
    *,
    claim_form: Form | None = None,
    email_form: Form | None = None,
    time_zone_form: Form | None = None,
    vacation_form: Form | None = None,
    status: int = 200,
) -> HttpResponse:
    user = _signed_in(request)
    profile = profiles.profile_for(user)
    link_path = profiles.guest_link_path(user)
    context = {
        "profile": profile,
        "is_guest": profile.is_guest,
        "private_link": request.build_absolute_uri(link_path) if link_path else None,
        "claim_form": claim_form or ClaimForm(),
        # The address waiting for its link, if any: a typo in it is mended there.
        "email_form": email_form
        or EmailForm(initial={"email": profile.pending_email or user.email}),
        "has_password": user.has_usable_password(),
        **_calendar_context(request, user, profile),
        "time_zone_form": time_zone_form or TimeZoneForm(initial={"time_zone": profile.time_zone}),
        **_vacation_context(user, vacation_form),
    }
    return render(request, "accounts/account.html", context, status=status)


def _calendar_context(request: HttpRequest, user: User, profile: Profile) -> dict[str, Any]:
    """templates/accounts/_calendar.html: the feed's link, for a browser (https) and for
    calendar programs (webcal, the same address)."""
    path = calendar.calendar_path(user, profile)
    if path is None:
        return {"calendar_link": None, "calendar_webcal": None}
    link = request.build_absolute_uri(path)
    return {"calendar_link": link, "calendar_webcal": "webcal://" + link.split("://", 1)[-1]}


def _signed_in(request: HttpRequest) -> User:
    user = request.user
    assert not isinstance(user, AnonymousUser), "behind login_required"
    return user


def _mail_limits(request: HttpRequest, kind: str, address: str) -> None:
    """Count a mail about to be sent (`kind`: verify or reset) to `address`, if any, and from
    this client; `limits.Limited` once either has had enough."""
    if address:
        limits.check(request, f"{kind}_mail_address", address.strip().casefold())
        limits.check(request, f"{kind}_mail_client", limits.client_ip(request))


def _verification_sent(request: HttpRequest, user: User) -> None:
    """Say where a link to verify went, if one did: to the new address waiting to replace the
    verified one, or to the user's address that is not verified yet."""
    profile = profiles.profile_for(user)
    if profile.pending_email:
        messages.info(
            request,
            f"We sent a link to {profile.pending_email}. Open it to confirm the address is "
            f"yours; until then, mail keeps going to {user.email}.",
        )
    elif user.email and not profile.email_verified:
        messages.info(
            request, f"We sent a link to {user.email}. Open it to confirm the address is yours."
        )
