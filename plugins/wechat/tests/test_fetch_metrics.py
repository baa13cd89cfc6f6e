"""Page fetches in flight on ``/metrics``: a real ``hostd serve`` over HTTP, scraped during a slow fetch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hostd_testing import HttpServer, envelope_of, free_port, write_config
from prometheus_client.parser import text_string_to_metric_families
from wechat_testlib import ArticleServer, plugin_settings

pytestmark = pytest.mark.anyio


def fetches_in_flight(metrics_port: int) -> dict[str, float]:
    """``hostd_fetches_in_flight`` per plugin, as a scrape sees it now."""
    text = httpx2.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
    return {
        sample.labels["plugin"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "hostd_fetches_in_flight"
    }


async def test_a_slow_fetch_shows_on_metrics_as_one_in_flight_then_none(
    tmp_path: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    metrics_port = free_port()
    transport = {"type": "http", "metrics": {"port": metrics_port, "host": "127.0.0.1"}}
    config = write_config(
        tmp_path,
        config={
            "language": "en",
            "allowed_roots": [str(hostd_roots)],
            "profiles": {"default": {"plugins": ["wechat"], "transport": transport}},
        },
        settings=plugin_settings(article_server),
    )
    # Hangs until released (at most 60 s): the fetch stays in flight while the test scrapes.
    url = article_server.url("/s/hang?seconds=60")
    answer: dict[str, Any] = {}
    with HttpServer.start(config, cwd=hostd_roots) as server:
        assert await anyio.to_thread.run_sync(fetches_in_flight, metrics_port) == {"wechat": 0}
        async with server.client() as client:

            async def read() -> None:
                result = await client.call_tool("read_wechat_articles", {"urls": [url], "timeout_ms": 60_000})
                answer.update(envelope_of(result))

            async with anyio.create_task_group() as group:
                group.start_soon(read)
                with anyio.fail_after(30):  # a guard, not a speed check
                    while article_server.count("/s/hang") == 0:
                        await anyio.sleep(0.02)
                # The page's server holds the request: the fetch is in flight, and says so.
                assert await anyio.to_thread.run_sync(fetches_in_flight, metrics_port) == {"wechat": 1}
                assert article_server.count_finished("/s/hang") == 0
                article_server.release_hangs()
        assert answer["summary"]["succeeded"] == 1
        assert await anyio.to_thread.run_sync(fetches_in_flight, metrics_port) == {"wechat": 0}
