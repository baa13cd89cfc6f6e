"""Fixtures of the wechat plugin's tests (helpers live in ``wechat_testlib``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from wechat_testlib import ArticleServer, CdnServer


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
