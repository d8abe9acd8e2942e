"""The site's cache backend: Django's Redis cache, with one `redis.Redis` client per
connection pool kept for the process.

Django's RedisCacheClient makes a new `redis.Redis` for every cache call, and each copies the
library's table of about 170 response callbacks: a few tenths of a millisecond a request
(several cache calls on a game page: the session, the user, the kept page and the watching
mark). A client is safe to share between threads (each command takes a connection from the
pool, which also notices a fork), so one per pool is enough.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class ClientKeptRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        # Django's own attributes, not in django-stubs.
        index = self._get_connection_pool_index(write)  # type: ignore[attr-defined]
        client = self._clients.get(index)
        if client is None:
            pool = self._get_connection_pool(index)  # type: ignore[attr-defined]
            client = self._client(connection_pool=pool)  # type: ignore[attr-defined]
            self._clients[index] = client
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ClientKeptRedisCacheClient

    def set_and_get_many(
        self, key: str, value: Any, timeout: int, keys: list[str]
    ) -> dict[str, Any]:
        """`set(key, value, timeout)` (seconds, more than 0) then `get_many(keys)`, in one
        round trip (a pipeline, not a transaction)."""
        client = self._cache
        made = {self.make_and_validate_key(k): k for k in keys}
        pipe = client.get_client(None, write=True).pipeline(transaction=False)
        pipe.set(
            self.make_and_validate_key(key),
            client._serializer.dumps(value),  # type: ignore[attr-defined]
            ex=timeout,
        )
        if made:
            pipe.mget(list(made))
        found = pipe.execute()[1] if made else []
        loads = client._serializer.loads  # type: ignore[attr-defined]
        return {made[k]: loads(v) for k, v in zip(made, found, strict=True) if v is not None}
