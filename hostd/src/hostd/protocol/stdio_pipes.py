"""stdin and stdout served from the event loop when both are pipes, with no worker threads.

The SDK's stdio transport reads and writes through ``anyio.wrap_file``: every line read, every
answer written and every flush is a hand-off to a worker thread and back, three per tool call.
On a small call that is a fifth of the round trip. When both ends are pipes or sockets, as an
IDE starts a stdio server, the event loop can watch them itself; anything else (a terminal, a
file, Windows) keeps the SDK's transport.

While serving, fd 0 reads the null device and fd 1 writes to stderr, so a plugin or a child
process that prints cannot corrupt the protocol; both are restored afterwards (the same
guarantee the SDK's transport gives).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

logger = logging.getLogger(__name__)

#: The reader's limit on one line: none in practice (the SDK's transport has none either).
READ_LIMIT = 2**31
#: How long answers still buffered at the end may take to be written.
DRAIN_SECONDS = 5.0


def pipes_on_both_ends() -> bool:
    """Whether fd 0 and fd 1 are pipes or sockets, so the event loop can serve them directly."""
    if sys.platform == "win32":
        return False
    try:
        modes = [os.fstat(fd).st_mode for fd in (0, 1)]
    except OSError:
        return False
    return all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in modes)


def _dup_above_std(fd: int) -> int:
    """A duplicate that cannot land on 0, 1 or 2 (one of them may be closed and free)."""
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


@contextlib.contextmanager
def claimed_std_fds() -> Iterator[tuple[int, int]]:
    """Private duplicates of fd 0 and fd 1 for the protocol; fd 0 reads the null device and fd 1
    goes to stderr until the block ends, when both are pointed back at the wire."""
    stdin_fd = _dup_above_std(0)
    stdout_fd = _dup_above_std(1)
    opened = os.open(os.devnull, os.O_RDWR)
    null = _dup_above_std(opened)
    os.close(opened)  # it may have landed on a free 0-2, which must stay free for the checks below
    try:
        os.dup2(null, 0)
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr (closed by the parent): stray output goes nowhere
            os.dup2(null, 1)
    finally:
        os.close(null)
    try:
        yield stdin_fd, stdout_fd
    finally:
        with contextlib.suppress(OSError):
            os.dup2(stdin_fd, 0)
        with contextlib.suppress(OSError):
            os.dup2(stdout_fd, 1)
        os.close(stdin_fd)
        os.close(stdout_fd)


class PipeLines:
    """The client's lines, read by the event loop (``async for line in stdin``, as the SDK reads)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _WriteSide(asyncio.BaseProtocol):
    """Flow control for the stdout pipe: writers wait while the loop's buffer is over its mark."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._resumed: asyncio.Future[None] | None = None
        self.lost: asyncio.Future[None] = loop.create_future()

    def pause_writing(self) -> None:
        if self._resumed is None:
            self._resumed = self._loop.create_future()

    def resume_writing(self) -> None:
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)
        self._resumed = None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)
        self.resume_writing()

    async def drain(self) -> None:
        if self._resumed is not None:
            await self._resumed
        if self.lost.done():
            raise BrokenPipeError("the client closed stdout")


class PipeWriter:
    """The server's answers, written by the event loop; ``flush`` waits while the pipe is full."""

    def __init__(self, transport: asyncio.WriteTransport, side: _WriteSide) -> None:
        self._transport = transport
        self._side = side

    async def write(self, text: str) -> None:
        if self._side.lost.done() or self._transport.is_closing():
            raise BrokenPipeError("the client closed stdout")
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._side.drain()


@contextlib.asynccontextmanager
async def pipe_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """``(stdin, stdout)`` for the SDK's ``stdio_server(stdin, stdout)``, served by the event loop.

    On the way out, answers still buffered are written (for at most ``DRAIN_SECONDS``: a client
    that stopped reading cannot hold the process).
    """
    import anyio

    loop = asyncio.get_running_loop()
    with claimed_std_fds() as (stdin_fd, stdout_fd):
        # The transports own duplicates, so closing them leaves the descriptors restored above.
        reader = asyncio.StreamReader(limit=READ_LIMIT, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(_dup_above_std(stdin_fd), "rb", buffering=0),
        )
        side = _WriteSide(loop)
        write_transport, _ = await loop.connect_write_pipe(
            lambda: side, os.fdopen(_dup_above_std(stdout_fd), "wb", buffering=0)
        )
        try:
            yield PipeLines(reader), PipeWriter(write_transport, side)
        finally:
            read_transport.close()
            write_transport.close()  # writes what is buffered, then reports the connection lost
            with anyio.CancelScope(shield=True), anyio.move_on_after(DRAIN_SECONDS):
                await side.lost
            write_transport.abort()


class OpenRequests:
    """The requests read from stdin and not answered yet, so end of input can wait for them.

    A client that writes its requests and closes stdin (``printf ... | hostd serve``, a script)
    is owed every answer: the SDK ends the session at end of input and would cut the handlers
    still running, answering each with "Connection closed".
    """

    def __init__(self) -> None:
        self._ids: set[Any] = set()
        self._changed: Any = None

    def read(self, item: Any) -> None:
        from mcp.types import JSONRPCNotification, JSONRPCRequest

        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCRequest):
            self._ids.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            self._discard((message.params or {}).get("requestId"))  # a cancelled call gets no answer

    def written(self, item: Any) -> None:
        from mcp.types import JSONRPCError, JSONRPCResponse

        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._discard(message.id)

    def _discard(self, request_id: Any) -> None:
        self._ids.discard(request_id)
        if self._changed is not None:
            self._changed.set()

    async def wait_answered(self, grace: float) -> None:
        """Until every request read is answered, for at most ``grace`` seconds."""
        import anyio

        with anyio.move_on_after(grace) as scope:
            while self._ids:
                self._changed = anyio.Event()
                await self._changed.wait()
        if scope.cancelled_caught:
            logger.warning(
                "end of input: %d request(s) still unanswered after %g s are cut", len(self._ids), grace
            )


class AnswersSeen:
    """The session's write stream, telling ``OpenRequests`` which requests are answered."""

    def __init__(self, inner: Any, requests: OpenRequests) -> None:
        self._inner = inner
        self._requests = requests

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        self._requests.written(item)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> AnswersSeen:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._inner.__aexit__(*exc_info)
