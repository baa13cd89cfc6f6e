"""Fetching one article page over HTTP: the only network code of the plugin.

Built on ``httpx2`` (the maintained continuation of HTTPX, which the MCP SDK installs anyway):
it honours the proxy variables (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``,
lower case too) and the ``proxy`` setting (``proxy_mounts``). The plugin still holds every socket
it opens, which is what lets a fetch stop on time: httpx2's ``trace`` request extension hands over
each socket as it connects (to the page's server, or to the proxy), and each attempt has one
deadline (``timeout_s``) for everything from connecting to the last byte, enforced by a timer
that shuts those sockets, so a page trickling in a byte at a time cannot hold a fetch past it;
and a ``FetchCanceller`` shuts the sockets of every fetch it watches at once, when the client
cancels or the server shuts down.

Redirects are followed by hand (never by httpx2) so every target is checked against the allowed
prefixes (and a hop to WeChat's captcha path is reported as a challenge); the body is read raw,
decoded here and refused once it passes the size cap; a 5xx answer, a timeout or a dropped
connection is retried with exponential backoff, at most ``retries`` times.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from hostd import Text, trace_span
from hostd_wechat.classify import CAPTCHA_PATH
from hostd_wechat.urls import UrlPrefix, check_url, redacted_url, redirect_is_captcha

if TYPE_CHECKING:  # httpx2 and ssl load on the first fetch: importing the plugin stays cheap
    import ssl

    import httpx2

MAX_REDIRECTS = 5
_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}

PAGE_ACCEPT = "text/html,application/xhtml+xml"
#: The ``proxy`` setting's value that turns proxies off, the environment's included.
PROXY_OFF = "off"

#: What a failed fetch's ``detail`` says (shown after the item's hint in a detailed answer).
CAPTCHA_REDIRECT = Text(en="redirected to the captcha page", zh="被重定向到验证码页面")
RESPONSE_TOO_LARGE = Text(en="more than {max_bytes} bytes", zh="超过 {max_bytes} 字节")
_NO_ANSWER_IN_TIME = Text(en="no complete answer within {seconds} s", zh="{seconds} 秒内没有收到完整的回答")
_THROUGH_PROXY = Text(en=", through the proxy {proxy}", zh="，经由代理 {proxy}")
_PROXY_UNREACHABLE = Text(en="the proxy {proxy} cannot be reached", zh="无法连接代理 {proxy}")
_PROXY_REFUSED = Text(en="the proxy {proxy} refused: {answer}", zh="代理 {proxy} 拒绝了请求：{answer}")


def _no_tracking() -> contextlib.AbstractContextManager[object]:
    return contextlib.nullcontext()


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
    #: The ``proxy`` setting: ``None`` follows the environment, ``"off"`` goes direct, else a URL.
    proxy: str | None = None
    #: Counts the fetch as in flight for the host's metrics (``ToolContext.fetching``).
    in_flight: Callable[[], contextlib.AbstractContextManager[object]] = field(default=_no_tracking)


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
    now rather than at its timeout, and the server (or the proxy) sees the connection closed.
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

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` on ``cancel()`` (at once when already cancelled) until ``forget``."""
        with self._lock:
            self._sockets.add(sock)
            already = self._cancelled
        if already:
            shut_socket(sock)

    def forget(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)


def shut_socket(sock: socket.socket) -> None:
    """Wake whatever thread reads ``sock`` (TLS or not) and tell the peer we are gone."""
    with contextlib.suppress(OSError, ValueError):
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
    tool call's: OpenTelemetry's HTTP attributes, the URL's query values redacted. The fetch
    counts as in flight (``options.in_flight``) from its first try to its answer."""
    with (
        options.in_flight(),
        trace_span("GET", "CLIENT", **{"http.request.method": "GET", "url.full": redacted_url(url)}) as span,
    ):
        result = _fetch_with_retries(url, options, canceller)
        if result.http_status:
            span.set("http.response.status_code", result.http_status)
        if result.error_code:
            span.fail(result.error_code)
        return result


def _fetch_with_retries(url: str, options: FetchOptions, canceller: FetchCanceller) -> FetchResult:
    try:
        client = _client(options.proxy)
    except (ValueError, ImportError):  # a proxy URL httpx2 cannot use (scheme, or socks without socksio)
        return FetchResult(
            url,
            error_code="PROXY_ERROR",
            reason="proxy_invalid",
            detail=Text(en="the proxy URL cannot be used: {proxy}", zh="代理地址无法使用：{proxy}").format(
                proxy=_configured_proxy(options.proxy)
            ),
        )
    with client:
        attempts = 0
        while True:
            attempts += 1
            if canceller.cancelled:
                return FetchResult(url, error_code="CANCELLED", reason="cancelled")
            try:
                result = _fetch_once(client, url, options, canceller)
            except _Cancelled:
                return FetchResult(url, error_code="CANCELLED", reason="cancelled")
            except _Retryable as retry:
                result = retry.result
                if attempts <= options.retries and _wait(options.backoff_s * 2 ** (attempts - 1), canceller):
                    continue
            return result


_ssl_context: ssl.SSLContext | None = None
_ssl_lock = threading.Lock()


def _tls() -> ssl.SSLContext:
    """One TLS context for every fetch: the system's trust store (a company proxy that inspects
    TLS has its root there), loaded once rather than per connection."""
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            import ssl

            _ssl_context = ssl.create_default_context()
        return _ssl_context


def _client(proxy: str | None) -> httpx2.Client:
    """A client for one fetch: no redirects of its own, proxies as the ``proxy`` setting says.

    ``None`` leaves the choice to httpx2's reading of the environment; ``"off"`` ignores it; a
    URL replaces ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` while ``NO_PROXY`` still applies
    (httpx2 mounts the environment's proxies, then these mounts override the scheme-wide ones).
    """
    import httpx2

    tls = _tls()
    if proxy == PROXY_OFF:
        return httpx2.Client(trust_env=False, verify=tls, follow_redirects=False)
    mounts: dict[str, httpx2.BaseTransport | None] | None = None
    if proxy is not None:
        transport = httpx2.HTTPTransport(verify=tls, proxy=proxy, trust_env=False)
        mounts = {"http://": transport, "https://": transport}
    return httpx2.Client(trust_env=True, verify=tls, follow_redirects=False, mounts=mounts)


def _configured_proxy(proxy: str | None) -> str:
    """The ``proxy`` setting, or the environment's, without user name or password."""
    import urllib.request

    if proxy is None:
        found = urllib.request.getproxies()
        proxy = found.get("https") or found.get("http") or found.get("all") or ""
    return redacted_proxy(proxy)


def browser_proxy(url: str, proxy: str | None) -> dict[str, str] | None:
    """Playwright's ``proxy`` option for the headless fetch of ``url``, by the same rule as
    ``_client`` (the setting, else the environment's variable for the URL's scheme, with
    ``NO_PROXY`` as the bypass list); ``None`` for a direct connection."""
    import urllib.request

    found = {} if proxy == PROXY_OFF else urllib.request.getproxies()
    scheme = urlsplit(url).scheme
    chosen = proxy if proxy not in (None, PROXY_OFF) else found.get(scheme) or found.get("all")
    if not chosen:
        return None
    bypass = found.get("no", "")
    if bypass and urllib.request.proxy_bypass(urlsplit(url).hostname or ""):  # NO_PROXY names the host
        return None
    parts = urlsplit(chosen if "://" in chosen else "http://" + chosen)
    option = {"server": redacted_proxy(chosen)}
    if parts.username:
        from urllib.parse import unquote

        option["username"] = unquote(parts.username)
        option["password"] = unquote(parts.password or "")
    # Chromium goes direct to loopback addresses unless told otherwise; plain HTTP does not.
    option["bypass"] = ",".join(filter(None, ["<-loopback>", bypass]))
    return option


def redacted_proxy(proxy: str) -> str:
    """``proxy`` as ``scheme://host:port``: a proxy URL may carry a password."""
    try:
        parts = urlsplit(proxy if "://" in proxy else "http://" + proxy)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return "(malformed)"
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


class _Attempt:
    """One attempt's deadline and sockets: a timer shuts every socket the attempt opened when it
    passes, and the canceller shuts them when the call is cancelled.

    The sockets come from httpx2's ``trace`` extension (``trace`` is the callback): the TCP
    socket once connected, and its TLS wrapper after the handshake (wrapping detaches the
    plain socket object, so the wrapper is the one to shut).
    """

    def __init__(self, timeout_s: float, canceller: FetchCanceller) -> None:
        self.deadline = time.monotonic() + timeout_s
        self.canceller = canceller
        self.expired = False
        #: Where the last connection went (host, port): the page's server, or a proxy.
        self.connected_to: tuple[str, int] | None = None
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(max(0.0, timeout_s), self._expire)
        self._timer.daemon = True

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def __enter__(self) -> _Attempt:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            self.canceller.forget(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            shut_socket(sock)

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpx2's ``trace`` callback (runs in the fetching thread)."""
        if event.endswith("connect_tcp.started"):
            self.connected_to = (str(info.get("host", "")), int(info.get("port") or 0))
        elif event.endswith(("connect_tcp.complete", "start_tls.complete")):
            sock = info["return_value"].get_extra_info("socket")
            if isinstance(sock, socket.socket):
                self._watch(sock)

    def _watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            expired = self.expired
        self.canceller.watch(sock)
        if expired:
            shut_socket(sock)


def _origin(request: httpx2.Request) -> tuple[str, int]:
    """Where a direct connection for ``request`` goes, spelled as httpx2 connects (IDNA host)."""
    url = request.url
    return (url.raw_host.decode("ascii"), url.port or _DEFAULT_PORTS.get(url.scheme, 0))


def _fetch_once(
    client: httpx2.Client, url: str, options: FetchOptions, canceller: FetchCanceller
) -> FetchResult:
    import httpx2

    current = url
    # Bytes: httpx2 would encode a str value as ASCII, and the user agent may be Latin-1.
    headers = {
        b"User-Agent": options.user_agent.encode("latin-1"),
        b"Accept": options.accept.encode("ascii"),
        b"Accept-Encoding": b"gzip, deflate",
        b"Connection": b"close",
    }
    with _Attempt(options.timeout_s, canceller) as attempt:
        for _hop in range(MAX_REDIRECTS + 1):
            via_proxy = False
            try:
                remaining = attempt.remaining()
                if remaining <= 0:
                    attempt.expired = True
                    raise httpx2.TimeoutException("the time limit passed")
                request = client.build_request(
                    "GET",
                    current,
                    headers=headers,
                    timeout=httpx2.Timeout(remaining),
                    extensions={"trace": attempt.trace},
                )
                attempt.connected_to = None
                try:
                    response = client.send(request, stream=True, follow_redirects=False)
                finally:
                    via_proxy = attempt.connected_to not in (None, _origin(request))
                with contextlib.closing(response):
                    status = response.status_code
                    if status in _REDIRECT_CODES:
                        next_url = urljoin(current, response.headers.get("Location", ""))
                        refused = _refused_redirect(url, next_url, status, options)
                        if refused is not None:
                            return refused
                        current = next_url
                        continue
                    if status == 407 and via_proxy:
                        return _proxy_failure(url, current, attempt, "proxy_refused", status=status)
                    if status >= 500:
                        raise _Retryable(
                            FetchResult(
                                url,
                                final_url=current,
                                http_status=status,
                                error_code="NETWORK_ERROR",
                                reason="server_error",
                                detail=Text.same(f"HTTP {status}") + _through(attempt, via_proxy),
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
            except httpx2.ProxyError as exc:  # the proxy answered CONNECT (an https:// page) with an error
                if canceller.cancelled:
                    raise _Cancelled from None
                answer = str(exc)[:100]  # "502 Bad Gateway": the status, then the proxy's reason
                if answer[:1] == "5":  # it could not reach the page's server: retried like a 5xx
                    raise _Retryable(
                        FetchResult(
                            url,
                            final_url=current,
                            error_code="NETWORK_ERROR",
                            reason="server_error",
                            detail=Text.same(f"HTTP {answer}") + _through(attempt, True),
                        )
                    ) from None
                return _proxy_failure(url, current, attempt, "proxy_refused", answer=answer)
            except (OSError, httpx2.TransportError, httpx2.InvalidURL, ValueError) as exc:
                if canceller.cancelled:
                    raise _Cancelled from None
                if attempt.expired or isinstance(exc, (TimeoutError, httpx2.TimeoutException)):
                    raise _Retryable(
                        FetchResult(
                            url,
                            final_url=current,
                            error_code="TIMEOUT",
                            reason="timeout",
                            detail=_NO_ANSWER_IN_TIME.format(seconds=f"{options.timeout_s:g}")
                            + _through(attempt, via_proxy),
                        )
                    ) from None
                if isinstance(exc, httpx2.ConnectError) and via_proxy:
                    raise _Retryable(_proxy_failure(url, current, attempt, "proxy_unreachable")) from None
                raise _Retryable(
                    FetchResult(
                        url,
                        final_url=current,
                        error_code="NETWORK_ERROR",
                        reason="connection_failed",
                        detail=Text.same(type(exc).__name__) + _through(attempt, via_proxy),
                    )
                ) from None
    return FetchResult(
        url,
        final_url=current,
        error_code="INVALID_URL",
        reason="too_many_redirects",
        detail=Text(en="more than {count} redirects", zh="重定向超过 {count} 次").format(count=MAX_REDIRECTS),
    )


def _proxy_address(attempt: _Attempt) -> str:
    host, port = attempt.connected_to or ("", 0)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _through(attempt: _Attempt, via_proxy: bool) -> Text:
    if not via_proxy:
        return Text.same("")
    return _THROUGH_PROXY.format(proxy=_proxy_address(attempt))


def _proxy_failure(
    url: str,
    current: str,
    attempt: _Attempt,
    reason: str,
    *,
    status: int = 0,
    answer: str = "",
) -> FetchResult:
    """A PROXY_ERROR: the proxy could not be reached, or refused to fetch for us."""
    proxy = _proxy_address(attempt)
    if reason == "proxy_unreachable":
        detail = _PROXY_UNREACHABLE.format(proxy=proxy)
    else:
        detail = _PROXY_REFUSED.format(proxy=proxy, answer=answer or f"HTTP {status}")
    return FetchResult(
        url, final_url=current, http_status=status, error_code="PROXY_ERROR", reason=reason, detail=detail
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
    response: httpx2.Response,
    url: str,
    final_url: str,
    options: FetchOptions,
    attempt: _Attempt,
) -> FetchResult:
    def too_large(size: int) -> FetchResult:
        return FetchResult(
            url,
            final_url=final_url,
            http_status=response.status_code,
            error_code="TOO_LONG",
            reason="response_too_large",
            detail=RESPONSE_TOO_LARGE.format(max_bytes=options.max_bytes) + f" ({size}+)",
        )

    declared = response.headers.get("Content-Length", "").strip()
    if declared.isdigit() and int(declared) > options.max_bytes:
        return too_large(int(declared))
    # Raw bytes, decoded here: the cap applies to what the decoder gives out, chunk by chunk.
    decode = _decoder(response.headers.get("Content-Encoding", "").strip().lower())
    chunks: list[bytes] = []
    size = 0
    for raw in response.iter_raw():
        if attempt.canceller.cancelled:
            raise _Cancelled
        chunk = decode(raw)
        size += len(chunk)
        if size > options.max_bytes:
            return too_large(size)
        chunks.append(chunk)
    if attempt.canceller.cancelled:
        raise _Cancelled
    if attempt.expired:  # the timer shut the socket: a body without a length ended there, not at its end
        raise TimeoutError("the page kept trickling in past the time limit")
    return FetchResult(
        url,
        final_url=final_url,
        body=b"".join(chunks),
        http_status=response.status_code,
        charset=response.charset_encoding or "",
    )
