"""Accounts: sign up, come back as a guest, claim a guest account, email addresses and their
verification. Every write to a user or a profile goes through here; views parse forms and call
these, and an `AccountError` carries the sentence to show."""

from __future__ import annotations

import functools
import logging
import unicodedata
import zoneinfo
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.models import BaseUserManager, User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import EmailMultiAlternatives
from django.db import IntegrityError, transaction
from django.db.models.signals import post_save, pre_save
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse

from games.bots import all_levels
from games.models import Profile, UsernameKey, users_named

logger = logging.getLogger(__name__)

AUTH_BACKEND = "games.accounts.backends.ProfileBackend"
EMAIL_VERIFY_SALT = "mazesite.accounts.email_verify"
EMAIL_VERIFY_MAX_AGE = timedelta(days=7)
# Guests are named `Guest NNNNN`; a registered name that looked like one would mislead players.
RESERVED_PREFIX = "guest"
USERNAME_TAKEN = "That username is taken. Choose another."
# What `email_address_set` did: sent a link, kept the verified address as it was, or called
# off a change to a new address that was waiting for its link.
EMAIL_SENT = "sent"
EMAIL_KEPT = "kept"
EMAIL_CHANGE_CANCELLED = "cancelled"
EMAIL_LINK_STALE = (
    "This link is for an address the account no longer has. "
    "Ask for a new one from your account page."
)
# What the columns hold; the forms check against these too.
USERNAME_MAX_LENGTH: int = User._meta.get_field("username").max_length  # type: ignore[assignment]
EMAIL_MAX_LENGTH: int = User._meta.get_field("email").max_length  # type: ignore[assignment]
USERNAME_VALIDATOR = UnicodeUsernameValidator()


class AccountError(Exception):
    """A change the site refuses. `str(exc)` is a sentence for the person; `field` names the
    form field it belongs to, or None for the form as a whole."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


# Reads


def profile_for(user: User) -> Profile:
    """The user's profile. Users made by `createsuperuser` or the admin have none yet."""
    profile, _ = Profile.objects.get_or_create(user=user)
    return profile


def username_normalize(username: str) -> str:
    """A name as it is stored and compared: NFKC (`User.normalize_username`), so that `Ｇuest`
    is `Guest` and `Ｕniq` is `Uniq` before any check."""
    return str(User.normalize_username(username))


def username_problem(username: str, *, exclude_pk: int | None = None) -> str | None:
    """Why a username cannot be had, or None if it can. It is checked as it would be stored
    (`username_normalize`); names are unique ignoring case."""
    username = username_normalize(username)
    if not username:
        return "Choose a username."
    if len(username) > USERNAME_MAX_LENGTH:
        return f"A username has at most {USERNAME_MAX_LENGTH} characters."
    try:
        USERNAME_VALIDATOR(username)
    except ValidationError as error:
        return " ".join(error.messages)
    if set(username) <= {"."}:  # a path segment of its own: /players/./ is no page
        return "A username needs more than dots. Choose another."
    if username.lower().startswith(RESERVED_PREFIX):
        return "Names starting with “Guest” are kept for guests. Choose another."
    if username.casefold() in bot_names():
        return (
            f"“{username}” is a bot's name: a player named so would pass for a bot. Choose another."
        )
    taken = users_named(username)
    if exclude_pk is not None:
        taken = taken.exclude(pk=exclude_pk)
    if taken.exists():
        return USERNAME_TAKEN
    return None


@functools.cache
def bot_names() -> frozenset[str]:
    """The names the bots go by (their levels, in every game, and "bot"), casefolded."""
    return frozenset({"bot", *(level.casefold() for level in all_levels())})


def guest_for_key(key: str) -> User | None:
    """The guest whose private link holds `key`, or None if no guest has it (any more)."""
    if not key:
        return None
    profile = (
        Profile.objects.select_related("user")
        .filter(is_guest=True, guest_key=key, user__is_active=True)
        .first()
    )
    return profile.user if profile else None


def guest_link_path(user: User) -> str | None:
    """The path of a guest's private link, or None for a registered user."""
    profile = profile_for(user)
    if not profile.is_guest or not profile.guest_key:
        return None
    return reverse("guest_return", args=[profile.guest_key])


# Writes


def account_create(*, username: str, password: str, email: str, time_zone: str = "") -> User:
    """A registered user with a profile; an email address, if given, is sent a link to verify.
    `time_zone`: the browser's guess (static/js/timezone.js); one not known counts as UTC."""
    username = username_normalize(username)
    with transaction.atomic():
        _username_check(username, exclude_pk=None)
        try:
            with transaction.atomic():
                user = User.objects.create_user(username=username, password=password)
        except IntegrityError:
            raise AccountError(USERNAME_TAKEN, field="username") from None
        Profile.objects.create(
            user=user, is_guest=False, time_zone=time_zone if time_zone_known(time_zone) else "UTC"
        )
        if email:
            email_address_set(user=user, email=email)
    return user


TIME_ZONE_UNKNOWN = "That is not a time zone we know. Choose one from the list, like Europe/Paris."


def time_zone_known(name: str) -> bool:
    """Whether `name` is an IANA zone this machine knows (clock.zone_or_none)."""
    return name in time_zone_names()


NOT_PLACES = frozenset({"localtime", "posixrules", "Factory"})


@functools.cache
def time_zone_names() -> list[str]:
    """The IANA zone names a player may choose, sorted: not the machine's own (`localtime`, a
    file some systems add, which would follow the server) nor `Factory` (no place's time)."""
    return sorted((zoneinfo.available_timezones() | {"UTC"}) - NOT_PLACES)


def time_zone_set(*, user: User, name: str) -> Profile:
    """The player's time zone: the weekends of their games with weekends off are its own, from
    their next turn on. An unknown name is refused and nothing changes."""
    name = name.strip()
    if not time_zone_known(name):
        raise AccountError(TIME_ZONE_UNKNOWN, field="time_zone")
    profile = profile_for(user)
    profile.time_zone = name
    profile.save(update_fields=["time_zone"])
    return profile


def guest_claim(
    *, user: User, username: str, password: str, email: str, time_zone: str = ""
) -> User:
    """Turn a guest into a registered user: the same row, so every seat and game stays its own.
    The private link stops working. `time_zone`: the browser's guess, as at sign-up, taken if
    the guest's zone is still the first one, UTC (a zone the guest chose is kept). Returns the
    updated user (the caller's object is left as it was, so a refusal changes nothing
    anywhere)."""
    username = username_normalize(username)
    with transaction.atomic():
        locked = User.objects.select_for_update().get(pk=user.pk)
        profile = Profile.objects.select_for_update().filter(user=locked).first()
        if profile is None or not profile.is_guest:
            raise AccountError("This account is already registered; there is nothing to claim.")
        _username_check(username, exclude_pk=locked.pk)
        locked.username = username
        locked.set_password(password)
        try:
            with transaction.atomic():
                locked.save(update_fields=["username", "password"])
        except IntegrityError:
            raise AccountError(USERNAME_TAKEN, field="username") from None
        profile.is_guest = False
        profile.guest_key = ""
        if profile.time_zone == "UTC" and time_zone_known(time_zone):
            profile.time_zone = time_zone
        profile.save(update_fields=["is_guest", "guest_key", "time_zone"])
        if email:
            email_address_set(user=locked, email=email)
    return locked


def guest_link_login(*, request: HttpRequest, key: str) -> User:
    """Sign this browser in as the guest whose private link holds `key`."""
    guest = guest_for_key(key)
    if guest is None:
        raise AccountError(
            "This private link does not work any more: the guest account was claimed, "
            "or the link was mistyped."
        )
    login(request, guest, backend=AUTH_BACKEND)
    return guest


def email_address_set(*, user: User, email: str) -> str:
    """Set the user's address and send it a link to verify; returns what happened, one of
    `EMAIL_SENT`, `EMAIL_KEPT` and `EMAIL_CHANGE_CANCELLED`. A player with a verified address
    keeps it, for mail and password resets, until the link sent to the new one is opened
    (`pending_email`); asking for the verified one again calls the change off. Without a
    verified address the new one replaces the old at once. Written in other capitals, a
    verified address stays verified. The address is kept as mail would be sent to it: NFKC (a
    full-width `ｅｘａｍｐｌｅ.com` is `example.com`), its domain in lower case."""
    email = BaseUserManager.normalize_email(unicodedata.normalize("NFKC", email.strip()))
    if not email:
        raise AccountError("Enter an email address.", field="email")
    if len(email) > EMAIL_MAX_LENGTH:
        raise AccountError(
            f"An email address has at most {EMAIL_MAX_LENGTH} characters.", field="email"
        )
    with transaction.atomic():
        locked = User.objects.select_for_update().get(pk=user.pk)
        profile = profile_for(locked)
        if profile.email_verified and locked.email:
            if locked.email.casefold() == email.casefold():
                if locked.email != email:
                    locked.email = email
                    locked.save(update_fields=["email"])
                user.email = email
                if not profile.pending_email:
                    return EMAIL_KEPT
                profile.pending_email = ""
                profile.save(update_fields=["pending_email"])
                return EMAIL_CHANGE_CANCELLED
            if profile.pending_email != email:
                profile.pending_email = email
                profile.save(update_fields=["pending_email"])
            email_verification_request(user=locked)
            return EMAIL_SENT
        if locked.email != email:
            locked.email = email
            locked.save(update_fields=["email"])
        email_verification_request(user=locked)
    user.email = email
    return EMAIL_SENT


def address_to_verify(user: User, profile: Profile) -> str:
    """The address a verification link is for: a new one waiting while the verified one keeps
    the mail, else the current one if it is not verified yet; "" when there is none."""
    if profile.pending_email:
        return profile.pending_email
    return "" if profile.email_verified else user.email


def email_verification_request(*, user: User) -> None:
    """Send the address waiting to be verified (`address_to_verify`) a link to verify it, once
    the transaction that set it has committed. A failing mail server is logged, not shown: the
    person can ask for the link again from the account page."""
    email = address_to_verify(user, profile_for(user))
    if not email:
        raise AccountError("There is no email address to verify.", field="email")
    user_id = user.pk
    transaction.on_commit(
        lambda: email_verification_send(user_id=user_id, email=email), robust=True
    )


def email_verification_send(*, user_id: int, email: str) -> None:
    user = User.objects.filter(pk=user_id).first()
    if user is None or address_to_verify(user, profile_for(user)) != email:
        return  # the address changed since; a link for it would be refused anyway
    token = email_verify_token(user=user, email=email)
    context = {
        "user": user,
        "email": email,
        "link": settings.SITE_URL + reverse("email_verify", args=[token]),
        "days": EMAIL_VERIFY_MAX_AGE.days,
        "site_url": settings.SITE_URL,
    }
    subject = " ".join(render_to_string("emails/verify_email_subject.txt", context).split())
    message = EmailMultiAlternatives(
        subject, render_to_string("emails/verify_email_body.txt", context), to=[email]
    )
    html = render_to_string("emails/verify_email_body.html", context)
    message.attach_alternative(html, "text/html")
    message.send()


def email_verify_token(*, user: User, email: str | None = None) -> str:
    """A signed, dated token naming the user and an address (by default the user's current
    one); no database row needed. It is good only while the user has that address, or is
    waiting to verify it."""
    address = user.email if email is None else email
    return signing.dumps({"u": user.pk, "e": address}, salt=EMAIL_VERIFY_SALT, compress=True)


def email_verify(*, token: str) -> User:
    """Mark the address in `token` as verified, if the token is genuine, recent and the user
    still has that address or is waiting to verify it; a waiting address becomes the user's
    address then. Opening the link twice is fine."""
    try:
        data = signing.loads(token, salt=EMAIL_VERIFY_SALT, max_age=EMAIL_VERIFY_MAX_AGE)
    except signing.SignatureExpired:
        raise AccountError(
            "This link has expired. Ask for a new one from your account page."
        ) from None
    except signing.BadSignature:
        raise AccountError(
            "This link is not valid. Copy the whole link from the email, "
            "or ask for a new one from your account page."
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("u"), int):
        raise AccountError("This link is not valid.")
    address = data.get("e")
    with transaction.atomic():
        user = User.objects.select_for_update().filter(pk=data["u"]).first()
        profile = profile_for(user) if user is not None else None
        if user is None or profile is None or not address:
            raise AccountError(EMAIL_LINK_STALE)
        if profile.pending_email and profile.pending_email == address:
            user.email = address
            user.save(update_fields=["email"])
            profile.pending_email = ""
            profile.email_verified = True
            profile.save(update_fields=["pending_email", "email_verified"])
        elif user.email == address:
            if not profile.email_verified:
                profile.email_verified = True
                profile.save(update_fields=["email_verified"])
        else:
            raise AccountError(EMAIL_LINK_STALE)
    return user


def username_key_check(
    sender: Any, instance: User, update_fields: Any = None, **kwargs: Any
) -> None:
    """Before a save of a user's name (a pre_save of User): a name that is another's but for
    case is refused before the user is written, for a caller outside a transaction too
    (`createsuperuser`), which would otherwise keep a user without its key."""
    if update_fields is not None and "username" not in update_fields:
        return
    if users_named(instance.get_username()).exclude(pk=instance.pk).exists():
        raise IntegrityError(USERNAME_TAKEN)


def username_key_keep(
    sender: Any, instance: User, created: bool, update_fields: Any = None, **kwargs: Any
) -> None:
    """Keep the user's `UsernameKey` with their name, with every save of it (a post_save of
    User, connected by the app): another user's name that is the same but for case makes the
    save's transaction fail (IntegrityError), which the callers above turn into
    USERNAME_TAKEN."""
    if update_fields is not None and "username" not in update_fields:
        return  # a sign-in's last_login, a password: the name has not changed
    key = UsernameKey.of(instance.get_username())
    if created:
        UsernameKey.objects.create(user_id=instance.pk, key=key)
    else:
        UsernameKey.objects.update_or_create(user_id=instance.pk, defaults={"key": key})


pre_save.connect(username_key_check, sender=User, dispatch_uid="username_key_check")
post_save.connect(username_key_keep, sender=User, dispatch_uid="username_key_keep")


def _username_check(username: str, *, exclude_pk: int | None) -> None:
    problem = username_problem(username, exclude_pk=exclude_pk)
    if problem:
        raise AccountError(problem, field="username")
