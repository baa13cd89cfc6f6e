"""The fuzz check over both tools, and what every client sees of them (schemas, annotations)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostd_testing import fuzz_tools
from wechat_testlib import ArticleServer, plugin_settings, wechat_client

pytestmark = pytest.mark.anyio


async def test_fuzz_never_answers_internal(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    async with wechat_client(hostd_data_dir, hostd_roots, settings=plugin_settings(article_server)) as client:
        report = await fuzz_tools(client, seed=7, rounds=8)
        assert report.calls > 0, report.failures
        assert not report.failures, report.failures
        assert (await client.list_tools()).tools  # still serving
    assert all(not path.startswith(("/outside", "/mp")) for path in article_server.requests)


@pytest.mark.smoke
async def test_tools_are_listed_with_described_parameters_and_true_annotations(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    async with wechat_client(hostd_data_dir, hostd_roots) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"read_wechat_articles", "summarize_articles"}
    for tool in tools.values():
        for name, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), f"{tool.name}.{name}"
        assert tool.output_schema
        assert tool.annotations.read_only_hint is False
    read = tools["read_wechat_articles"]
    assert read.input_schema["required"] == ["urls"]
    assert read.input_schema["properties"]["urls"]["maxItems"] == 50
    assert read.annotations.open_world_hint is True
    assert set(read.input_schema["properties"]["fetch_strategy"]["enum"]) == {"auto", "http", "headless"}


def test_importing_the_plugin_loads_no_parser_or_http_client() -> None:
    import subprocess
    import sys

    code = (
        "import sys, hostd_wechat.plugin\n"
        "heavy = [m for m in ('bs4', 'lxml', 'requests', 'httpx2', 'http.client', 'ssl',\n"
        "                     'markdownify', 'playwright')\n"
        "        if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
