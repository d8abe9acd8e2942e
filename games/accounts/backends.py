"""The sign-in backend: Django's own, but the signed-in user of every request is read with its
profile in the same query, since every page's header asks whether it is a guest's, and kept in
the cache (Redis) between requests, so that a request reads it there instead of the database.

The database read is compiled once per connection (`statements.Compiled`) instead of being built
by the ORM each time (which cost about five times the round trip); its rows are the same User and
Profile instances, related both ways, as `select_related("profile")` gives.

The cached copy is the user's by id, never a viewer's: only its own request reads it. Any save
or delete of the user or its profile (a sign-up, a new name, a new password, a guest's claim, a
profile's time zone; not a sign-in's save of last_login alone) puts a mark in its place, at once
and again when the transaction commits, for USER_CACHE_MARK_SECONDS: while it is there every
request reads the database and keeps nothing, so that a request that read the user before the
change cannot keep the old row (`add` keeps a copy only where there is none, mark or copy). A
copy lives at most SESSION_CACHE_SECONDS, like the session it goes with; one the cache failed to
forget (Redis down) as long. Writes that send no signal (`QuerySet.update`, SQL) must not touch
these tables; none of the site's do.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import DEFAULT_DB_ALIAS, router, transaction
from django.db.models.signals import post_delete, post_save

from games import statements
from games.accounts.profiles import username_normalize
from games.models import Profile, users_named

logger = logging.getLogger(__name__)

_USER_ID = -7_000_101  # the marker of the compiled read's one parameter
_USER_WITH_PROFILE = statements.Compiled(
    lambda user_id: User.objects.select_related("profile").filter(pk=user_id), _USER_ID
)
# In a changed user's place in the cache: read the database, keep nothing.
CHANGED = "changed"


def _cache_key(pk: Any) -> str:
    return f"{settings.USER_CACHE_PREFIX}{pk}"


def user_with_profile(user_id: Any) -> User | None:
    """The user of this id with its profile (None if it has none), or None: from the cache, or
    one query."""
    try:
        pk = User._meta.pk.to_python(user_id)
    except (ValidationError, TypeError, ValueError):
        return None
    if pk is None:
        return None
    key = _cache_key(pk)
    try:
        kept = cache.get(key)
    except Exception:  # noqa: BLE001 - the database has every user
        logger.warning("could not read a user from the cache", exc_info=True)
        kept = CHANGED
    if isinstance(kept, User):
        return kept
    alias = router.db_for_read(User)
    found = _USER_WITH_PROFILE.fetch(pk, alias=alias)
    user = found[0] if found else None
    # Only the primary's row is kept: a replica's may be a change behind.
    if user is not None and kept is None and alias == DEFAULT_DB_ALIAS:
        try:
            cache.add(key, user, settings.SESSION_CACHE_SECONDS)
        except Exception:  # noqa: BLE001 - read from the database again next time
            logger.warning("could not keep a user in the cache", exc_info=True)
    return user


def forget_user(pk: Any) -> None:
    """The user's cached copy, if any, replaced by the mark: now, and once the transaction that
    changed the user commits."""

    def mark() -> None:
        try:
            cache.set(_cache_key(pk), CHANGED, settings.USER_CACHE_MARK_SECONDS)
        except Exception:  # noqa: BLE001 - a copy missed is gone within SESSION_CACHE_SECONDS
            logger.warning("could not mark a changed user in the cache", exc_info=True)

    if transaction.get_connection().in_atomic_block:
        mark()
    transaction.on_commit(mark)  # at once outside a transaction


# A sign-in's own save: the copy's last_login may be older, and nothing of the site reads it.
_SIGN_IN_SAVE = frozenset({"last_login"})


def _user_changed(sender: Any, instance: User, **kwargs: Any) -> None:
    if kwargs.get("update_fields") != _SIGN_IN_SAVE:
        forget_user(instance.pk)


def _profile_changed(sender: Any, instance: Profile, **kwargs: Any) -> None:
    forget_user(instance.user_id)


# Connected at import by the app (games/apps.py), so in every process that writes, not only in
# those that have signed someone in.
post_save.connect(_user_changed, sender=User, dispatch_uid="forget_user_saved")
post_delete.connect(_user_changed, sender=User, dispatch_uid="forget_user_deleted")
post_save.connect(_profile_changed, sender=Profile, dispatch_uid="forget_profile_saved")
post_delete.connect(_profile_changed, sender=Profile, dispatch_uid="forget_profile_deleted")


def stored_username(username: str) -> str:
    """The stored name that `username` is, ignoring case (names are unique so), after the
    normalisation of sign-up (NFKC); `username` itself if no user or more than one has it."""
    name = username_normalize(username.strip())
    found = list(users_named(name).values_list("username", flat=True)[:2])
    return found[0] if len(found) == 1 else username


class ProfileBackend(ModelBackend):
    def authenticate(
        self,
        request: Any,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        """Django's sign-in, with the name as the player has it in mind: `ALICE` is alice."""
        if username is not None:
            username = stored_username(username)
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id: Any) -> User | None:
        user = user_with_profile(user_id)
        if user is None:
            return None
        return user if self.user_can_authenticate(user) else None
