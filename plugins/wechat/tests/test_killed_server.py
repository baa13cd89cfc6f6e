"""A `hostd serve` killed in the middle of a batch leaves only whole articles behind."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import yaml
from hostd_testing import envelope_of, handshake, raw_stdio_server, served_client, tools_call, write_config
from wechat_testlib import ArticleServer, plugin_settings

pytestmark = pytest.mark.anyio


def _assert_only_whole_articles(folder: Path) -> list[Path]:
    articles = sorted(folder.glob("*.md"))
    for path in articles:
        text = path.read_text(encoding="utf-8")
        assert text.rstrip().endswith("END-OF-ARTICLE"), f"{path.name} is cut short"
        front = yaml.safe_load(text.split("---\n")[1])
        assert front["title"].startswith("Killed batch ")
    # A kill can only leave the hidden temp file of a write in progress, never a visible part.
    others = [p.name for p in folder.iterdir() if p.suffix != ".md"]
    assert all(name.startswith(".") and name.endswith(".tmp") for name in others), others
    return articles


@pytest.mark.slow
async def test_a_server_killed_mid_batch_leaves_whole_files_and_the_next_run_completes(
    tmp_path: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    config = write_config(
        tmp_path,
        ["wechat"],
        config={"language": "en", "allowed_roots": [str(hostd_roots)]},
        settings=plugin_settings(article_server),
    )
    urls = [article_server.url(f"/s/article/{n}?delay_ms=200&title=Killed+batch+{n}") for n in range(24)]
    folder = hostd_roots / "exports" / "articles"
    arguments = {"urls": urls, "concurrency": 3}
    with raw_stdio_server(config, cwd=hostd_roots, capture_stdout=False, capture_stderr=False) as server:
        server.send(*handshake("killer"), tools_call(2, "read_wechat_articles", arguments))
        server.wait_until(
            lambda: len(list(folder.glob("*.md"))) >= 3,
            timeout=30,
            message="before three articles were written",
        )
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=30)
    fetched_before_the_kill = len(article_server.requests)
    written = _assert_only_whole_articles(folder)
    assert 3 <= len(written) < len(urls)
    assert fetched_before_the_kill < len(urls)

    # A new server takes the same batch again: every article whole, the old ones replaced.
    async with served_client(config, cwd=hostd_roots) as client:
        envelope = envelope_of(
            await client.call_tool(
                "read_wechat_articles", {"urls": urls, "concurrency": 5, "overwrite": True}
            )
        )
    assert envelope["summary"]["succeeded"] == len(urls), envelope["summary"]
    assert len(_assert_only_whole_articles(folder)) == len(urls)
