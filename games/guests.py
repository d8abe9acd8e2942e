"""Guests: real users named `Guest NNNNN`, bound to the browser session, who can come back
from another browser through a private link and later claim the account."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from django.contrib.auth import login
from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction
from django.http import HttpRequest

from .accounts import AUTH_BACKEND
from .models import Profile


def guest_create() -> User:
    for _ in range(20):
        name = f"Guest {secrets.randbelow(99999) + 1}"
        try:
            with transaction.atomic():
                user = User.objects.create_user(username=name)
                user.set_unusable_password()
                user.save(update_fields=["password"])
                Profile.objects.create(
                    user=user, is_guest=True, guest_key=secrets.token_urlsafe(32)
                )
                return user
        except IntegrityError:
            continue
    raise RuntimeError("could not find a free guest name")


@contextmanager
def player_for(request: HttpRequest) -> Iterator[User]:
    """The signed-in user, or a new guest for the action in the `with` block: the guest is kept
    and signed in on this session only if the block succeeds, so an action that is refused (a
    join of a missing or full game, a game that cannot be made) leaves no guest behind."""
    user = request.user
    if user.is_authenticated:
        assert not isinstance(user, AnonymousUser)
        yield user
        return
    with transaction.atomic():
        guest = guest_create()
        yield guest
    login(request, guest, backend=AUTH_BACKEND)
