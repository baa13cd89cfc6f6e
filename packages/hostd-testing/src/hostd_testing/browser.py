"""Dashboard tests in a real browser: Debian's Chromium through Playwright (never a downloaded
browser), an ASGI app served on a free 127.0.0.1 port, and what the tests check on every page.

Tests using these are marked ``browser`` (``nox -s external`` runs them). Without Chromium or
Playwright they skip, unless ``HOSTD_REQUIRE_BROWSER=1`` (CI), which makes that a failure.
Screenshots go to ``$HOSTD_SCREENSHOTS`` when set, else to the given folder (a pytest tmp dir).
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hostd_errors.chromium import CHROMIUM_FLAGS, CHROMIUM_PATH

CHROMIUM = Path(CHROMIUM_PATH)
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def require_or_skip(what: str) -> None:
    if os.environ.get("HOSTD_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{what} (HOSTD_REQUIRE_BROWSER=1)")
    pytest.skip(what)


@contextmanager
def signed_in(browser: Any, origin: str, token: str, viewport: dict[str, int] = DESKTOP) -> Iterator[Any]:
    """A page of a new browser context, signed in to the dashboard at ``origin`` through its sign-in
    form as a person would (the field by its label, the button by its name, in either language);
    the token must show neither in the address nor in the page."""
    import re

    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    try:
        page.goto(f"{origin}/ui/")
        assert "/ui/signin" in page.url
        page.get_by_label(re.compile("Your member token|你的成员令牌")).fill(token)
        page.get_by_role("button", name=re.compile("Sign in|登录")).click()
        page.wait_for_url(f"{origin}/ui/")
        assert token not in page.url
        assert token not in page.content()
        yield page
    finally:
        context.close()


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (Playwright's sync API: keep it out of anyio tests' threads)."""
    if not CHROMIUM.exists():
        require_or_skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_or_skip("the playwright package is not installed")
    _retry_empty_captures()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=list(CHROMIUM_FLAGS), headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


#: What Chromium answers a capture for which no frame was ready (a loaded machine): worth a retry.
_NO_FRAME = "Unable to capture screenshot"


def _retry_empty_captures() -> None:
    """Make ``Page.screenshot`` try again (three times, half a second apart) when Chromium had no
    frame to capture: on a machine at full load its compositor can miss the capture, which says
    nothing about the page. Any other error is raised at once. Installed once per process."""
    from playwright.sync_api import Error, Page

    capture = Page.screenshot
    if getattr(capture, "retries_empty_captures", False):
        return

    @functools.wraps(capture)
    def screenshot(self: Any, *args: Any, **kwargs: Any) -> bytes:
        for attempt in range(3):
            try:
                return capture(self, *args, **kwargs)
            except Error as exc:
                if _NO_FRAME not in str(exc) or attempt == 2:
                    raise
                time.sleep(0.5)
        raise AssertionError("unreachable")

    screenshot.retries_empty_captures = True  # type: ignore[attr-defined]
    Page.screenshot = screenshot  # type: ignore[method-assign]


@contextmanager
def served(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn in a thread on a free port; yields ``http://127.0.0.1:PORT``."""
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()


class Escapes:
    """What a page did that stored content must never make it do: open a dialog, or send a
    request anywhere but the server under test. Attach before navigating."""

    def __init__(self, page: Any, origin: str) -> None:
        self.dialogs: list[str] = []
        self.foreign_requests: list[str] = []
        self._host = urlsplit(origin).netloc

        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        def on_request(request: Any) -> None:
            parts = urlsplit(request.url)
            elsewhere = parts.scheme in ("http", "https", "ws", "wss") and parts.netloc != self._host
            if elsewhere or parts.scheme not in ("http", "https", "data", "blob", "about"):
                self.foreign_requests.append(request.url)

        page.on("dialog", on_dialog)
        page.on("request", on_request)

    def assert_none(self) -> None:
        assert self.dialogs == [], f"a dialog opened: {self.dialogs}"
        assert self.foreign_requests == [], f"requests left the server: {self.foreign_requests}"


def screenshot_dir(fallback: Path) -> Path:
    folder = Path(os.environ["HOSTD_SCREENSHOTS"]) if os.environ.get("HOSTD_SCREENSHOTS") else fallback
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def focus_walk(page: Any, presses: int = 200) -> list[str]:
    """Press Tab from the top of the page and describe each element that got the focus, until the
    focus comes back round (or ``presses`` run out): what a keyboard-only person can reach."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.evaluate("window.scrollTo(0, 0)")
    seen: list[str] = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        described = page.evaluate(
            """() => {
                const e = document.activeElement;
                if (!e || e === document.body) return "";
                const label = (e.getAttribute('aria-label') || e.textContent || e.value || '').trim();
                const target = e.getAttribute('href') || e.getAttribute('name') || '';
                const tag = e.tagName.toLowerCase();
                return tag + ':' + target + ':' + label.replace(/\\s+/g, ' ').slice(0, 60);
            }"""
        )
        if described and seen and described == seen[0]:
            break
        if described:
            seen.append(described)
    return seen


def focus_is_visible(page: Any) -> bool:
    """Whether the focused element draws a focus outline (the stylesheet's :focus-visible)."""
    return bool(
        page.evaluate(
            """() => {
                const e = document.activeElement;
                if (!e || e === document.body) return false;
                const style = getComputedStyle(e);
                return style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
            }"""
        )
    )
