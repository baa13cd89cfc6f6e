"""Fetching under hostile conditions: header values, trickling pages, stuck servers, cancel and shut-down."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hostd_wechat.settings import Settings
from pydantic import ValidationError
from wechat_testlib import ArticleServer, call, plugin_settings, wechat_client

pytestmark = pytest.mark.anyio

BAD_USER_AGENTS = ["Bot\u2028Evil", "Bot\r\nX-Injected: 1", "浏览器/1.0", "Bot\x00", "Bot\x85"]


async def _read(
    data_dir: Path, root: Path, server: ArticleServer, arguments: dict[str, Any], **settings: Any
) -> dict[str, Any]:
    async with wechat_client(data_dir, root, settings=plugin_settings(server, **settings)) as client:
        return await call(client, "read_wechat_articles", arguments)


@pytest.mark.parametrize("user_agent", BAD_USER_AGENTS)
async def test_a_user_agent_that_cannot_be_a_header_is_an_argument_error(
    hostd_data_dir, hostd_roots, article_server, user_agent
) -> None:
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.url("/s/article/1")], "user_agent": user_agent},
    )
    assert envelope["status"] == "error" and envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert "user_agent" in envelope["error"]["message"]
    assert article_server.requests == []


async def test_a_latin_1_user_agent_is_sent(hostd_data_dir, hostd_roots, article_server) -> None:
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.url("/s/article/1")], "user_agent": "Navigateur-é/1.0 (test)"},
    )
    assert envelope["summary"]["succeeded"] == 1


@pytest.mark.parametrize("user_agent", BAD_USER_AGENTS)
def test_the_user_agent_setting_is_checked_when_the_config_is_read(user_agent) -> None:
    with pytest.raises(ValidationError, match="default_user_agent"):
        Settings(default_user_agent=user_agent)
