"""The sign-in backend: Django's own, but the signed-in user of every request is read with its
profile in the same query, since every page's header asks whether it is a guest's.

That read is on every signed-in request, so its statement is written out once per process
from the models' own columns (`_user_sql`) instead of being built by the ORM each time (which
cost about five times the round trip); the rows become the same User and Profile instances,
related both ways, as `select_related("profile")` gives.
"""

from __future__ import annotations

import functools
from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connections, router

from games.models import Profile


@functools.cache
def _user_sql() -> tuple[str, list[str], list[str]]:
    """The statement, and the user's and the profile's field names in its column order."""
    users = [f for f in User._meta.concrete_fields]
    profiles = [f for f in Profile._meta.concrete_fields]
    columns = [f'u."{f.column}"' for f in users] + [f'p."{f.column}"' for f in profiles]
    user_column = Profile._meta.get_field("user").column
    sql = (
        f'SELECT {", ".join(columns)} FROM "{User._meta.db_table}" u'
        f' LEFT JOIN "{Profile._meta.db_table}" p ON p."{user_column}" = u."{User._meta.pk.column}"'
        f' WHERE u."{User._meta.pk.column}" = %s'
    )
    return sql, [f.attname for f in users], [f.attname for f in profiles]


def user_with_profile(user_id: Any) -> User | None:
    """The user of this id with its profile (None if it has none), or None: one query."""
    try:
        pk = User._meta.pk.to_python(user_id)
    except (ValidationError, TypeError, ValueError):
        return None
    if pk is None:
        return None
    alias = router.db_for_read(User)
    sql, user_fields, profile_fields = _user_sql()
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, [pk])
        row = cursor.fetchone()
    if row is None:
        return None
    user = User.from_db(alias, user_fields, row[: len(user_fields)])
    values = row[len(user_fields) :]
    profile = None
    if values[profile_fields.index(Profile._meta.pk.attname)] is not None:
        profile = Profile.from_db(alias, profile_fields, values)
        Profile._meta.get_field("user").set_cached_value(profile, user)
    User._meta.get_field("profile").set_cached_value(user, profile)
    return user


class ProfileBackend(ModelBackend):
    def get_user(self, user_id: Any) -> User | None:
        user = user_with_profile(user_id)
        if user is None:
            return None
        return user if self.user_can_authenticate(user) else None
