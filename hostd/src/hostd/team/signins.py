"""Failed sign-ins per client address: after ``failed_signins_per_minute`` refused tokens from one
address (a bearer or X-API-Key token answered 401, a token typed into the dashboard's sign-in
form), that address is told 429 with Retry-After until the minute has room again.

A token bucket per address: ``per_minute`` failures at once, refilled evenly over a minute; a
success takes nothing back. Kept per process (a replica counts what it sees) and bounded: at
most ``MAX_ADDRESSES`` addresses are remembered; beyond, the one that failed longest ago goes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

MAX_ADDRESSES = 10_000


class FailedSignIns:
    """``retry_after(address)`` before a credential is checked, ``failed(address)`` when it is refused."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._rate = per_minute / 60.0  # failures forgiven per second
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (room left, at)

    def _room(self, address: str, now: float) -> float:
        room, at = self._buckets.get(address, (float(self.per_minute), now))
        return min(float(self.per_minute), room + (now - at) * self._rate)

    def retry_after(self, address: str) -> int:
        """Seconds this address must wait before it may present a credential again; 0: it may now."""
        if address not in self._buckets:
            return 0
        room = self._room(address, self._clock())
        if room >= 1.0:
            return 0
        return max(1, math.ceil((1.0 - room) / self._rate))

    def failed(self, address: str) -> None:
        now = self._clock()
        room = self._room(address, now)
        self._buckets.pop(address, None)  # re-inserted last: the mapping stays in order of last failure
        self._buckets[address] = (max(0.0, room - 1.0), now)
        while len(self._buckets) > MAX_ADDRESSES:  # the address that failed longest ago goes first
            del self._buckets[next(iter(self._buckets))]
