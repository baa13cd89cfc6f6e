"""The headers every dashboard answer carries, and each page's Content Security Policy."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, TypeVar

from hostd.web.rendering import page_style

if TYPE_CHECKING:
    from starlette.types import ASGIApp


logger = logging.getLogger("hostd.web")
OutputT = TypeVar("OutputT")


def content_security_policy(diagram: bool) -> str:
    """No inline script anywhere. Inline style: the page's own (``page_style``), allowed by its
    hash; Mermaid styles its SVG with an inline ``<style>``, so pages that draw a diagram (and only
    those) allow inline styles (a hash beside 'unsafe-inline' would switch it off); scripts stay
    'self' on every page."""
    styles = "'self' 'unsafe-inline'" if diagram else f"'self' {page_style()[1]}"
    return (
        "default-src 'self'; script-src 'self'; "
        f"style-src {styles}; img-src 'self'; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    )


SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}


class SecurityHeaders:
    """Headers every dashboard answer carries (static files included); pages add their CSP.
    ``Server-Timing`` says how long the answer took to start."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        started = time.perf_counter()

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                # How long the server took, for the browser's devtools and bench/bench_dashboard.py.
                elapsed = (time.perf_counter() - started) * 1000
                headers.append((b"server-timing", f"app;dur={elapsed:.2f}".encode()))
                present = {key.lower() for key, _ in headers}
                for key, value in SECURITY_HEADERS.items():
                    if key.lower().encode() not in present:
                        headers.append((key.lower().encode(), value.encode()))
                if b"content-security-policy" not in present:
                    headers.append((b"content-security-policy", content_security_policy(False).encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
