"""The headless strategy: a system Chromium driven by Playwright renders the page's scripts.

Playwright is an optional extra (``hostd-wechat[headless]``) imported only here, and only when
a page needs it; it drives the Chromium at the ``chromium_path`` setting (Debian's
``chromium`` package) and never downloads a browser. Top-level navigations are held to the
same allowed prefixes as plain HTTP; images, media and fonts are not loaded. One browser runs
at a time: the machine's cores are better spent on the rest of the batch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import urljoin

from hostd_errors.chromium import CHROMIUM_FLAGS

from hostd import Text
from hostd_wechat.classify import CAPTCHA_PATH
from hostd_wechat.fetch import (
    CAPTCHA_REDIRECT,
    RESPONSE_TOO_LARGE,
    FetchOptions,
    FetchResult,
    browser_proxy,
)
from hostd_wechat.urls import check_url, redirect_is_captcha

_SKIPPED_RESOURCES = frozenset({"image", "media", "font"})
_ONE_BROWSER = threading.Lock()
_CONTENT_READY = """() => {
  const body = document.querySelector('#js_content, .rich_media_content');
  const title = document.querySelector('#activity-name');
  return (body && body.innerText.trim().length > 0) || (title && title.innerText.trim().length > 0);
}"""


def headless_unavailable_reason(chromium_path: str) -> Text | None:
    """``None`` when the headless strategy can run, else what is missing."""
    if importlib.util.find_spec("playwright") is None:
        return Text(
            en="playwright is not installed (pip install 'hostd-wechat[headless]')",
            zh="未安装 playwright（pip install 'hostd-wechat[headless]'）",
        )
    if not Path(chromium_path).is_file():
        return Text(
            en="no Chromium at {path} (install Debian's chromium package or set chromium_path)",
            zh="{path} 处没有 Chromium（请安装 Debian 的 chromium 软件包，或设置 chromium_path）",
        ).format(path=chromium_path)
    return None


def render_page(
    url: str, options: FetchOptions, chromium_path: str, cancelled: Callable[[], bool]
) -> FetchResult:
    """Load ``url`` in headless Chromium, let its scripts run, and return the resulting HTML."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    timeout_ms = max(1000, int(options.timeout_s * 1000))
    blocked: list[str] = []
    with _ONE_BROWSER:
        if cancelled():
            return FetchResult(url, error_code="CANCELLED", reason="cancelled")
        try:
            with sync_playwright() as playwright:
                # The proxy as for plain HTTP; none means none (Chromium reading the variables on
                # its own could disagree with the plugin's rule).
                proxy = browser_proxy(url, options.proxy)
                browser = playwright.chromium.launch(
                    executable_path=chromium_path,
                    headless=True,
                    args=[*CHROMIUM_FLAGS, *([] if proxy else ["--no-proxy-server"])],
                    timeout=timeout_ms * 3,
                    proxy=cast(Any, proxy),
                )
                try:
                    # The context's proxy too: the guard fetches top-level documents through it.
                    context = browser.new_context(
                        user_agent=options.user_agent,
                        service_workers="block",
                        proxy=cast(Any, proxy),
                    )
                    page = context.new_page()
                    page.route("**/*", lambda route: _guard(route, options, blocked))
                    response = page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
                    # A message page never fills the body: classification decides what it is.
                    with contextlib.suppress(PlaywrightTimeout):
                        page.wait_for_function(_CONTENT_READY, timeout=timeout_ms)
                    final_url = page.url
                    html = page.content()
                finally:
                    browser.close()
        except PlaywrightTimeout as exc:
            return FetchResult(url, error_code="TIMEOUT", reason="timeout", detail=_first_line(exc))
        except PlaywrightError as exc:
            if blocked:
                return _blocked_result(url, blocked[0])
            return FetchResult(
                url,
                error_code="NETWORK_ERROR",
                reason="browser_error",
                detail=_first_line(exc),
            )
    if blocked:
        return _blocked_result(url, blocked[0])
    if redirect_is_captcha(final_url, CAPTCHA_PATH):
        return _captcha_result(url, final_url)
    if len(html.encode("utf-8")) > options.max_bytes:
        return FetchResult(
            url,
            final_url=final_url,
            error_code="TOO_LONG",
            reason="response_too_large",
            detail=RESPONSE_TOO_LARGE.format(max_bytes=options.max_bytes),
        )
    status = response.status if response is not None else 200
    return FetchResult(url, final_url=final_url, html=html, http_status=status)


def _guard(route: Any, options: FetchOptions, blocked: list[str]) -> None:
    """Top-level documents must pass the URL check, redirects included; heavy resources are skipped.

    Chromium follows redirects without showing them to the route, so the document is fetched
    here with redirects off and each ``Location`` checked before the browser may follow it.
    """
    request = route.request
    top_level = request.is_navigation_request() and request.frame.parent_frame is None
    if top_level:
        if check_url(request.url, options.prefixes) is not None:
            blocked.append(request.url)
            route.abort("blockedbyclient")
            return
        response = route.fetch(max_redirects=0, timeout=options.timeout_s * 1000)
        location = response.headers.get("location")
        if 300 <= response.status < 400 and location:
            target = urljoin(request.url, location)
            if redirect_is_captcha(target, CAPTCHA_PATH) or check_url(target, options.prefixes) is not None:
                blocked.append(target)
                route.abort("blockedbyclient")
                return
        route.fulfill(response=response)
        return
    if request.resource_type in _SKIPPED_RESOURCES:
        route.abort("blockedbyclient")
        return
    route.continue_()


def _first_line(exc: Exception) -> Text:
    """The browser's own words about a failure (a diagnostic, shown as Playwright wrote it)."""
    return Text.same(str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)


def _captcha_result(url: str, final_url: str) -> FetchResult:
    return FetchResult(
        url, final_url=final_url, error_code="CHALLENGE", reason="verification", detail=CAPTCHA_REDIRECT
    )


def _blocked_result(url: str, target: str) -> FetchResult:
    """The answer for a navigation ``_guard`` refused: the captcha page, or outside the prefixes."""
    if redirect_is_captcha(target, CAPTCHA_PATH):
        return _captcha_result(url, target)
    return FetchResult(
        url,
        final_url=target,
        error_code="INVALID_URL",
        reason="redirect_not_allowed",
        detail=Text(
            en="navigation to {target} is outside the allowed prefixes",
            zh="导航到 {target} 超出了允许的前缀",
        ).format(target=target[:200]),
    )
