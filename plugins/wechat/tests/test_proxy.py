"""Fetching through a real HTTP proxy (Debian's tinyproxy, started here) and around it.

The pages come from the loopback article server; the proxy marks what it forwards with its
``Via`` header and logs each request, so a test sees which fetches went through it. The proxy
asks for credentials: without them it refuses (407). The machine's own proxy variables are
cleared for every test (``conftest.py``); each test sets the ones it means.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hostd_testing import (
    VIA_NAME,
    Tinyproxy,
    call,
    free_port,
    self_signed_certificate,
    served_client,
    tinyproxy,
    write_config,
)
from hostd_wechat.models import Settings
from pydantic import ValidationError
from test_fetch_limits import wait_for_hang_ups
from wechat_testlib import ArticleServer, plugin_settings, require_browser, require_fixtures, wechat_client

pytestmark = pytest.mark.anyio

SAVED_PAGE = "article_2025_tech_code_xuanyuan.html"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tinyproxy]:
    with tinyproxy(tmp_path_factory.mktemp("proxy")) as running:
        yield running


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[ArticleServer]:
    """The article server over TLS (its certificate trusted through ``SSL_CERT_FILE``)."""
    with ArticleServer(tls=certificate) as server:
        yield server


def proxied(server: ArticleServer, path: str) -> bool:
    """Whether the article server got ``path`` through the proxy (its ``Via`` header names it)."""
    return VIA_NAME in (server.via[path] or "")


async def _read(
    data_dir: Path, root: Path, server: ArticleServer, arguments: dict[str, Any], **settings: Any
) -> dict[str, Any]:
    async with wechat_client(data_dir, root, settings=plugin_settings(server, **settings)) as client:
        return await call(client, "read_wechat_articles", **arguments)


async def test_a_served_process_fetches_through_the_proxy_variables_and_bypasses_no_proxy(
    tmp_path: Path, hostd_roots: Path, article_server: ArticleServer, proxy: Tinyproxy
) -> None:
    """A real ``hostd serve`` started with ``HTTP_PROXY`` and ``NO_PROXY``, as an IDE behind a
    company proxy would start it: the saved page on 127.0.0.1 goes through the proxy, the one
    on ``localhost`` (listed in NO_PROXY) goes direct, and the proxy's credentials never reach
    the page's server."""
    require_fixtures()
    direct_base = f"http://localhost:{article_server.port}"
    config = write_config(
        tmp_path,
        ["wechat"],
        config={"language": "en", "allowed_roots": [str(hostd_roots)]},
        settings=plugin_settings(
            article_server, allowed_url_prefixes=[article_server.prefix, direct_base + "/s"]
        ),
    )
    env = {"HTTP_PROXY": proxy.url, "NO_PROXY": "localhost,::1"}
    urls = [article_server.fixture_url(SAVED_PAGE), direct_base + "/s/article/direct"]
    async with served_client(config, cwd=hostd_roots, env=env) as client:
        envelope = await call(client, "read_wechat_articles", urls=urls)
    assert [item["status"] for item in envelope["items"]] == ["ok", "ok"], envelope["items"]
    assert envelope["items"][0]["title"] == "AI编程害死我了，给我的抓包软件埋了一个大雷！"
    assert proxied(article_server, f"/s/fixture/{SAVED_PAGE}")
    assert not proxied(article_server, "/s/article/direct")
    assert proxy.forwarded() == [f"GET {article_server.fixture_url(SAVED_PAGE)} HTTP/1.1"]
    assert article_server.proxy_credentials_seen == []


async def test_lower_case_variables_are_honoured(
    hostd_data_dir: Path,
    hostd_roots: Path,
    article_server: ArticleServer,
    proxy: Tinyproxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("http_proxy", proxy.url)
    envelope = await _read(
        hostd_data_dir, hostd_roots, article_server, {"urls": [article_server.url("/s/article/lower")]}
    )
    assert envelope["items"][0]["status"] == "ok"
    assert proxied(article_server, "/s/article/lower")


async def test_the_proxy_setting_replaces_the_variables_and_off_ignores_them(
    hostd_data_dir: Path,
    hostd_roots: Path,
    article_server: ArticleServer,
    proxy: Tinyproxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    through = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.url("/s/article/setting")]},
        proxy=proxy.url,
        max_retries=0,
    )
    assert through["items"][0]["status"] == "ok", through["items"][0]
    assert proxied(article_server, "/s/article/setting")

    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    direct = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.url("/s/article/off")]},
        proxy="off",
    )
    assert direct["items"][0]["status"] == "ok"
    assert not proxied(article_server, "/s/article/off")
    assert all("/s/article/off" not in line for line in proxy.forwarded())


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_a_proxy_that_is_down_is_a_proxy_error_with_a_hint(
    hostd_data_dir: Path,
    hostd_roots: Path,
    article_server: ArticleServer,
    monkeypatch: pytest.MonkeyPatch,
    language: str,
) -> None:
    down = free_port()
    monkeypatch.setenv("HTTP_PROXY", f"http://someone:hunter2@127.0.0.1:{down}")
    async with wechat_client(
        hostd_data_dir,
        hostd_roots,
        settings=plugin_settings(article_server, max_retries=1),
        language=language,
    ) as client:
        envelope = await call(
            client,
            "read_wechat_articles",
            urls=[article_server.url("/s/article/1")],
            response_format="detailed",
        )
    item = envelope["items"][0]
    assert (item["status"], item["error_code"], item["reason"]) == (
        "error",
        "PROXY_ERROR",
        "proxy_unreachable",
    )
    assert f"127.0.0.1:{down}" in item["hint"]
    assert "hunter2" not in item["hint"]
    if language == "en":
        assert "HTTP_PROXY" in item["hint"]
        assert "cannot be reached" in item["hint"]
    else:
        assert "代理" in item["hint"]
        assert "无法连接代理" in item["hint"]
    assert article_server.requests == []


async def test_a_proxy_that_refuses_is_a_proxy_error_and_is_not_retried(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, proxy: Tinyproxy
) -> None:
    path = "/s/article/refused"
    before = len(proxy.forwarded())
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.url(path)], "response_format": "detailed"},
        proxy=proxy.url_without_credentials,  # tinyproxy asks for credentials: 407
    )
    item = envelope["items"][0]
    assert (item["error_code"], item["reason"]) == ("PROXY_ERROR", "proxy_refused")
    assert "HTTP 407" in item["hint"]
    assert "proxy" in item["hint"]
    assert article_server.requests == []
    assert len(proxy.forwarded()) - before == 1  # one try: a refusal is not retried


async def test_redirects_through_the_proxy_are_still_checked_hop_by_hop(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, proxy: Tinyproxy
) -> None:
    """A forward proxy hands the 302 back: the plugin checks the target before any request."""
    start = "/s/redirect?to=/outside/secret"
    envelope = await _read(
        hostd_data_dir, hostd_roots, article_server, {"urls": [article_server.url(start)]}, proxy=proxy.url
    )
    item = envelope["items"][0]
    assert (item["error_code"], item["reason"]) == ("INVALID_URL", "redirect_not_allowed")
    assert proxied(article_server, start)
    assert article_server.requests == [start]
    assert all(f"{article_server.base}/outside" not in line for line in proxy.forwarded())


async def test_a_page_trickling_through_the_proxy_ends_at_the_time_limit(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, proxy: Tinyproxy
) -> None:
    """The deadline shuts the socket to the proxy; the proxy then drops the page's server, which
    sees the hang-up long before its 20 s trickle ends."""
    url = article_server.url("/s/trickle?every_ms=150")
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [url], "timeout_ms": 1000},
        proxy=proxy.url,
        max_retries=0,
    )
    assert (envelope["items"][0]["error_code"], envelope["items"][0]["reason"]) == ("TIMEOUT", "timeout")
    assert proxied(article_server, "/s/trickle?every_ms=150")
    await wait_for_hang_ups(article_server, 1)


async def test_cancelling_a_call_closes_its_connection_through_the_proxy(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, proxy: Tinyproxy
) -> None:
    url = article_server.url("/s/trickle?every_ms=50")
    settings = plugin_settings(article_server, proxy=proxy.url)
    async with wechat_client(hostd_data_dir, hostd_roots, settings=settings) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "read_wechat_articles", {"urls": [url], "timeout_ms": 60_000})
            assert await anyio.to_thread.run_sync(article_server.trickle_started.wait, 5)
            group.cancel_scope.cancel()
        # The trickle lasts 20 s and the call's limit is 60 s: a hang-up within 5 s was the cancel.
        assert await anyio.to_thread.run_sync(article_server.hang_up_seen.wait, 5)
    assert proxied(article_server, "/s/trickle?every_ms=50")


async def test_https_pages_go_through_a_connect_tunnel_and_its_deadline_holds(
    tmp_path: Path,
    hostd_roots: Path,
    tls_server: ArticleServer,
    proxy: Tinyproxy,
    certificate: tuple[Path, Path],
) -> None:
    """``HTTPS_PROXY``: the page is fetched over TLS inside a ``CONNECT`` tunnel (the proxy sees
    only host and port), and a page trickling in over that TLS connection is still cut off at
    the time limit (the deadline shuts the TLS socket, not the plain one it replaced)."""
    require_fixtures()
    config = write_config(
        tmp_path,
        ["wechat"],
        config={"language": "en", "allowed_roots": [str(hostd_roots)]},
        settings=plugin_settings(tls_server, max_retries=0),
    )
    env = {"HTTPS_PROXY": proxy.url, "SSL_CERT_FILE": str(certificate[0])}
    trickle = tls_server.url("/s/trickle?every_ms=150")
    async with served_client(config, cwd=hostd_roots, env=env) as client:
        page = await call(client, "read_wechat_articles", urls=[tls_server.fixture_url(SAVED_PAGE)])
        slow = await call(client, "read_wechat_articles", urls=[trickle], timeout_ms=1000)
    assert page["items"][0]["status"] == "ok", page["items"][0]
    assert page["items"][0]["account_name"] == "轩辕的编程宇宙"
    tunnel = f"CONNECT 127.0.0.1:{tls_server.port} HTTP/1.1"
    assert proxy.forwarded().count(tunnel) == 2
    assert (slow["items"][0]["error_code"], slow["items"][0]["reason"]) == ("TIMEOUT", "timeout")
    await wait_for_hang_ups(tls_server, 1)


async def test_a_refused_connect_tunnel_is_a_proxy_error(
    hostd_data_dir: Path, hostd_roots: Path, tls_server: ArticleServer, proxy: Tinyproxy
) -> None:
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        tls_server,
        {"urls": [tls_server.url("/s/article/1")], "response_format": "detailed"},
        proxy=proxy.url_without_credentials,
    )
    item = envelope["items"][0]
    assert (item["error_code"], item["reason"]) == ("PROXY_ERROR", "proxy_refused")
    assert "407" in item["hint"]
    assert f"127.0.0.1:{proxy.port}" in item["hint"]
    assert tls_server.requests == []


async def test_a_page_server_the_proxy_cannot_reach_is_retried_like_a_5xx(
    hostd_data_dir: Path, hostd_roots: Path, proxy: Tinyproxy
) -> None:
    """The proxy is fine but nothing listens behind it: its CONNECT answer is a 5xx, retried, and
    the item says the answer came through the proxy (not PROXY_ERROR: the proxy did its job)."""
    nobody = f"https://127.0.0.1:{free_port()}"
    settings = {"wechat": {"allowed_url_prefixes": [nobody + "/s"], "retry_backoff_ms": 20, "max_retries": 1}}
    settings["wechat"]["proxy"] = proxy.url
    async with wechat_client(hostd_data_dir, hostd_roots, settings=settings) as client:
        envelope = await call(
            client, "read_wechat_articles", urls=[nobody + "/s/article/1"], response_format="detailed"
        )
    item = envelope["items"][0]
    assert (item["error_code"], item["reason"]) == ("NETWORK_ERROR", "server_error"), item
    assert f"through the proxy 127.0.0.1:{proxy.port}" in item["hint"]
    tunnel = f"CONNECT {nobody.removeprefix('https://')} HTTP/1.1"
    assert proxy.forwarded().count(tunnel) == 2  # the first try and one retry


async def test_headless_fetches_go_through_the_proxy_too(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, proxy: Tinyproxy
) -> None:
    """Chromium gets the same proxy (with its credentials) for the page the plugin fetches. The
    page itself is fetched by Playwright for the navigation guard, which tunnels (``CONNECT``)
    even to an ``http://`` server, so the proxy's log is the evidence, not ``Via``."""
    chromium = require_browser()
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.url("/s/js-only")], "fetch_strategy": "headless", "timeout_ms": 20_000},
        proxy=proxy.url,
        chromium_path=chromium,
    )
    item = envelope["items"][0]
    assert item["status"] == "ok", item
    assert item["title"] == "Rendered by script", item
    url = article_server.url("/s/js-only")
    through = {f"GET {url} HTTP/1.1", f"CONNECT 127.0.0.1:{article_server.port} HTTP/1.1"}
    assert through & set(proxy.forwarded()), proxy.forwarded()
    assert article_server.proxy_credentials_seen == []


@pytest.mark.parametrize(
    "value",
    [
        "socks5://127.0.0.1:1080",
        "ftp://proxy:21",
        "proxy.example:3128",
        "http://proxy:3128/path",
        "http://:3128",
    ],
)
def test_a_proxy_setting_that_is_not_an_http_proxy_url_is_refused_when_the_config_is_read(value: str) -> None:
    with pytest.raises(ValidationError, match="proxy"):
        Settings(proxy=value)


@pytest.mark.parametrize("value", [None, "off", "http://user:pw@proxy.example:3128", "https://proxy.example"])
def test_proxy_settings_that_are_accepted(value: str | None) -> None:
    assert Settings(proxy=value).proxy == value
