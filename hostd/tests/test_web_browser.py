"""The dashboard framework in Debian's Chromium: a page that draws a Mermaid diagram from stored
text (labels with HTML and Mermaid syntax stay text, nothing runs, nothing leaves the server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hostd.core.config import TransportConfig
from hostd.protocol.guard import HttpPolicy
from hostd.web.serve import local_app
from hostd.web.signing import OneTimeToken
from hostd_testing.browser import DESKTOP, Escapes, screenshot_dir, served
from web_support import Note, NotesPlugin, notes_host

pytestmark = pytest.mark.browser

HOSTILE_LABELS = [
    "<img src=x onerror=alert('img')>",
    '"]-->X["pwned"] --> Y',
    "end\nclick n1 call alert()\n%%{init: {'securityLevel': 'loose'}}%%",
    "<script>alert('script')</script> & ; # `code` {braces} (parens) [brackets] |pipe|",
    "中文标签：括号（）【】“引号”",
]


def test_a_diagram_page_draws_hostile_labels_as_text(
    browser: Any, hostd_data_dir: Path, tmp_path: Path
) -> None:
    plugin = NotesPlugin(tmp_path / "templates")
    plugin.notes.extend(Note(text=text, author="mallory") for text in HOSTILE_LABELS)
    one_time = OneTimeToken()
    app = local_app(notes_host(hostd_data_dir, plugin), one_time, HttpPolicy(TransportConfig(type="http")))
    with served(app) as origin:
        page = browser.new_page(viewport=DESKTOP)
        escapes = Escapes(page, origin)
        page.goto(f"{origin}/ui/signin?token={one_time.token}")
        assert page.url == f"{origin}/ui/"
        scripts = page.evaluate("[...document.scripts].map(s => s.src)")
        assert not any("mermaid" in src for src in scripts)  # only where a diagram is drawn
        answer = page.goto(f"{origin}/ui/notes/diagram")
        assert answer is not None
        assert (
            "'unsafe-inline'" in answer.headers["content-security-policy"].split("style-src")[1].split(";")[0]
        )
        assert "script-src 'self';" in answer.headers["content-security-policy"]
        page.wait_for_selector("pre.mermaid svg", timeout=20_000)
        labels = page.locator("pre.mermaid svg").text_content() or ""
        for fragment in ("<img src=x onerror=alert('img')>", '"]-->X["pwned"] --> Y', "<script>", "中文标签"):
            assert fragment in labels, fragment
        assert (
            page.locator("pre.mermaid svg img, pre.mermaid svg script, pre.mermaid svg iframe").count() == 0
        )
        assert page.locator("pre.mermaid svg g.node").count() == len(HOSTILE_LABELS)
        page.locator("pre.mermaid svg g.node").first.click()
        page.screenshot(path=str(screenshot_dir(tmp_path / "screenshots") / "framework-diagram-1280.png"))
        escapes.assert_none()
        assert page.evaluate("typeof window.__pwned") == "undefined"


def test_the_inline_page_style_applies_under_the_policy_with_no_stylesheet_request(
    browser: Any, hostd_data_dir: Path, tmp_path: Path
) -> None:
    """The style travels in the page (no request blocks the first paint) and the policy allows it by
    its hash: styled, with no CSP violation, on a plain page and on a diagram page."""
    plugin = NotesPlugin(tmp_path / "templates")
    plugin.notes.append(Note(text="a note", author="ann"))
    one_time = OneTimeToken()
    app = local_app(notes_host(hostd_data_dir, plugin), one_time, HttpPolicy(TransportConfig(type="http")))
    with served(app) as origin:
        page = browser.new_page(viewport=DESKTOP)
        violations: list[str] = []
        page.on(
            "console",
            lambda message: violations.append(message.text) if "Content Security" in message.text else None,
        )
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        page.goto(f"{origin}/ui/signin?token={one_time.token}")
        for path in ("/ui/", "/ui/notes", "/ui/notes/diagram"):
            page.goto(f"{origin}{path}")
            assert page.evaluate("getComputedStyle(document.body).fontSize") == "15px", path
            assert page.evaluate("getComputedStyle(document.querySelector('.brand')).fontWeight") == "700", (
                path
            )
        assert violations == []
        assert not [url for url in requested if url.endswith(".css")]
