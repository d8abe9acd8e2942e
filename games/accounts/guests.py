"""Guests: real users named `Guest NNNNN`, bound to the browser session, who can come back
from another browser through a private link and later claim the account."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from django.contrib.auth import login
from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction
from django.http import HttpRequest

from games.accounts.profiles import AUTH_BACKEND
from games.models import Profile
from games.web import limits

# Names have this many digits at first; a few taken draws in a row and the next draws have one
# digit more. The space grows ten-fold each time, so it can never run out, however many guests
# there are, and a name costs a few tries more for each digit it needs.
GUEST_DIGITS = 5
TRIES_PER_WIDTH = 4


def guest_name_candidates() -> itertools.chain[str]:
    """Endless random names, widening from `GUEST_DIGITS` digits."""
    return itertools.chain.from_iterable(
        (f"Guest {_random_number(digits)}" for _ in range(TRIES_PER_WIDTH))
        for digits in itertools.count(GUEST_DIGITS)
    )


def guest_create() -> User:
    with transaction.atomic():
        user = _user_with_a_free_name()
        user.set_unusable_password()
        user.save(update_fields=["password"])
        Profile.objects.create(user=user, is_guest=True, guest_key=secrets.token_urlsafe(32))
    return user


@contextmanager
def player_for(request: HttpRequest) -> Iterator[User]:
    """The signed-in user, or a new guest for the action in the `with` block: the guest is kept
    and signed in on this session only if the block succeeds, so an action that is refused (a
    join of a missing or full game, a game that cannot be made) leaves no guest behind. A client
    may make as many guests as `RATE_LIMITS["guest_client"]` allows (`limits.Limited` beyond)."""
    user = request.user
    if user.is_authenticated:
        assert not isinstance(user, AnonymousUser)
        yield user
        return
    limits.check(request, "guest_client", limits.client_ip(request))
    with transaction.atomic():
        guest = guest_create()
        yield guest
    login(request, guest, backend=AUTH_BACKEND)


def _user_with_a_free_name() -> User:
    names = guest_name_candidates()
    while True:
        try:
            with transaction.atomic():
                return User.objects.create_user(username=next(names))
        except IntegrityError:
            continue  # taken: the next draw, soon from a wider space


def _random_number(digits: int) -> int:
    """A number of exactly `digits` digits, so names keep the `Guest NNNNN` look."""
    low = 10 ** (digits - 1)
    return low + secrets.randbelow(9 * low)
