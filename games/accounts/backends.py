"""The sign-in backend: Django's own, but the signed-in user of every request is read with its
profile in the same query, since every page's header asks whether it is a guest's.

That read is on every signed-in request, so it is compiled once per connection
(`statements.Compiled`) instead of being built by the ORM each time (which cost about five
times the round trip); its rows are the same User and Profile instances, related both ways, as
`select_related("profile")` gives.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import router

from games import statements

_USER_ID = -7_000_101  # the marker of the compiled read's one parameter
_USER_WITH_PROFILE = statements.Compiled(
    lambda user_id: User.objects.select_related("profile").filter(pk=user_id), _USER_ID
)


def user_with_profile(user_id: Any) -> User | None:
    """The user of this id with its profile (None if it has none), or None: one query."""
    try:
        pk = User._meta.pk.to_python(user_id)
    except (ValidationError, TypeError, ValueError):
        return None
    if pk is None:
        return None
    found = _USER_WITH_PROFILE.fetch(pk, alias=router.db_for_read(User))
    return found[0] if found else None


class ProfileBackend(ModelBackend):
    def get_user(self, user_id: Any) -> User | None:
        user = user_with_profile(user_id)
        if user is None:
            return None
        return user if self.user_can_authenticate(user) else None
