"""Where the abuse counters live.

``limits``' Redis storage when ``TETHER_REDIS_URL`` is set: every replica counts into the same
keys (moving windows as lists, fixed windows as counters with a TTL), so a limit holds however
the load balancer spreads the requests. Without Redis, on a PostgreSQL or MariaDB database,
tether's own database (``tether.abuse.sql_storage``): replicas on one database share the counts
there. Without Redis on the embedded SQLite database, this process's memory: that server is one
process, and a restart forgets the counts. Keys start with ``TETHER_LIMITS_NAMESPACE``.

If the storage fails (Redis or the database down) the limit is not applied and this is logged:
an outage of the counter store must not lock every user out of logging in or asking.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import quote

from limits.aio.storage import MemoryStorage, RedisStorage, Storage

from tether.abuse.sql_storage import SqlStorage
from tether.settings import Settings
from tether.store.database import normalize_url

log = logging.getLogger("tether.abuse")


def open_storage(settings: Settings) -> Storage:
    if settings.redis_url is None:
        database = normalize_url(settings.database_url)
        if database.drivername == "sqlite":
            return MemoryStorage()
        return SqlStorage(database, settings.limits_namespace)
    url = settings.redis_url.get_secret_value()
    return RedisStorage(
        "async+" + url,
        implementation="redispy",  # the Redis client tether already uses (redis_bus.py)
        key_prefix=settings.limits_namespace,
        wrap_exceptions=True,
        socket_connect_timeout=2.0,
        socket_timeout=2.0,
    )


def key(*parts: str) -> str:
    """One identifier: each part quoted, so no user id can spell another's key."""
    return "|".join(quote(p, safe="") for p in parts)


class StorageDown:
    """The storage's failures: each is logged (once a minute at most), and for ``PAUSE_S`` after
    one the limits skip the storage (a Redis that does not answer must not add its timeouts to
    every login and turn); the limits are off meanwhile."""

    PAUSE_S = 10.0

    def __init__(self) -> None:
        self._said = 0.0
        self._until = 0.0

    def __call__(self, exc: Exception) -> None:
        now = time.monotonic()
        self._until = now + self.PAUSE_S
        if now - self._said >= 60:
            self._said = now
            log.warning("abuse limits are not applied: their storage failed (%s: %s)", type(exc).__name__, exc)

    @property
    def skipping(self) -> bool:
        return time.monotonic() < self._until
