"""Quotas (``limits`` in the config): token buckets per member, and per member and tool.

A call over its member's bucket (or its member's bucket for that tool) is answered with the tool
error ``RATE_LIMITED``, ``details.retry_after`` saying in how many seconds a token is back; the
tool does not run. A bucket holds ``burst`` tokens and refills at ``calls_per_minute / 60`` per
second.

Where buckets live:
- without ``storage``: in the process (``MemoryBuckets``); replicas each count on their own;
- with ``storage``: in the team database (``DatabaseBuckets``, one row per bucket, updated in one
  statement), so every replica draws from the same bucket.

The HTTP request rate (``per_member.requests_per_minute``: 429 with ``Retry-After`` before the
body is read) lives in the same place: without ``storage`` each replica counts its own requests;
with it the replicas share one bucket per member (key ``http:<member>``), one statement a
request, run off the event loop.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from hostd.core.errors import HostError
from hostd.team.ops_databases import OpsHost

if TYPE_CHECKING:
    from hostd.core.ops_settings import LimitsConfig, Rate


class Buckets(Protocol):
    def take(self, key: str, capacity: float, per_second: float) -> float:
        """Take one token: 0 when taken, else the seconds until one is back (nothing taken)."""
        ...


class MemoryBuckets:
    """Buckets of this process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._state: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)

    def take(self, key: str, capacity: float, per_second: float) -> float:
        with self._lock:
            now = self._clock()
            tokens, at = self._state.get(key, (capacity, now))
            tokens = min(capacity, tokens + (now - at) * per_second)
            if tokens >= 1:
                self._state[key] = (tokens - 1, now)
                return 0.0
            self._state[key] = (tokens, now)
            return (1 - tokens) / per_second


class DatabaseBuckets:
    """Buckets in the team database, shared by the replicas."""

    def __init__(self, database: Any) -> None:
        self.database = database

    def take(self, key: str, capacity: float, per_second: float) -> float:
        def work(connection: Any) -> float:
            row = connection.execute(
                """
                INSERT INTO buckets AS b (key, tokens, at)
                VALUES (%(key)s, %(capacity)s - 1, clock_timestamp())
                ON CONFLICT (key) DO UPDATE SET
                    tokens = LEAST(%(capacity)s,
                                   b.tokens + %(rate)s * EXTRACT(EPOCH FROM clock_timestamp() - b.at)),
                    at = clock_timestamp()
                RETURNING tokens, (xmax = 0) AS inserted
                """,
                {"key": key, "capacity": capacity, "rate": per_second},
            ).fetchone()
            if row["inserted"]:
                return 0.0
            tokens = float(row["tokens"])
            if tokens >= 1:
                connection.execute("UPDATE buckets SET tokens = tokens - 1 WHERE key = %s", (key,))
                return 0.0
            return (1 - tokens) / per_second

        return float(self.database.run(work))

    def close(self) -> None:
        self.database.close()


class Quotas:
    """The config's limits over a ``Buckets``; ``retry_after(member, tool)`` is asked before each call."""

    def __init__(self, config: LimitsConfig, buckets: Buckets) -> None:
        self.config = config
        self.buckets = buckets

    @property
    def shared(self) -> bool:
        """Whether the buckets are the team database's: a round trip, asked off the event loop."""
        return not isinstance(self.buckets, MemoryBuckets)

    def _take(self, key: str, rate: Rate) -> float:
        return self.buckets.take(key, rate.capacity, rate.calls_per_minute / 60)

    def retry_after(self, member: str, tool: str) -> float:
        """0 when the call may run (its tokens taken), else the seconds to wait."""
        tool_rate = self.config.tools.get(tool)
        if tool_rate is not None:
            wait = self._take(f"tool:{tool}:{member}", tool_rate)
            if wait:
                return wait
        if self.config.per_member is not None:
            return self._take(f"member:{member}", self.config.per_member)
        return 0.0

    def close(self) -> None:
        close = getattr(self.buckets, "close", None)
        if close is not None:
            close()


class RequestRate:
    """HTTP requests per member: ``retry_after(member)`` before a body is read.

    ``shared`` says the buckets are the team database's (a blocking statement: callers on the
    event loop run it in a worker thread).
    """

    def __init__(self, per_minute: float, burst: float, buckets: Buckets | None = None) -> None:
        self.capacity = burst
        self.per_second = per_minute / 60
        self.shared = buckets is not None
        self.buckets: Buckets = buckets if buckets is not None else MemoryBuckets()

    def retry_after(self, member: str) -> int:
        """0 to serve the request, else whole seconds for ``Retry-After`` (at least 1)."""
        wait = self.buckets.take(f"http:{member}", self.capacity, self.per_second)
        return 0 if not wait else max(1, math.ceil(wait))


def install_request_rate(host: OpsHost) -> RequestRate | None:
    """The HTTP request rate from ``limits.per_member.requests_per_minute``; ``None`` without it."""
    limits = host.loaded.config.limits
    per_member = limits.per_member if limits is not None else None
    if per_member is None or per_member.requests_per_minute is None:
        return None
    per_minute = per_member.requests_per_minute
    buckets: Buckets | None = None
    if host.loaded.config.storage is not None:
        from hostd.team.ops_databases import QUOTAS, ops_database

        buckets = DatabaseBuckets(ops_database(host, QUOTAS))
    return RequestRate(per_minute, burst=max(1.0, per_minute), buckets=buckets)


def check_limit_tools(limits: LimitsConfig | None, served: Mapping[str, Collection[str]]) -> None:
    """``HostError`` for a ``limits.tools`` entry that names no tool any profile serves.

    ``served`` is each profile's served tool names (with the profile's prefix). Quotas are asked by
    the served name, so an entry under another spelling (the plugin's own name where the profile
    adds a prefix) would never apply: a limit the operator believes in but that limits nothing.
    """
    if limits is None or not limits.tools:
        return
    known = set().union(*served.values()) if served else set()
    unknown = [name for name in limits.tools if name not in known]
    if not unknown:
        return
    lines = [f"limits.tools.{name}: no profile serves a tool of that name" for name in unknown]
    for profile, names in served.items():
        lines.append(f"  profile {profile!r} serves: {', '.join(sorted(names)) or '(no tools)'}")
    lines.append("name each tool as the profile serves it (with the profile's prefix, if it adds one)")
    raise HostError("\n".join(lines))


class LimitedHost(OpsHost, Protocol):
    """What installing quotas needs of the host: its config and databases, and where the quotas go."""

    quotas: Quotas | None


def install_quotas(host: LimitedHost) -> Quotas | None:
    """The host's quotas from ``limits``; ``None`` without the section."""
    config = host.loaded.config.limits
    if config is None or (config.per_member is None and not config.tools):
        return None
    storage = host.loaded.config.storage
    buckets: Buckets
    if storage is None:
        buckets = MemoryBuckets()
    else:
        from hostd.team.ops_databases import QUOTAS, ops_database

        buckets = DatabaseBuckets(ops_database(host, QUOTAS))
    quotas = Quotas(config, buckets)
    host.quotas = quotas
    return quotas
