"""Long-lived streams of HTTP members: how many one member holds, and their end when the member goes.

A stream is a request that stays open to carry notifications: the Streamable HTTP GET at
``/mcp``, the legacy SSE GET at ``/sse`` and a 2026-07-28 ``subscriptions/listen``, whose answer
is the stream. Two rules apply to them, both keyed by the member the guard identified:

- **A cap per member** (``transport.max_streams_per_member``, below ``max_connections``): one
  member holding many idle streams cannot take the connections the others need; the next one
  is refused 429 with Retry-After.
- **Revocation reaches open streams**: every ``CHECK_SECONDS`` one task asks the member
  directory whether each stream's member still holds the credential that opened it (a tokens
  file member still listed with the same token and profile; an OAuth member still in the
  ``members_file``, with a token not expired). When not, the stream's request is cancelled
  and its answer ended, so a member removed or rotated out stops receiving
  ``notifications/resources/updated`` within seconds.

The guard calls ``StreamWatch.open`` once the body is read and, for a stream, runs the route
through ``StreamWatch.serve``; other requests pay one check of the method and, for a POST,
``opens_a_listen`` (a byte search; a parse only when the body could name a listen).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from hostd.core.identity import Member
    from hostd.protocol.guard import HttpPolicy
    from hostd.team.auth.verifier import Admitted

logger = logging.getLogger("hostd.transport")

#: How often open streams are checked against the member directory.
CHECK_SECONDS = 1.0
#: Seconds a client refused at the cap is told to wait before it tries again.
RETRY_AFTER_SECONDS = 5
LISTEN_METHOD = "subscriptions/listen"
#: GET paths that are no stream (answered at once).
_NOT_STREAMS = frozenset({"/metrics", "/healthz", "/readyz"})


def opens_a_listen(body: bytes) -> bool:
    """Whether a POST body is (or a batch holding) a ``subscriptions/listen`` request.

    Decided on the parsed JSON, so every spelling the SDK accepts counts (``subscriptions\\/listen``,
    ``\\u006c...``). A body without a backslash has no escapes, so without the word ``listen`` it
    cannot name the method and is not parsed (a byte search for a backslash costs next to nothing;
    parsing a body costs about what one search for a word does, a fraction of what the SDK then
    spends reading it).
    """
    if b"\\" not in body and b"listen" not in body:
        return False
    from pydantic_core import from_json

    try:
        message = from_json(body)
    except ValueError:
        return False  # the route answers a parse error: nothing is opened
    items = message if isinstance(message, list) else [message]
    return any(isinstance(item, dict) and item.get("method") == LISTEN_METHOD for item in items)


@dataclass(eq=False)
class Held:
    """One open stream: whose it is, how to tell they still may hold it, how to end it."""

    member: str
    still_valid: Callable[[], bool] | None
    cancel: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    revoked: bool = False


class _Answer:
    """The route's ``send``, remembering how far the answer got (to end it cleanly when cut)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.finished = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.finished = True
        await self._send(message)


class StreamWatch:
    """The open streams of one HTTP server, per member; see the module's docstring."""

    def __init__(self, policy: HttpPolicy, *, check_seconds: float = CHECK_SECONDS) -> None:
        self.policy = policy
        self.check_seconds = check_seconds
        transport = policy.transport
        #: The cap: the configured one, and never all the connections there are.
        self.limit = max(1, min(transport.max_streams_per_member, transport.max_connections - 1))
        self.per_member: dict[str, int] = {}
        self._held: set[Held] = set()
        self._task: asyncio.Task[None] | None = None

    # --- opening ---------------------------------------------------------------------------------

    @staticmethod
    def is_stream(scope: Scope, pending: list[Message]) -> bool:
        method = scope["method"]
        if method == "GET":
            return scope["path"] not in _NOT_STREAMS
        if method == "POST" and pending:
            return opens_a_listen(pending[0].get("body", b""))
        return False

    def open(
        self, scope: Scope, member: Member, admitted: Admitted | None, pending: list[Message]
    ) -> tuple[Held | None, tuple[int, str, dict[str, str]] | None]:
        """For a stream: its ``Held`` (counted from now on), or the 429 refusing it at the cap.
        ``(None, None)`` for any other request."""
        if not self.is_stream(scope, pending):
            return None, None
        name = member.name
        if self.per_member.get(name, 0) >= self.limit:
            logger.info("refused a stream of member %s: %d open (max_streams_per_member)", name, self.limit)
            return None, self.too_many()
        held = Held(name, self._validity(member, admitted))
        self.per_member[name] = self.per_member.get(name, 0) + 1
        return held, None

    def too_many(self) -> tuple[int, str, dict[str, str]]:
        limit = self.limit
        return (
            429,
            self.policy.text(
                en=f"Too many open streams for one member (limit {limit}, transport.max_streams_per_member); "
                f"close streams you no longer use, or retry in {RETRY_AFTER_SECONDS} s",
                zh=f"同一成员打开的流过多（上限 {limit}，transport.max_streams_per_member）；"
                f"请关闭不再使用的流，或在 {RETRY_AFTER_SECONDS} 秒后重试",
            ),
            {"Retry-After": str(RETRY_AFTER_SECONDS)},
        )

    def _validity(self, member: Member, admitted: Admitted | None) -> Callable[[], bool] | None:
        """How to tell the stream's member still holds what opened it (``None``: nothing to watch)."""
        name = member.name
        if admitted is None:
            directory = self.policy.members
            if not directory.requires_token:
                return None
            opened_with = directory.lookup(name)  # the token's digest and the member, as identified
            if opened_with is None or opened_with[1] != member:
                return lambda: False  # removed between the check and now
            return lambda: directory.lookup(name) == opened_with
        oauth = self.policy.oauth
        allowed = oauth.verifier.allowed if oauth is not None else None
        expires_at = admitted.expires_at
        if expires_at is not None and oauth is not None:
            expires_at += oauth.config.leeway_seconds
        if allowed is None and expires_at is None:
            return None  # anyone the issuer vouches for, for good: nothing to watch
        listed = allowed.lookup(name) if allowed is not None else None

        def still_valid() -> bool:
            if expires_at is not None and time.time() >= expires_at:
                return False  # the token ran out: a new one opens a new stream
            return allowed is None or allowed.lookup(name) == listed

        return still_valid

    # --- serving ---------------------------------------------------------------------------------

    async def serve(self, held: Held, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the stream's route; cut it when its member is revoked; uncount it when it ends."""
        answer = _Answer(send)
        if held.still_valid is not None:
            self._held.add(held)
            self._start_watching()
        try:
            with held.cancel:
                await app(scope, receive, answer)
        finally:
            self._held.discard(held)
            left = self.per_member.get(held.member, 1) - 1
            if left > 0:
                self.per_member[held.member] = left
            else:
                self.per_member.pop(held.member, None)
        if held.revoked:
            await self._end(scope, answer)

    async def _end(self, scope: Scope, answer: _Answer) -> None:
        logger.warning(
            "ended a stream (%s %s): its member was removed or their credential replaced",
            scope.get("method"),
            scope.get("path"),
        )
        with contextlib.suppress(OSError):  # the client may be gone already
            if not answer.started:
                from starlette.responses import PlainTextResponse

                reason = self.policy.unauthorized_text()
                await PlainTextResponse(reason, status_code=401)(scope, _nothing, answer)
            elif not answer.finished:
                await answer({"type": "http.response.body", "body": b"", "more_body": False})

    def _start_watching(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while self._held:
            await asyncio.sleep(self.check_seconds)
            for held in list(self._held):
                if held.revoked or held.still_valid is None:
                    continue
                try:
                    valid = held.still_valid()
                except Exception:  # a defect here must not end every stream, nor the watch
                    logger.exception("could not check a stream's member")
                    continue
                if not valid:
                    held.revoked = True
                    held.cancel.cancel()
        self._task = None

    @property
    def open_streams(self) -> int:
        return sum(self.per_member.values())


async def _nothing() -> Message:
    return {"type": "http.disconnect"}
