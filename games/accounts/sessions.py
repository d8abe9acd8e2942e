"""Sessions read from the cache (Redis), kept in the database: Django's `cached_db`, made to
carry on with the database alone while the cache does not answer.

Django 5.2's cached_db already reads the database when the cache's `get` raises and logs a
failed `set` in `save`, but a cache that does not answer still raises out of `load` (the `set`
after the database read), `exists` (asked for every new session key: a sign-in) and `delete`
(a sign-out, and the key's change at sign-in): a 500, or nobody able to sign in, for the length
of a Redis outage. Here each of those falls back to the database and logs.

A session changed while the cache did not answer (a sign-out whose cache delete failed) may
still be in the cache with its old data once the cache answers again: the cache keeps a session
at most SESSION_CACHE_SECONDS, so that such a stale copy is gone within minutes, at the price
of one database read per session that often.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.sessions.backends.cached_db import SessionStore as CachedDBStore
from django.core.cache.backends.base import BaseCache

logger = logging.getLogger(__name__)


class SessionStore(CachedDBStore):
    # Set by Django's stores; not in django-stubs.
    _cache: BaseCache
    _session: dict[str, Any]

    def _cache_seconds(self, expiry: Any = None) -> int:
        age = self.get_expiry_age(expiry=expiry) if expiry is not None else self.get_expiry_age()
        return max(0, min(age, settings.SESSION_CACHE_SECONDS))

    def load(self) -> dict[str, Any]:
        try:
            data = self._cache.get(self.cache_key)
        except Exception:  # noqa: BLE001 - the database has every session
            logger.warning("could not read a session from the cache", exc_info=True)
            data = None
        if data is not None:
            return data
        s = self._get_session_from_db()  # type: ignore[attr-defined]
        if not s:
            return {}
        data = self.decode(s.session_data)
        try:
            self._cache.set(self.cache_key, data, self._cache_seconds(s.expire_date))
        except Exception:  # noqa: BLE001 - read from the database again next time
            logger.warning("could not keep a session in the cache", exc_info=True)
        return data

    def exists(self, session_key: str | None) -> bool:
        if not session_key:
            return False
        try:
            if (self.cache_key_prefix + session_key) in self._cache:
                return True
        except Exception:  # noqa: BLE001 - the database knows every session key
            logger.warning("could not ask the cache for a session key", exc_info=True)
        return bool(super(CachedDBStore, self).exists(session_key))

    def save(self, must_create: bool = False) -> None:
        super(CachedDBStore, self).save(must_create)
        try:
            self._cache.set(self.cache_key, self._session, self._cache_seconds())
        except Exception:  # noqa: BLE001 - kept in the database; the cache copy expires soon
            logger.warning("could not keep a session in the cache", exc_info=True)

    def delete(self, session_key: str | None = None) -> None:
        super(CachedDBStore, self).delete(session_key)
        if session_key is None:
            if self.session_key is None:
                return
            session_key = self.session_key
        try:
            self._cache.delete(self.cache_key_prefix + session_key)
        except Exception:  # noqa: BLE001 - gone from the database; the cache copy expires soon
            logger.warning("could not delete a session from the cache", exc_info=True)
