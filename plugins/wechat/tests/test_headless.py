"""The headless strategy for real: Debian's Chromium runs a page's scripts that plain HTTP never sees."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostd_testing import call
from wechat_testlib import ArticleServer, plugin_settings, require_browser, wechat_client

pytestmark = pytest.mark.anyio


async def test_script_rendered_page_is_read_by_headless_and_not_by_http(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    chromium = require_browser()
    url = article_server.url("/s/js-only")
    settings = plugin_settings(article_server, chromium_path=chromium)
    async with wechat_client(hostd_data_dir, hostd_roots, settings=settings) as client:
        plain = await call(client, "read_wechat_articles", urls=[url], fetch_strategy="http")
        rendered = await call(
            client,
            "read_wechat_articles",
            urls=[url],
            fetch_strategy="headless",
            response_format="detailed",
            timeout_ms=20_000,
        )
        automatic = await call(
            client,
            "read_wechat_articles",
            urls=[url],
            response_format="detailed",
            timeout_ms=20_000,
        )
    assert plain["items"][0]["status"] == "error"
    assert (plain["items"][0]["error_code"], plain["items"][0]["reason"]) == ("CHALLENGE", "scripts_required")
    item = rendered["items"][0]
    assert item["status"] == "ok", item
    assert item["title"] == "Rendered by script"
    assert item["account_name"] == "Script Account"
    assert "Only a browser sees this paragraph." in Path(item["saved_path"]).read_text(encoding="utf-8")
    assert automatic["items"][0]["status"] == "ok"
    assert automatic["items"][0]["strategy"] == "headless"


async def test_headless_navigation_outside_the_prefix_is_refused(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    from urllib.parse import quote

    chromium = require_browser()
    url = article_server.url("/s/redirect?to=" + quote(article_server.url("/outside/x"), safe=""))
    settings = plugin_settings(article_server, chromium_path=chromium)
    async with wechat_client(hostd_data_dir, hostd_roots, settings=settings) as client:
        envelope = await call(
            client,
            "read_wechat_articles",
            urls=[url],
            fetch_strategy="headless",
            timeout_ms=20_000,
        )
    item = envelope["items"][0]
    assert (item["error_code"], item["reason"]) == ("INVALID_URL", "redirect_not_allowed")
    assert not any(path.startswith("/outside/") for path in article_server.requests)


async def test_headless_asked_for_without_a_browser_is_an_argument_error(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    async with wechat_client(hostd_data_dir, hostd_roots, settings=plugin_settings(article_server)) as client:
        envelope = await call(
            client,
            "read_wechat_articles",
            urls=[article_server.url("/s/article/1")],
            fetch_strategy="headless",
        )
    assert envelope["status"] == "error"
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert envelope["error"]["details"]["argument"] == "fetch_strategy"
