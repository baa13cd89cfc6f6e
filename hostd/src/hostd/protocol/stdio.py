"""Serving a host over stdio: the pipe transport (``stdio_pipes``) when both ends are pipes, else
the SDK's; lines that are not JSON-RPC answered with the standard errors; large blocks given back."""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import TYPE_CHECKING, Any

import anyio
from hostd_errors import Text

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server


logger = logging.getLogger("hostd.transport")


def _is_parse_error(exc: BaseException) -> bool:
    """Whether the SDK rejected a line for not being JSON at all (else: JSON, but not a message)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return True  # e.g. undecodable bytes: nothing could be parsed
    return any(error["type"] == "json_invalid" for error in exc.errors(include_url=False))


def _is_nested_too_deep(exc: BaseException) -> bool:
    """Whether the line was JSON the reader gave up on for its depth (pydantic's recursion limit)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return False
    return any(
        error["type"] == "json_invalid"
        and "recursion limit" in str((error.get("ctx") or {}).get("error", ""))
        for error in exc.errors(include_url=False)
    )


def protocol_error_for(exc: BaseException, language: str) -> Any:
    """The JSON-RPC 2.0 answer to a line the SDK could not read: -32700 or -32600, with ``id: null``.

    The id is null because it cannot be trusted from a line that failed to parse or validate.
    """
    import mcp_types as types

    if _is_nested_too_deep(exc):
        code = types.PARSE_ERROR
        message = Text(
            en="Parse error: the line's JSON is nested too deep to be read; send messages whose "
            "arrays and objects nest a few levels, not hundreds.",
            zh="解析错误：该行的 JSON 嵌套过深，无法读取；请让消息中的数组和对象只嵌套几层，而不是数百层。",
        ).render(language)
    elif _is_parse_error(exc):
        code = types.PARSE_ERROR
        message = Text(
            en="Parse error: the line is not valid JSON; send one JSON-RPC 2.0 message per line.",
            zh="解析错误：该行不是有效的 JSON；请每行发送一条 JSON-RPC 2.0 消息。",
        ).render(language)
    else:
        code = types.INVALID_REQUEST
        message = Text(
            en="Invalid Request: the line is JSON but not a JSON-RPC 2.0 request, notification or response.",
            zh="无效请求：该行是 JSON，但不是 JSON-RPC 2.0 的请求、通知或响应。",
        ).render(language)
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message))


class _MalformedLinesAnswered:
    """The SDK's stdin stream, minus the lines that were not JSON-RPC: each is answered and logged.

    The SDK hands such a line to the session as an exception and the session drops it, so a
    client waiting on it would hang; JSON-RPC 2.0 asks for a Parse error / Invalid Request
    with ``id: null``, after which serving goes on. The detail goes to stderr for a person
    debugging an IDE integration. A wrapper rather than a relay task keeps the per-message
    cost at one call.
    """

    def __init__(
        self, inner: Any, answers: Any, language: str, ending: Any = None, grace: float = 0.0
    ) -> None:
        self._inner = inner
        self._answers = answers
        self._language = language
        self._ending = ending  # OpenRequests: at end of input, answer what was read first
        self._grace = grace

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's context from the stream
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio
        from mcp.shared.message import SessionMessage

        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                if self._ending is not None:
                    await self._ending.wait_answered(self._grace)
                raise
            if not isinstance(item, Exception):
                if self._ending is not None:
                    self._ending.read(item)
                return item
            logger.warning("answered a line on stdin that is not JSON-RPC: %s", str(item)[:300])
            await self._answers.send(SessionMessage(protocol_error_for(item, self._language)))

    def __aiter__(self) -> _MalformedLinesAnswered:
        return self

    async def __anext__(self) -> Any:

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _MalformedLinesAnswered:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


MMAP_THRESHOLD_BYTES = 1024 * 1024


def return_large_blocks_to_the_system() -> None:
    """Make glibc give each block of 1 MiB or more back to the system when it is freed.

    glibc raises its mmap threshold each time it frees a mapped block (up to 32 MiB), after
    which blocks the size of a large request body come from the heap and stay resident once
    freed: a run of 30 MB arguments left ~6x the payload in the server's RSS. A fixed
    threshold stops the adjustment. No-op off glibc (macOS, Windows, musl).
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    m_mmap_threshold = -3  # from glibc's <malloc.h>
    if not mallopt(m_mmap_threshold, MMAP_THRESHOLD_BYTES):
        logger.debug("mallopt(M_MMAP_THRESHOLD) refused; large blocks may stay resident")


async def serve_stdio(server: Server[Any], language: str = "en", grace: float = 30.0) -> None:
    """Serve one client on this process's stdin/stdout (stdout carries JSON-RPC only).

    ``language`` is the host's: the one protocol errors for unreadable lines are written in.
    At end of input, the requests read before it are answered (for at most ``grace`` seconds).
    """
    from mcp.server.stdio import stdio_server

    from hostd.protocol.stdio_pipes import AnswersSeen, OpenRequests, pipe_stdio, pipes_on_both_ends

    return_large_blocks_to_the_system()
    try:
        async with contextlib.AsyncExitStack() as stack:
            if pipes_on_both_ends():  # the usual case: served by the event loop, no thread hand-offs
                stdin, stdout = await stack.enter_async_context(pipe_stdio())
            else:  # a terminal or a file: the SDK's own transport
                stdin, stdout = None, None
            read_stream, write_stream = await stack.enter_async_context(stdio_server(stdin, stdout))
            ending = OpenRequests()
            write_stream = AnswersSeen(write_stream, ending)
            await server.run(
                _MalformedLinesAnswered(read_stream, write_stream, language, ending, grace),
                write_stream,
                server.create_initialization_options(),
            )
    except* BrokenPipeError:
        # The client closed our stdout, so it has gone: the session is over, like EOF on stdin.
        logger.info("the client closed stdout; ending the session")
