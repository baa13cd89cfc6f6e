"""Fetching one article page over HTTP with requests: the only network code of the plugin.

Redirects are followed by hand so every target is checked against the allowed prefixes
(and a hop to WeChat's captcha path is reported as a challenge); the body is streamed and
refused once it passes the size cap; a 5xx answer, a timeout or a dropped connection is
retried with exponential backoff, at most ``retries`` times. ``cancelled`` is polled between
chunks and during backoff so a cancelled call stops promptly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from hostd_wechat.classify import CAPTCHA_PATH
from hostd_wechat.urls import UrlPrefix, check_url, redirect_is_captcha

if TYPE_CHECKING:
    import requests

MAX_REDIRECTS = 5
_CHUNK = 64 * 1024
_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})


@dataclass
class FetchOptions:
    prefixes: list[UrlPrefix]
    timeout_s: float
    max_bytes: int
    user_agent: str
    retries: int = 2
    backoff_s: float = 0.5


@dataclass
class FetchResult:
    """Either ``html`` (with the final URL and status) or an error code, reason and detail."""

    url: str
    final_url: str = ""
    html: str = ""
    http_status: int = 0
    error_code: str | None = None
    reason: str | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.error_code is None


class _Retryable(Exception):
    """A failure worth another try (5xx, timeout, dropped connection)."""

    def __init__(self, result: FetchResult) -> None:
        super().__init__(result.detail)
        self.result = result


def _wait(seconds: float, cancelled: Callable[[], bool]) -> bool:
    """Sleep in small steps; False when cancelled meanwhile."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cancelled():
            return False
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    return not cancelled()


def fetch_page(url: str, options: FetchOptions, cancelled: Callable[[], bool]) -> FetchResult:
    """Fetch ``url`` (already checked against the prefixes) with retries."""
    import requests

    attempts = 0
    with requests.Session() as session:
        session.trust_env = False  # no proxies or netrc credentials from the environment
        while True:
            attempts += 1
            if cancelled():
                return FetchResult(url, error_code="CANCELLED", reason="cancelled")
            try:
                result = _fetch_once(session, url, options, cancelled)
            except _Retryable as retry:
                result = retry.result
                if attempts <= options.retries and _wait(options.backoff_s * 2 ** (attempts - 1), cancelled):
                    continue
            return result


def _fetch_once(
    session: requests.Session, url: str, options: FetchOptions, cancelled: Callable[[], bool]
) -> FetchResult:
    import requests

    current = url
    started = time.monotonic()
    for _hop in range(MAX_REDIRECTS + 1):
        try:
            response = session.get(
                current,
                headers={"User-Agent": options.user_agent, "Accept": "text/html,application/xhtml+xml"},
                timeout=(options.timeout_s, options.timeout_s),
                allow_redirects=False,
                stream=True,
            )
        except requests.Timeout as exc:
            raise _Retryable(
                FetchResult(url, error_code="TIMEOUT", reason="timeout", detail=str(exc))
            ) from None
        except requests.RequestException as exc:
            raise _Retryable(
                FetchResult(
                    url, error_code="NETWORK_ERROR", reason="connection_failed", detail=type(exc).__name__
                )
            ) from None
        with response:
            if response.status_code in _REDIRECT_CODES:
                target = urljoin(current, response.headers.get("Location", ""))
                if redirect_is_captcha(target, CAPTCHA_PATH):
                    return FetchResult(
                        url,
                        final_url=target,
                        http_status=response.status_code,
                        error_code="CHALLENGE",
                        reason="verification",
                        detail="redirected to the captcha page",
                    )
                refusal = check_url(target, options.prefixes)
                if refusal is not None:
                    return FetchResult(
                        url,
                        final_url=target,
                        http_status=response.status_code,
                        error_code="INVALID_URL",
                        reason="redirect_not_allowed",
                        detail=f"redirect to {target[:200]}: {refusal}",
                    )
                current = target
                continue
            if response.status_code >= 500:
                raise _Retryable(
                    FetchResult(
                        url,
                        final_url=current,
                        http_status=response.status_code,
                        error_code="NETWORK_ERROR",
                        reason="server_error",
                        detail=f"HTTP {response.status_code}",
                    )
                )
            if response.status_code == 429:
                return FetchResult(
                    url,
                    final_url=current,
                    http_status=429,
                    error_code="CHALLENGE",
                    reason="rate_limited",
                    detail="HTTP 429",
                )
            return _read_body(response, url, current, options, cancelled, started)
    return FetchResult(
        url,
        final_url=current,
        error_code="INVALID_URL",
        reason="too_many_redirects",
        detail=f"more than {MAX_REDIRECTS} redirects",
    )


def _read_body(
    response: requests.Response,
    url: str,
    final_url: str,
    options: FetchOptions,
    cancelled: Callable[[], bool],
    started: float,
) -> FetchResult:
    import requests

    def too_large(size: int) -> FetchResult:
        return FetchResult(
            url,
            final_url=final_url,
            http_status=response.status_code,
            error_code="TOO_LONG",
            reason="response_too_large",
            detail=f"more than {options.max_bytes} bytes ({size}+)",
        )

    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > options.max_bytes:
        return too_large(int(declared))
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_content(_CHUNK):
            if cancelled():
                return FetchResult(url, final_url=final_url, error_code="CANCELLED", reason="cancelled")
            size += len(chunk)
            if size > options.max_bytes:
                return too_large(size)
            if time.monotonic() - started > options.timeout_s * 3:
                raise _Retryable(
                    FetchResult(
                        url,
                        final_url=final_url,
                        error_code="TIMEOUT",
                        reason="timeout",
                        detail="the page kept trickling in past the time limit",
                    )
                )
            chunks.append(chunk)
    except requests.Timeout as exc:
        raise _Retryable(
            FetchResult(url, final_url=final_url, error_code="TIMEOUT", reason="timeout", detail=str(exc))
        ) from None
    except requests.RequestException as exc:
        raise _Retryable(
            FetchResult(
                url,
                final_url=final_url,
                error_code="NETWORK_ERROR",
                reason="connection_failed",
                detail=type(exc).__name__,
            )
        ) from None
    body = b"".join(chunks)
    encoding = response.encoding if "charset" in response.headers.get("Content-Type", "").lower() else "utf-8"
    try:
        html = body.decode(encoding or "utf-8", errors="replace")
    except LookupError:
        html = body.decode("utf-8", errors="replace")
    return FetchResult(url, final_url=final_url, html=html, http_status=response.status_code)
