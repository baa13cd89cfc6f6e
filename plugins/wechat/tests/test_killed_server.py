"""A `hostd serve` killed in the middle of a batch leaves only whole articles behind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hostd_testing import envelope_of, served_client, write_config
from wechat_testlib import ArticleServer, plugin_settings

pytestmark = pytest.mark.anyio


def _send(process: subprocess.Popen[bytes], *messages: dict) -> None:
    assert process.stdin is not None
    process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    process.stdin.flush()


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
    process = subprocess.Popen(
        [sys.executable, "-m", "hostd", "serve", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=hostd_roots,
    )
    try:
        _send(
            process,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "killer", "version": "1"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "read_wechat_articles", "arguments": {"urls": urls, "concurrency": 3}},
            },
        )
        deadline = time.monotonic() + 30
        while len(list(folder.glob("*.md"))) < 3:
            assert time.monotonic() < deadline, "the batch never wrote three articles"
            assert process.poll() is None, "the server died on its own"
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    fetched_before_the_kill = len(article_server.requests)
    written = _assert_only_whole_articles(folder)
    assert 3 <= len(written) < len(urls) and fetched_before_the_kill < len(urls)

    # A new server takes the same batch again: every article whole, the old ones replaced.
    async with served_client(config, cwd=hostd_roots) as client:
        envelope = envelope_of(
            await client.call_tool(
                "read_wechat_articles", {"urls": urls, "concurrency": 5, "overwrite": True}
            )
        )
    assert envelope["summary"]["succeeded"] == len(urls), envelope["summary"]
    assert len(_assert_only_whole_articles(folder)) == len(urls)
