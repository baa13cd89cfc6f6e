"""Fetching one article page over HTTP: the only network code of the plugin.

Built on ``http.client`` so the plugin holds every socket it opens, which is what lets a fetch
stop on time: each attempt has one deadline (``timeout_s``) for everything from connecting to
the last byte, enforced by a timer that shuts the socket, so a page trickling in a byte at a
time cannot hold a fetch past it; and a ``FetchCanceller`` shuts the sockets of every fetch it
watches at once, when the client cancels or the server shuts down.

Redirects are followed by hand so every target is checked against the allowed prefixes (and
a hop to WeChat's captcha path is reported as a challenge); the body is read in chunks and
refused once it passes the size cap; a 5xx answer, a timeout or a dropped connection is
retried with exponential backoff, at most ``retries`` times.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, urljoin, urlsplit

from hostd import Text, trace_span
from hostd_wechat.classify import CAPTCHA_PATH
from hostd_wechat.urls import UrlPrefix, check_url, redacted_url, redirect_is_captcha

if TYPE_CHECKING:  # http.client and ssl load on the first fetch: importing the plugin stays cheap
    import http.client

MAX_REDIRECTS = 5
_CHUNK = 64 * 1024
_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
# Characters left as they are when a path or query is quoted for the request line.
_SAFE_IN_PATH = "/%:@!$&'()*+,;=-._~"
_SAFE_IN_QUERY = _SAFE_IN_PATH + "?"


PAGE_ACCEPT = "text/html,application/xhtml+xml"

#: What a failed fetch's ``detail`` says (shown after the item's hint in a detailed answer).
CAPTCHA_REDIRECT = Text(en="redirected to the captcha page", zh="被重定向到验证码页面")
RESPONSE_TOO_LARGE = Text(en="more than {max_bytes} bytes", zh="超过 {max_bytes} 字节")


@dataclass
class FetchOptions:
    prefixes: list[UrlPrefix]
    timeout_s: float
    max_bytes: int
    user_agent: str
    retries: int = 2
    backoff_s: float = 0.5
    accept: str = PAGE_ACCEPT
    #: Pages read the body of a 404 (WeChat's "deleted" pages say why); images need only a 2xx body.
    read_error_bodies: bool = True


@dataclass
class FetchResult:
    """Either the answer (``body``; ``html`` for pages; the final URL and status) or an error code,
    reason and detail."""

    url: str
    final_url: str = ""
    html: str = ""
    body: bytes = b""
    http_status: int = 0
    charset: str = ""
    error_code: str | None = None
    reason: str | None = None
    detail: Text | None = None

    @property
    def ok(self) -> bool:
        return self.error_code is None


class FetchCanceller:
    """Stops fetches from another thread: ``cancel()`` marks them cancelled and shuts their sockets.

    A blocked ``recv`` returns at once when its socket is shut down, so a cancelled fetch ends
    now rather than at its timeout, and the server sees the connection closed.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._sockets: set[socket.socket] = set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            sockets = list(self._sockets)
        for sock in sockets:
            shut_socket(sock)

    @contextlib.contextmanager
    def watching(self, sock: socket.socket) -> Iterator[None]:
        with self._lock:
            self._sockets.add(sock)
            already = self._cancelled
        if already:
            shut_socket(sock)
        try:
            yield
        finally:
            with self._lock:
                self._sockets.discard(sock)


def shut_socket(sock: socket.socket) -> None:
    """Wake whatever thread reads ``sock`` (TLS or not) and tell the peer we are gone."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Retryable(Exception):
    """A failure worth another try (5xx, timeout, dropped connection)."""

    def __init__(self, result: FetchResult) -> None:
        super().__init__(str(result.detail or ""))
        self.result = result


class _Cancelled(Exception):
    pass


def _wait(seconds: float, canceller: FetchCanceller) -> bool:
    """Sleep in small steps; False when cancelled meanwhile."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if canceller.cancelled:
            return False
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    return not canceller.cancelled


def fetch_page(url: str, options: FetchOptions, canceller: FetchCanceller) -> FetchResult:
    """Fetch the page at ``url`` (already checked against the prefixes) with retries; ``html`` is its text."""
    result = fetch_bytes(url, options, canceller)
    if result.ok:
        charset = result.charset or "utf-8"
        try:
            result.html = result.body.decode(charset, errors="replace")
        except LookupError:
            result.html = result.body.decode("utf-8", errors="replace")
        result.body = b""
    return result


def fetch_bytes(url: str, options: FetchOptions, canceller: FetchCanceller) -> FetchResult:
    """Fetch ``url`` (already checked against the prefixes) with retries; ``body`` holds the bytes.

    With tracing on, one client span per fetch (retries and redirects inside it), under the
    tool call's: OpenTelemetry's HTTP attributes, the URL's query values redacted."""
    with trace_span("GET", "CLIENT", **{"http.request.method": "GET", "url.full": redacted_url(url)}) as span:
        result = _fetch_with_retries(url, options, canceller)
        if result.http_status:
            span.set("http.response.status_code", result.http_status)
        if result.error_code:
            span.fail(result.error_code)
        return result


def _fetch_with_retries(url: str, options: FetchOptions, canceller: FetchCanceller) -> FetchResult:
    attempts = 0
    while True:
        attempts += 1
        if canceller.cancelled:
            return FetchResult(url, error_code="CANCELLED", reason="cancelled")
        try:
            result = _fetch_once(url, options, canceller)
        except _Cancelled:
            return FetchResult(url, error_code="CANCELLED", reason="cancelled")
        except _Retryable as retry:
            result = retry.result
            if attempts <= options.retries and _wait(options.backoff_s * 2 ** (attempts - 1), canceller):
                continue
        return result


class _Attempt:
    """One attempt's deadline: a timer shuts the open socket when it passes."""

    def __init__(self, timeout_s: float, canceller: FetchCanceller) -> None:
        self.deadline = time.monotonic() + timeout_s
        self.canceller = canceller
        self.expired = False

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    @contextlib.contextmanager
    def guarding(self, connection: http.client.HTTPConnection) -> Iterator[None]:
        """Connect ``connection`` within the deadline, then keep its socket under the timer and canceller."""
        remaining = self.remaining()
        if remaining <= 0:
            self.expired = True
            raise TimeoutError("the time limit passed")
        connection.timeout = remaining
        connection.connect()
        sock = connection.sock
        assert sock is not None

        def expire() -> None:
            self.expired = True
            shut_socket(sock)

        timer = threading.Timer(max(0.0, self.remaining()), expire)
        timer.daemon = True
        timer.start()
        try:
            with self.canceller.watching(sock):
                yield
        finally:
            timer.cancel()
            connection.close()


def _connection(url: str, timeout_s: float) -> tuple[http.client.HTTPConnection, str]:
    import http.client
    import ssl

    parts = urlsplit(url)
    target = quote(parts.path or "/", safe=_SAFE_IN_PATH)
    if parts.query:
        target += "?" + quote(parts.query, safe=_SAFE_IN_QUERY)
    host, port = parts.hostname or "", parts.port
    if parts.scheme == "https":
        context = ssl.create_default_context()
        return http.client.HTTPSConnection(host, port, timeout=timeout_s, context=context), target
    return http.client.HTTPConnection(host, port, timeout=timeout_s), target


def _fetch_once(url: str, options: FetchOptions, canceller: FetchCanceller) -> FetchResult:
    import http.client

    current = url
    attempt = _Attempt(options.timeout_s, canceller)
    for _hop in range(MAX_REDIRECTS + 1):
        connection, target = _connection(current, options.timeout_s)
        try:
            with attempt.guarding(connection):
                connection.request(
                    "GET",
                    target,
                    headers={
                        "User-Agent": options.user_agent,
                        "Accept": options.accept,
                        "Accept-Encoding": "gzip, deflate",
                        "Connection": "close",
                    },
                )
                response = connection.getresponse()
                status = response.status
                if status in _REDIRECT_CODES:
                    next_url = urljoin(current, response.getheader("Location", "") or "")
                    refused = _refused_redirect(url, next_url, status, options)
                    if refused is not None:
                        return refused
                    current = next_url
                    continue
                if status >= 500:
                    raise _Retryable(
                        FetchResult(
                            url,
                            final_url=current,
                            http_status=status,
                            error_code="NETWORK_ERROR",
                            reason="server_error",
                            detail=Text.same(f"HTTP {status}"),
                        )
                    )
                if status == 429:
                    return FetchResult(
                        url,
                        final_url=current,
                        http_status=429,
                        error_code="CHALLENGE",
                        reason="rate_limited",
                        detail=Text.same("HTTP 429"),
                    )
                if status >= 400 and not options.read_error_bodies:
                    return FetchResult(
                        url,
                        final_url=current,
                        http_status=status,
                        error_code="NOT_FOUND" if status in (404, 410) else "NETWORK_ERROR",
                        reason=f"http_{status}",
                        detail=Text.same(f"HTTP {status}"),
                    )
                return _read_body(response, url, current, options, attempt)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if canceller.cancelled:
                raise _Cancelled from None
            if attempt.expired or isinstance(exc, TimeoutError):
                raise _Retryable(
                    FetchResult(
                        url,
                        final_url=current,
                        error_code="TIMEOUT",
                        reason="timeout",
                        detail=Text(
                            en="no complete answer within {seconds} s", zh="{seconds} 秒内没有收到完整的回答"
                        ).format(seconds=f"{options.timeout_s:g}"),
                    )
                ) from None
            raise _Retryable(
                FetchResult(
                    url,
                    final_url=current,
                    error_code="NETWORK_ERROR",
                    reason="connection_failed",
                    detail=Text.same(type(exc).__name__),
                )
            ) from None
    return FetchResult(
        url,
        final_url=current,
        error_code="INVALID_URL",
        reason="too_many_redirects",
        detail=Text(en="more than {count} redirects", zh="重定向超过 {count} 次").format(count=MAX_REDIRECTS),
    )


def _refused_redirect(url: str, target: str, status: int, options: FetchOptions) -> FetchResult | None:
    if redirect_is_captcha(target, CAPTCHA_PATH):
        return FetchResult(
            url,
            final_url=target,
            http_status=status,
            error_code="CHALLENGE",
            reason="verification",
            detail=CAPTCHA_REDIRECT,
        )
    refusal = check_url(target, options.prefixes)
    if refusal is not None:
        return FetchResult(
            url,
            final_url=target,
            http_status=status,
            error_code="INVALID_URL",
            reason="redirect_not_allowed",
            detail=Text(en="redirect to {target}: ", zh="重定向到 {target}：").format(target=target[:200])
            + refusal,
        )
    return None


def _decoder(encoding: str) -> Callable[[bytes], bytes]:
    """Undo a gzip or deflate content coding; the size cap applies to what comes out."""
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress
    if encoding == "deflate":
        return zlib.decompressobj().decompress
    return bytes


def _read_body(
    response: http.client.HTTPResponse,
    url: str,
    final_url: str,
    options: FetchOptions,
    attempt: _Attempt,
) -> FetchResult:
    def too_large(size: int) -> FetchResult:
        return FetchResult(
            url,
            final_url=final_url,
            http_status=response.status,
            error_code="TOO_LONG",
            reason="response_too_large",
            detail=RESPONSE_TOO_LARGE.format(max_bytes=options.max_bytes) + f" ({size}+)",
        )

    declared = response.getheader("Content-Length", "") or ""
    if declared.isdigit() and int(declared) > options.max_bytes:
        return too_large(int(declared))
    decode = _decoder((response.getheader("Content-Encoding", "") or "").strip().lower())
    chunks: list[bytes] = []
    size = 0
    while True:
        raw = response.read1(_CHUNK)
        if attempt.canceller.cancelled:
            raise _Cancelled
        if not raw:
            if attempt.expired:  # the timer shut the socket: this end is not the page's end
                raise TimeoutError("the page kept trickling in past the time limit")
            break
        chunk = decode(raw)
        size += len(chunk)
        if size > options.max_bytes:
            return too_large(size)
        chunks.append(chunk)
    return FetchResult(
        url,
        final_url=final_url,
        body=b"".join(chunks),
        http_status=response.status,
        charset=response.headers.get_content_charset() or "",
    )
