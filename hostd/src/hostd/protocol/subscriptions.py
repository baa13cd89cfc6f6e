"""Resource subscriptions: a client hears ``notifications/resources/updated`` when a memory, a task
or a thinking session it subscribed to changes, whichever process changed it.

Where changes come from: a tool call that succeeded reports the resources it changed
(``ToolContext.resource_changed``, and the links a tool that is not read-only answers); the host
publishes them once the call is answered (``CallPipeline.publish_changes``), dashboard actions included,
since they run the same tool functions.

How they travel, on the SDK's own pieces:

- ``ResourceChanges`` is the SDK's ``SubscriptionBus`` (``mcp.server.subscriptions``): local
  listeners on the SDK's ``InMemorySubscriptionBus``, and with ``storage`` (the team's PostgreSQL
  database) every change also sent on one LISTEN/NOTIFY channel (``hostd_db.notify``), so a
  change on one replica reaches the subscribers of every other. With SQLite the processes do not
  hear each other: two ``hostd serve`` on one SQLite file notify only their own clients.
- 2026-07-28: ``subscriptions/listen`` is served by the SDK's ``ListenHandler`` over that bus,
  after ``checked_listen`` has checked each URI (served to this member, existing, bounded). It
  works on stdio and on HTTP, stateless too (the listen's answer is the stream).
- Up to 2025-11-25: ``resources/subscribe`` / ``resources/unsubscribe`` are kept per connection
  (``ConnectionSubscriptions``) and the notification goes on the connection's own channel (stdio,
  the session's GET stream, legacy SSE). A stateless HTTP server has no connection to send on:
  there ``resources/subscribe`` is refused with a clear error, and the ``initialize`` answer does
  not offer ``subscribe``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import mcp_types as types
from hostd_errors import Text
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated, ServerEvent
from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from hostd_db.notify import NotifyChannel
    from mcp.server.connection import Connection
    from mcp.server.context import ServerRequestContext

    from hostd.core.config import LoadedConfig

logger = logging.getLogger("hostd.subscriptions")

T = TypeVar("T")

#: The PostgreSQL channel every replica of a team listens on.
CHANNEL = "hostd_resources"
#: At most this many resources one connection (before 2026-07-28) or one listen stream subscribes to.
MAX_SUBSCRIPTIONS = 100
#: A subscribed URI is at most this long (the longest resource URI hostd serves is far shorter).
MAX_URI_CHARS = 2048
#: Changes waiting to be sent to the other replicas; beyond it they are dropped (and logged).
_OUTGOING_BACKLOG = 4096
_PAYLOAD_BUDGET = 7_000  # bytes of URIs in one NOTIFY (PostgreSQL takes at most 8,000)

#: Where a legacy connection keeps the URIs it subscribed to (``Connection.state``).
_STATE_KEY = "hostd.subscribed"


class ResourceChanges:
    """The server's feed of changed resources: an SDK ``SubscriptionBus``, across replicas with
    ``storage``.

    ``publish`` delivers to this process's listeners at once and queues the change for the
    other replicas; ``running()`` (around serving) listens to them and sends the queue.
    """

    def __init__(self, database_url: str | None = None, *, connect_timeout_s: float = 5.0) -> None:
        self._local = InMemorySubscriptionBus()
        self._database_url = database_url
        self._connect_timeout_s = connect_timeout_s
        self._origin = secrets.token_hex(8)
        self._outgoing: MemoryObjectSendStream[str] | None = None
        self.channel: NotifyChannel | None = None
        """The LISTEN/NOTIFY channel while ``running()`` with ``storage``; else None."""

    @classmethod
    def for_config(cls, loaded: LoadedConfig) -> ResourceChanges:
        """The feed a server of ``loaded`` publishes to: across its replicas when ``storage`` is set."""
        storage = loaded.config.storage
        if storage is None:
            return cls()
        return cls(loaded.database_url, connect_timeout_s=storage.connect_timeout_seconds)

    @property
    def across_processes(self) -> bool:
        return self._database_url is not None

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        return self._local.subscribe(listener)

    async def publish(self, event: ServerEvent) -> None:
        await self._local.publish(event)
        if isinstance(event, ResourceUpdated) and self._outgoing is not None:
            try:
                self._outgoing.send_nowait(event.uri)
            except anyio.WouldBlock:
                logger.warning("too many resource changes waiting for the database; %s not sent", event.uri)

    async def resources_updated(self, uris: Iterable[str]) -> None:
        """Publish each of ``uris`` once."""
        for uri in dict.fromkeys(uris):
            await self.publish(ResourceUpdated(uri=uri))

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Hear the other replicas and tell them, for as long as the block runs (nothing to do
        without ``storage``). The first LISTEN is in place when the block starts, unless the
        database did not answer in time: then it is retried behind."""
        if self._database_url is None:
            yield
            return
        from hostd_db.notify import NotifyChannel

        channel = NotifyChannel(
            self._database_url, CHANNEL, self._received, connect_timeout_s=self._connect_timeout_s
        )
        send, receive = anyio.create_memory_object_stream[str](_OUTGOING_BACKLOG)
        async with anyio.create_task_group() as group:
            started = anyio.Event()
            group.start_soon(lambda: channel.run(started=started.set))
            with anyio.move_on_after(self._connect_timeout_s + 1):
                await started.wait()
            group.start_soon(self._send_batches, channel, receive)
            self.channel, self._outgoing = channel, send
            try:
                yield
            finally:
                self.channel, self._outgoing = None, None
                send.close()
                group.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await channel.aclose()

    async def _send_batches(self, channel: NotifyChannel, receive: MemoryObjectReceiveStream[str]) -> None:
        async with receive:
            async for uri in receive:
                batch, size = [uri], len(uri.encode())
                while True:  # everything already waiting goes in the same message, up to the budget
                    try:
                        more = receive.receive_nowait()
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                    grown = size + len(more.encode()) + 3
                    if grown > _PAYLOAD_BUDGET:
                        await self._send(channel, batch)
                        batch, size = [more], len(more.encode())
                    else:
                        batch.append(more)
                        size = grown
                await self._send(channel, batch)

    async def _send(self, channel: NotifyChannel, uris: list[str]) -> None:
        if len(uris) == 1 and len(uris[0].encode()) > _PAYLOAD_BUDGET:
            logger.warning("a changed URI is too long to send to the other replicas: %.80s", uris[0])
            return
        await channel.send(json.dumps({"o": self._origin, "u": uris}, separators=(",", ":")))

    async def _received(self, payload: str) -> None:
        try:
            message = json.loads(payload)
            origin, uris = message["o"], message["u"]
        except (ValueError, KeyError, TypeError):
            logger.warning("ignored a malformed message on %s", CHANNEL)
            return
        if origin == self._origin:
            return  # this process's own change: delivered when it was published
        for uri in dict.fromkeys(u for u in uris if isinstance(u, str)):
            await self._local.publish(ResourceUpdated(uri=uri))


async def run_with_changes(
    changes: ResourceChanges | None, serve: Callable[..., Awaitable[T]], *args: Any
) -> T:
    """``serve(*args)`` with the change feed running around it."""
    if changes is None:
        return await serve(*args)
    async with changes.running():
        return await serve(*args)


# --- handshake era (up to 2025-11-25): resources/subscribe --------------------------------------


def connection_of(request: ServerRequestContext[Any, Any]) -> Connection | None:
    """The SDK's ``Connection`` a request came on.

    mcp 2.3 hands low-level handlers a per-request ``ServerSession`` that keeps its connection
    private; the connection is what lives as long as the client (its ``state``, ``exit_stack``
    and standalone channel). ``None`` if an SDK release moves it: subscribing is then refused
    (``tests/test_subscriptions.py`` fails first).
    """
    from mcp.server.connection import Connection

    connection = getattr(request.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


class ConnectionSubscriptions:
    """The URIs each handshake-era connection subscribed to, and the notifications sent to them.

    A listener on the bus: a change to a subscribed URI is sent on the connection's own channel,
    once while a send to it is pending (updates are level triggers: "read it again").
    A connection's subscriptions end with it (its ``exit_stack``).
    """

    def __init__(self, bus: ResourceChanges) -> None:
        self._by_uri: dict[str, dict[int, Connection]] = {}
        self._pending: set[tuple[int, str]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        bus.subscribe(self._changed)

    @staticmethod
    def of(connection: Connection) -> set[str]:
        subscribed: set[str] = connection.state.setdefault(_STATE_KEY, set())
        return subscribed

    def add(self, connection: Connection, uri: str) -> None:
        subscribed = self.of(connection)
        if not subscribed and not connection.state.get(_STATE_KEY + ".cleanup"):
            connection.state[_STATE_KEY + ".cleanup"] = True
            connection.exit_stack.callback(self._forget, connection)
        subscribed.add(uri)
        self._by_uri.setdefault(uri, {})[id(connection)] = connection

    def remove(self, connection: Connection, uri: str) -> None:
        self.of(connection).discard(uri)
        holders = self._by_uri.get(uri)
        if holders is not None:
            holders.pop(id(connection), None)
            if not holders:
                del self._by_uri[uri]

    def _forget(self, connection: Connection) -> None:
        for uri in list(self.of(connection)):
            self.remove(connection, uri)

    @property
    def subscribed_uris(self) -> int:
        """How many URIs some connection is subscribed to (for tests and metrics)."""
        return len(self._by_uri)

    def _changed(self, event: ServerEvent) -> None:
        if not isinstance(event, ResourceUpdated):
            return
        for connection in list(self._by_uri.get(event.uri, {}).values()):
            key = (id(connection), event.uri)
            if key in self._pending:
                continue
            self._pending.add(key)
            task = asyncio.get_running_loop().create_task(self._send(connection, event.uri, key))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, connection: Connection, uri: str, key: tuple[int, str]) -> None:
        try:
            await connection.send_resource_updated(uri)  # best effort: never raises
        finally:
            self._pending.discard(key)


# --- checks shared by both eras -----------------------------------------------------------------

#: ``check(request, uri)``: raises the ``MCPError`` a client gets for a URI it may not subscribe to.
CheckUri = Callable[["ServerRequestContext[Any, Any]", str], Awaitable[None]]


def too_many(language: str, where: str) -> MCPError:
    if where == "connection":
        message = Text(
            en=f"At most {MAX_SUBSCRIPTIONS} resource subscriptions per connection; "
            "unsubscribe from some first (resources/unsubscribe).",
            zh=f"每个连接最多订阅 {MAX_SUBSCRIPTIONS} 个资源；请先取消一些订阅（resources/unsubscribe）。",
        ).render(language)
    else:
        message = Text(
            en=f"At most {MAX_SUBSCRIPTIONS} resources in one subscriptions/listen; listen to fewer.",
            zh=f"一次 subscriptions/listen 最多订阅 {MAX_SUBSCRIPTIONS} 个资源；请减少订阅的资源。",
        ).render(language)
    data = {"code": "TOO_MANY_SUBSCRIPTIONS", "limit": MAX_SUBSCRIPTIONS}
    return MCPError(types.INVALID_PARAMS, message, data)


def uri_too_long(language: str, uri: str) -> MCPError:
    return MCPError(
        types.INVALID_PARAMS,
        Text(
            en=f"A resource URI is at most {MAX_URI_CHARS} characters (this one has {len(uri)}).",
            zh=f"资源 URI 最多 {MAX_URI_CHARS} 个字符（此 URI 有 {len(uri)} 个）。",
        ).render(language),
        {"code": "INVALID_ARGUMENT", "argument": "uri", "max_chars": MAX_URI_CHARS},
    )


def no_connection(language: str) -> MCPError:
    return MCPError(
        types.INVALID_REQUEST,
        Text(
            en="resources/subscribe needs a connection to send notifications/resources/updated on, and "
            "this server answers each HTTP request on its own (stateless): there is none. Use protocol "
            "2026-07-28 (subscriptions/listen), stdio, or a server with transport.stateless false.",
            zh="resources/subscribe 需要一个连接来发送 notifications/resources/updated，而本服务器"
            "（无状态 HTTP）单独回答每个请求，没有这样的连接。请使用 2026-07-28 协议"
            "（subscriptions/listen）、stdio，或 transport.stateless 为 false 的服务器。",
        ).render(language),
        {"code": "NOT_SUPPORTED", "method": "resources/subscribe"},
    )


#: Every service of this process, so a stopping server can end their listen streams.
_SERVICES: weakref.WeakSet[SubscriptionService] = weakref.WeakSet()


def end_listens() -> None:
    """End every open ``subscriptions/listen`` stream of this process gracefully (each sends its
    final result, so the client knows to listen again elsewhere): a stopping server calls it, as a
    listen would otherwise hold the stop for the whole grace period."""
    for service in list(_SERVICES):
        service.listen_handler.close()


class SubscriptionService:
    """What the server answers for subscriptions in both eras, over one ``ResourceChanges``.

    ``check(request, uri)`` is the server's: the URI names a resource this member's profile
    serves and that exists (else the same error ``resources/read`` gives).
    """

    def __init__(self, changes: ResourceChanges, check: CheckUri, language: str) -> None:
        self.changes = changes
        self.connections = ConnectionSubscriptions(changes)
        self.listen_handler = ListenHandler(changes, max_buffered_events=MAX_SUBSCRIPTIONS * 4)
        self._check = check
        self._language = language
        _SERVICES.add(self)

    async def _checked(self, request: ServerRequestContext[Any, Any], uri: str) -> None:
        if len(uri) > MAX_URI_CHARS:
            raise uri_too_long(self._language, uri)
        await self._check(request, uri)

    def _connection(self, request: ServerRequestContext[Any, Any]) -> Connection:
        connection = connection_of(request)
        if connection is None or not connection.has_standalone_channel:
            raise no_connection(self._language)
        return connection

    async def subscribe(
        self, request: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/subscribe`` (up to 2025-11-25)."""
        connection = self._connection(request)
        uri = str(params.uri)
        subscribed = self.connections.of(connection)
        if uri not in subscribed and len(subscribed) >= MAX_SUBSCRIPTIONS:
            raise too_many(self._language, "connection")
        await self._checked(request, uri)
        self.connections.add(connection, uri)
        return types.EmptyResult()

    async def unsubscribe(
        self, request: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/unsubscribe``: a URI not subscribed to is no error (nothing to undo)."""
        self.connections.remove(self._connection(request), str(params.uri))
        return types.EmptyResult()

    async def listen(
        self, request: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """``subscriptions/listen`` (2026-07-28): every URI checked, then the SDK's handler."""
        uris = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        if len(uris) > MAX_SUBSCRIPTIONS:
            raise too_many(self._language, "listen")
        for uri in uris:
            await self._checked(request, uri)
        # Only resource updates are ever sent: a list-changed kind asked for is not acknowledged.
        honest = params.notifications.model_copy(
            update={"tools_list_changed": None, "prompts_list_changed": None, "resources_list_changed": None}
        )
        return await self.listen_handler(request, params.model_copy(update={"notifications": honest}))

    async def offer_only_where_possible(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        """Middleware: a connection with no channel of its own (stateless HTTP) is not offered
        ``resources.subscribe`` in its ``initialize`` answer."""
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict):
            connection = connection_of(ctx)
            if connection is None or not connection.has_standalone_channel:
                resources = result.get("capabilities", {}).get("resources")
                if isinstance(resources, dict):
                    resources.pop("subscribe", None)
        return result
