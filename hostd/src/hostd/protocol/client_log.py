"""The server's log records, sent to the client whose request they were written for.

MCP log notifications (``notifications/message``) carry the records the host and its plugins
write (``hostd.*`` loggers, a plugin's ``ctx.logger``) while one of a client's requests is
handled, at or above the level that client asked for:

- handshake protocol versions (up to 2025-11-25): ``logging/setLevel`` sets the level for the
  connection; until a client sets one, it is sent nothing;
- 2026-07-28: ``logging/setLevel`` is gone; a request opts in with the
  ``io.modelcontextprotocol/logLevel`` key of its ``_meta`` (the SDK's client sets it from its
  ``log_level`` option).

Only a record's message and logger name leave the server: never the traceback of an
``exception()`` record, which may hold what a client must not see. A stateless HTTP server has
no connection to remember a ``logging/setLevel`` in; the 2026-07-28 opt-in works there.
"""

from __future__ import annotations

import logging
import warnings
import weakref
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

logger = logging.getLogger("hostd.client_log")

#: The MCP levels (RFC 5424, least severe first) as Python levels: a record is sent when its
#: level is at least the client's. notice, alert and emergency sit between Python's own.
MCP_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": 55,
    "emergency": 60,
}

#: At most this many records of one request are sent (a loop that logs must not flood a client).
MAX_RECORDS_PER_REQUEST = 100
#: A record's message is cut to this many characters.
MAX_MESSAGE_CHARS = 2000


def mcp_level(levelno: int) -> types.LoggingLevel:
    """The MCP level a Python record is sent at."""
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= logging.INFO:
        return "info"
    return "debug"


@dataclass
class RequestLog:
    """The records of one request at or above its client's level, in the order written."""

    threshold: int
    records: list[tuple[types.LoggingLevel, str, str]] = field(default_factory=list)
    dropped: int = 0

    def add(self, record: logging.LogRecord) -> None:
        if record.levelno < self.threshold:
            return
        if len(self.records) >= MAX_RECORDS_PER_REQUEST:
            self.dropped += 1
            return
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format
            message = str(record.msg)
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS] + "…"
        self.records.append((mcp_level(record.levelno), record.name, message))


#: The log of the request being handled; worker threads of a call see it too (anyio copies the
#: context into them).
CURRENT: ContextVar[RequestLog | None] = ContextVar("hostd_request_log", default=None)


class ClientLogHandler(logging.Handler):
    """Hands each record to the log of the request it was written for, if any."""

    def emit(self, record: logging.LogRecord) -> None:
        log = CURRENT.get()
        if log is not None:
            log.add(record)


_HANDLER = ClientLogHandler()
_SERVED_LOGGER = logging.getLogger("hostd")


def install() -> None:
    """Attach the handler to the ``hostd`` loggers, once per process."""
    if _HANDLER not in _SERVED_LOGGER.handlers:
        _SERVED_LOGGER.addHandler(_HANDLER)


def _let_through(threshold: int) -> None:
    """Make the ``hostd`` loggers write records down to ``threshold``, which a client asked for.

    The stderr log keeps its own level (its handler's, see ``hostd.cli.main``), so it does not grow.
    """
    if _SERVED_LOGGER.getEffectiveLevel() > threshold:
        _SERVED_LOGGER.setLevel(threshold)


class SessionLevels:
    """The level each handshake-era connection set with ``logging/setLevel``.

    Keyed by the connection's ``initialize`` parameters, which live exactly as long as the
    connection (the SDK makes a new session object per request, not per connection).
    """

    def __init__(self) -> None:
        self._levels: dict[int, int] = {}

    def set(self, request: ServerRequestContext[Any, Any], level: str) -> None:
        owner = request.session.client_params
        threshold = MCP_LEVELS[level]
        _let_through(threshold)
        if owner is None:
            return
        key = id(owner)
        if key not in self._levels:
            weakref.finalize(owner, self._levels.pop, key, None)
        self._levels[key] = threshold

    def threshold(self, request: ServerRequestContext[Any, Any]) -> int | None:
        """The level below which nothing of this request is sent; ``None``: send nothing."""
        if request.protocol_version in MODERN_PROTOCOL_VERSIONS:
            asked = (request.meta or {}).get(types.LOG_LEVEL_META_KEY)
            if not isinstance(asked, str) or asked not in MCP_LEVELS:
                return None
            _let_through(MCP_LEVELS[asked])
            return MCP_LEVELS[asked]
        owner = request.session.client_params
        return None if owner is None else self._levels.get(id(owner))


def middleware(levels: SessionLevels) -> Any:
    """Server middleware: collect the request's records, send them before its answer."""

    async def send_request_logs(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        threshold = levels.threshold(ctx)
        if threshold is None:
            return await call_next(ctx)
        log = RequestLog(threshold)
        token = CURRENT.set(log)
        try:
            return await call_next(ctx)
        finally:
            CURRENT.reset(token)
            await _send(ctx, log)

    return send_request_logs


async def _send(ctx: ServerRequestContext[Any, Any], log: RequestLog) -> None:
    records = list(log.records)
    if log.dropped:
        records.append(("warning", "hostd", f"{log.dropped} more log records of this request were not sent"))
    for level, name, message in records:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await ctx.session.send_log_message(
                    level, message, logger=name, related_request_id=ctx.request_id
                )
        except Exception:  # log delivery is best effort: the answer still goes out
            logger.debug("log notification not delivered", exc_info=True)
            return
