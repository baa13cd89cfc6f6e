"""Fixtures of the wechat plugin's tests (helpers live in ``wechat_testlib``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hostd_testing import mark_external
from wechat_testlib import ArticleServer, CdnServer

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin honours the proxy variables: a machine behind a proxy would send the tests'
    loopback fetches to it. The proxy tests set the ones they mean."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def article_server() -> Iterator[ArticleServer]:
    """A real HTTP server on 127.0.0.1 serving saved and generated pages."""
    with ArticleServer() as server:
        yield server


@pytest.fixture
def cdn_server() -> Iterator[CdnServer]:
    """A second loopback server standing in for WeChat's image CDN."""
    with CdnServer() as server:
        yield server


def pytest_itemcollected(item: pytest.Item) -> None:
    """The headless-Chromium tests: for ``nox -s external`` only."""
    mark_external(
        item,
        Path(__file__).parent,
        browser={
            "test_script_rendered_page_is_read_by_headless_and_not_by_http",
            "test_headless_navigation_outside_the_prefix_is_refused",
            "test_headless_fetches_go_through_the_proxy_too",
        },
    )
