"""One PostgreSQL LISTEN/NOTIFY channel per process: messages between the processes of a team.

Why it is built this way:

- One listening connection per process, waiting on its socket (psycopg's ``notifies()``): no
  polling, no table of messages. PostgreSQL delivers a ``NOTIFY`` to every session that listens
  on the channel, this process's own included, so each message carries the sender's ``origin``
  and a process skips its own (it delivered them locally already).
- Sending uses a second connection: psycopg holds a connection's lock while ``notifies()`` waits.
- A lost connection (a restart, ``pg_terminate_backend``, a network cut) is reopened with a
  jittered backoff from 0.1 s up to 5 s, and the loss is logged once per outage. What was sent
  while this process was not listening is not replayed: NOTIFY keeps nothing for absent
  listeners, and the subscribers here re-read what they care about.
- A ``NOTIFY`` payload is at most 8,000 bytes: messages are batched up to a smaller bound and a
  single message larger than that is refused by the caller (``MAX_PAYLOAD_BYTES``).

The driver is the ``postgres`` extra, imported when the channel first connects.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hostd_db.urls import describe_url

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["MAX_PAYLOAD_BYTES", "NotifyChannel"]

logger = logging.getLogger("hostd.db.notify")

#: The largest payload sent in one NOTIFY (PostgreSQL's limit is 8,000 bytes).
MAX_PAYLOAD_BYTES = 7_900
_FIRST_RETRY_S = 0.1
_LONGEST_RETRY_S = 5.0


class NotifyChannel:
    """Listen on, and send to, one channel of one PostgreSQL database.

    ``receive(payload)`` is awaited on the event loop for each message sent on the channel.
    ``run()`` listens until cancelled; ``send(payload)`` may be called meanwhile from the same
    event loop.
    """

    def __init__(
        self,
        url: str,
        channel: str,
        receive: Callable[[str], Awaitable[None]],
        *,
        connect_timeout_s: float = 5.0,
    ) -> None:
        if not channel.isidentifier() or len(channel) > 63:
            raise ValueError(f"a channel is a plain identifier of at most 63 characters, got {channel!r}")
        self.url = url
        self.where = describe_url(url)
        self.channel = channel
        self._receive = receive
        self._connect_timeout_s = connect_timeout_s
        self._sender: AsyncConnection[Any] | None = None
        self.listening = False
        """True while the listening connection is up (a message sent now reaches this process)."""
        self.connections_opened = 0
        """How many listening connections this channel has opened (1 without a failure)."""

    async def _connect(self) -> AsyncConnection[Any]:
        from psycopg import AsyncConnection

        return await AsyncConnection.connect(
            self.url,
            autocommit=True,
            connect_timeout=max(1, round(self._connect_timeout_s)),
            application_name=f"hostd-notify-{self.channel}",
        )

    async def run(self, *, started: Callable[[], None] | None = None) -> None:
        """Listen until cancelled, reconnecting after a failure; ``started()`` once the first
        LISTEN is in place (or the first attempt failed: the retries go on behind it)."""
        import anyio
        import psycopg

        delay = _FIRST_RETRY_S
        outage = False
        while True:
            connection = None
            try:
                connection = await self._connect()
                await connection.execute(f'LISTEN "{self.channel}"')
                self.listening = True
                self.connections_opened += 1
                if outage:
                    logger.warning("database %s: listening on %s again", self.where, self.channel)
                outage, delay = False, _FIRST_RETRY_S
                if started is not None:
                    started()
                    started = None
                async for message in connection.notifies():
                    await self._deliver(message.payload)
                # notifies() ends only when the connection does
                raise psycopg.OperationalError("the listening connection ended")
            except psycopg.Error as exc:
                self.listening = False
                if not outage:
                    logger.warning(
                        "database %s: not listening on %s (%s); retrying", self.where, self.channel, exc
                    )
                outage = True
                if started is not None:
                    started()
                    started = None
            finally:
                self.listening = False
                if connection is not None:
                    with anyio.CancelScope(shield=True):
                        await connection.close()
            await anyio.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, _LONGEST_RETRY_S)

    async def _deliver(self, payload: str) -> None:
        try:
            await self._receive(payload)
        except Exception:  # one bad message must not stop the listening
            logger.exception("handling a message on %s failed", self.channel)

    async def send(self, payload: str) -> bool:
        """Send one message to every listener (this process's own included); False when the
        database could not be reached (logged; the caller's change stands, only the message is lost)."""
        import psycopg

        if len(payload.encode()) > MAX_PAYLOAD_BYTES:
            raise ValueError(f"a NOTIFY payload is at most {MAX_PAYLOAD_BYTES} bytes")
        for attempt in (1, 2):  # a sender connection found dead is replaced once
            try:
                if self._sender is None or self._sender.closed:
                    self._sender = await self._connect()
                await self._sender.execute("SELECT pg_notify(%s, %s)", (self.channel, payload))
                return True
            except psycopg.Error as exc:
                if self._sender is not None:
                    await self._sender.close()
                self._sender = None
                if attempt == 2:
                    logger.warning(
                        "database %s: a message on %s was not sent: %s", self.where, self.channel, exc
                    )
        return False

    async def aclose(self) -> None:
        if self._sender is not None:
            await self._sender.close()
            self._sender = None
