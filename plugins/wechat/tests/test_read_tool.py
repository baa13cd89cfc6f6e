"""read_wechat_articles end to end: an MCP client, the host, and a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hostd_testing import call, envelope_of
from hostd_wechat.frontmatter import FIELDS, split_front_matter
from wechat_testlib import ArticleServer, plugin_settings, require_fixtures, wechat_client

pytestmark = pytest.mark.anyio


async def _read(
    hostd_data_dir: Path, root: Path, server: ArticleServer, arguments: dict[str, Any], **settings: Any
) -> dict[str, Any]:
    async with wechat_client(hostd_data_dir, root, settings=plugin_settings(server, **settings)) as client:
        return await call(client, "read_wechat_articles", **arguments)


@pytest.mark.smoke
async def test_three_good_urls_and_one_invalid_fail_alone(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    require_fixtures()
    names = [
        "article_2025_tech_code_xuanyuan.html",
        "picture_post_2025_36kr.html",
        "text_post_2025_short.html",
    ]
    urls = [article_server.fixture_url(n) for n in names] + ["https://example.com/s/not-wechat"]
    envelope = await _read(hostd_data_dir, hostd_roots, article_server, {"urls": urls})
    assert envelope["status"] == "success"
    assert envelope["summary"] == {"total": 4, "succeeded": 3, "failed": 1}
    items = envelope["items"]
    assert [i["status"] for i in items] == ["ok", "ok", "ok", "error"]
    assert items[3]["error_code"] == "INVALID_URL"
    assert items[3]["hint"]
    assert article_server.count("example.com") == 0
    for item in items[:3]:
        path = Path(item["saved_path"])
        assert path.parent == hostd_roots / "exports" / "articles"
        text = path.read_text(encoding="utf-8")
        assert len(text.encode("utf-8")) == item["bytes_written"]
        metadata, _body, form = split_front_matter(text)
        assert form == "yaml"
        assert set(FIELDS) <= set(metadata)
        assert metadata["source_url"] == item["url"]
        assert metadata["title"] == item["title"]
        assert "duration_ms" not in item
        assert "preview_snippet" not in item
    assert items[0]["title"] == "AI编程害死我了，给我的抓包软件埋了一个大雷！"
    assert items[0]["account_name"] == "轩辕的编程宇宙"


async def test_detailed_answers_carry_durations_and_previews(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.url("/s/article/1")], "response_format": "detailed"},
    )
    item = envelope["items"][0]
    assert item["status"] == "ok"
    assert item["strategy"] == "http"
    assert item["duration_ms"] >= 0
    assert item["preview_snippet"].startswith("第0段")


async def test_missing_and_challenge_pages_are_error_items_with_reasons(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    require_fixtures()
    cases = {
        "deleted_by_publisher_zh.html": ("NOT_FOUND", "deleted"),
        "expired_link_2018.html": ("NOT_FOUND", "expired"),
        "unavailable_temporarily.html": ("NOT_FOUND", "unavailable"),
        "ratelimit_2018_legacy_escaped.html": ("CHALLENGE", "rate_limited"),
        "verify_captcha_secitptpage.html": ("CHALLENGE", "verification"),
    }
    urls = [article_server.fixture_url(n) for n in cases] + [article_server.url("/s/gone")]
    envelope = await _read(
        hostd_data_dir, hostd_roots, article_server, {"urls": urls, "fetch_strategy": "http"}
    )
    got = [(i["error_code"], i["reason"]) for i in envelope["items"]]
    assert got == [*cases.values(), ("NOT_FOUND", "http_404")]
    assert all(i["hint"] for i in envelope["items"])
    assert not (hostd_roots / "exports" / "articles").exists() or not any(
        (hostd_roots / "exports").rglob("*.md")
    )


async def test_auto_meets_a_challenge_without_a_browser_and_says_how_to_enable_it(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    require_fixtures()
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.fixture_url("verify_captcha_secitptpage.html")]},
    )
    item = envelope["items"][0]
    assert (item["error_code"], item["reason"]) == ("CHALLENGE", "verification")
    assert "headless" in item["hint"]
    assert "chromium" in item["hint"].lower()


async def test_redirects_inside_the_prefix_are_followed_others_refused(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    from urllib.parse import quote

    def via(target: str) -> str:
        return article_server.url("/s/redirect?to=" + quote(target, safe=""))

    urls = [
        via(article_server.url("/s/article/7?title=Redirected")),
        via(article_server.url("/outside/page")),
        via("http://127.0.0.1:1/s/article/8"),
        via(article_server.url("/mp/wappoc_appmsgcaptcha?src=x")),
        via("file:///etc/passwd"),
    ]
    envelope = await _read(hostd_data_dir, hostd_roots, article_server, {"urls": urls})
    got = [(i["status"], i.get("error_code"), i.get("reason")) for i in envelope["items"]]
    assert got == [
        ("ok", None, None),
        ("error", "INVALID_URL", "redirect_not_allowed"),
        ("error", "INVALID_URL", "redirect_not_allowed"),
        ("error", "CHALLENGE", "verification"),
        ("error", "INVALID_URL", "redirect_not_allowed"),
    ]
    assert envelope["items"][0]["title"] == "Redirected"
    assert not any(path.startswith(("/outside/", "/mp/")) for path in article_server.requests)


async def test_a_5xx_is_retried_with_backoff_at_most_twice(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    urls = [article_server.url("/s/flaky/a/2"), article_server.url("/s/flaky/b/3")]
    envelope = await _read(hostd_data_dir, hostd_roots, article_server, {"urls": urls})
    first, second = envelope["items"]
    assert first["status"] == "ok"
    assert article_server.count("/s/flaky/a/") == 3
    assert second["status"] == "error"
    assert article_server.count("/s/flaky/b/") == 3
    assert second["reason"] == "server_error"


async def test_a_timeout_is_retried_then_reported(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.url("/s/hang?seconds=1.5")], "timeout_ms": 200},
        max_retries=1,
    )
    item = envelope["items"][0]
    assert (item["error_code"], item["reason"]) == ("TIMEOUT", "timeout")
    assert article_server.count("/s/hang") == 2


async def test_responses_over_the_size_cap_are_refused(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.url("/s/big")]},
        max_response_bytes=200_000,
    )
    item = envelope["items"][0]
    assert (item["error_code"], item["reason"]) == ("TOO_LONG", "response_too_large")


async def test_fetching_is_truly_concurrent_and_reports_progress(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    urls = [article_server.url(f"/s/article/{n}?delay_ms=300") for n in range(8)]
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async with wechat_client(hostd_data_dir, hostd_roots, settings=plugin_settings(article_server)) as client:
        envelope = envelope_of(
            await client.call_tool(
                "read_wechat_articles", {"urls": urls, "concurrency": 4}, progress_callback=on_progress
            )
        )
    assert envelope["summary"]["succeeded"] == 8
    # Four pages in flight at once (each answer takes 300 ms), never more; the speed-up itself is
    # measured in bench/bench_wechat.py (30 articles, concurrency 5), not asserted on a shared CPU.
    assert article_server.max_in_flight == 4
    assert [p[0] for p in progress] == [float(n) for n in range(1, 9)]
    assert progress[-1][1] == 8


async def test_same_titles_get_suffixes_and_overwrite_replaces(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    urls = [article_server.url(f"/s/article/{n}?title=Same") for n in range(3)]
    first = await _read(hostd_data_dir, hostd_roots, article_server, {"urls": urls, "concurrency": 3})
    names = sorted(Path(i["saved_path"]).name for i in first["items"])
    assert names == ["Same.md", "Same_2.md", "Same_3.md"]
    again = await _read(hostd_data_dir, hostd_roots, article_server, {"urls": urls[:1], "overwrite": True})
    assert Path(again["items"][0]["saved_path"]).name == "Same.md"
    third = await _read(hostd_data_dir, hostd_roots, article_server, {"urls": urls[:1]})
    assert Path(third["items"][0]["saved_path"]).name == "Same_4.md"


async def test_filename_pattern_placeholders(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {
            "urls": [article_server.url("/s/article/1?title=T")],
            "filename_pattern": "{date}-{account_name}-{title}",
        },
    )
    assert Path(envelope["items"][0]["saved_path"]).name == "20241028-Test Account-T.md"
    bad = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {"urls": [article_server.url("/s/article/1")], "filename_pattern": "{title}-{id}"},
    )
    assert bad["status"] == "error"
    assert bad["error"]["code"] == "INVALID_ARGUMENT"
    assert "{id}" in bad["error"]["message"]


async def test_hostile_titles_give_safe_file_names(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    from urllib.parse import quote

    titles = ["../../etc/passwd", "a/b\\c:d*e?f", "CON", "..", "😀" * 80 + "x" * 300, "nul.txt", "<>|\"'"]
    urls = [article_server.url(f"/s/article/{n}?title={quote(t)}") for n, t in enumerate(titles)]
    envelope = await _read(hostd_data_dir, hostd_roots, article_server, {"urls": urls})
    folder = hostd_roots / "exports" / "articles"
    for item in envelope["items"]:
        assert item["status"] == "ok", item
        path = Path(item["saved_path"])
        assert path.parent == folder
        assert path.is_file()
        assert len(path.name.encode("utf-8")) <= 255
        assert not set(path.name) & set('/\\:*?"<>|')
        assert path.stem.upper() not in {"CON", "NUL", ".."}


async def test_hostile_urls_are_invalid_items_and_never_fetched(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    port = article_server.port
    urls = [
        f"http://user:pw@127.0.0.1:{port}/s/article/1",
        f"http://127.0.0.1:{port}@evil.example/s/article/1",
        f"http://127.0.0.1:{port + 1}/s/article/1",
        f"http://localhost:{port}/s/article/1",
        f"https://127.0.0.1:{port}/s/article/1",
        f"http://127.0.0.1:{port}/sx/article/1",
        f"http://127.0.0.1:{port}/s/../outside/x",
        f"http://127.0.0.1:{port}/s/%2e%2e/outside/x",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "https://mp.weixin.qq.com/s/real-but-not-allowed-here",
        "",
    ]
    envelope = await _read(hostd_data_dir, hostd_roots, article_server, {"urls": urls})
    assert envelope["summary"] == {"total": len(urls), "succeeded": 0, "failed": len(urls)}
    assert {i["error_code"] for i in envelope["items"]} == {"INVALID_URL"}
    assert article_server.requests == []


async def test_output_folder_outside_the_roots_is_a_call_error(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, tmp_path: Path
) -> None:
    for output_dir in ["../outside", str(tmp_path / "elsewhere"), "/etc", "a/../../b"]:
        envelope = await _read(
            hostd_data_dir,
            hostd_roots,
            article_server,
            {"urls": [article_server.url("/s/article/1")], "output_dir": output_dir},
        )
        assert envelope["status"] == "error", output_dir
        assert envelope["error"]["code"] == "PATH_NOT_ALLOWED", output_dir
    assert article_server.requests == []
    assert not (tmp_path / "elsewhere").exists()


async def test_a_failed_write_is_a_write_error_item(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    folder = hostd_roots / "exports" / "articles"
    (folder / "Blocked.md").mkdir(parents=True)  # a folder where the file should go: no write can succeed
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        {
            "urls": [
                article_server.url("/s/article/1?title=Blocked"),
                article_server.url("/s/article/2?title=Fine"),
            ],
            "overwrite": True,
        },
    )
    blocked, fine = envelope["items"]
    assert blocked["status"] == "error"
    assert blocked["error_code"] == "WRITE_ERROR"
    assert blocked["hint"]
    assert fine["status"] == "ok"
    assert envelope["summary"]["failed"] == 1


async def test_cancelling_mid_batch_stops_fetching_and_leaves_no_half_written_file(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    urls = [article_server.url(f"/s/article/{n}?delay_ms=250") for n in range(20)]
    finished = anyio.Event()

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        if done >= 2:
            finished.set()

    async with wechat_client(hostd_data_dir, hostd_roots, settings=plugin_settings(article_server)) as client:
        async with anyio.create_task_group() as group:

            async def run() -> None:
                await client.call_tool(
                    "read_wechat_articles", {"urls": urls, "concurrency": 2}, progress_callback=on_progress
                )

            group.start_soon(run)
            with anyio.fail_after(10):
                await finished.wait()
            group.cancel_scope.cancel()
        # The worker threads notice the cancellation between steps; give them a moment to settle.
        settled = -1
        for _ in range(40):
            await anyio.sleep(0.15)
            if len(article_server.requests) == settled:
                break
            settled = len(article_server.requests)
    assert len(article_server.requests) < len(urls)
    folder = hostd_roots / "exports" / "articles"
    leftovers = [p for p in folder.iterdir() if not p.name.endswith(".md")]
    assert leftovers == []
    for path in folder.glob("*.md"):
        assert path.read_text(encoding="utf-8").rstrip().endswith("END-OF-ARTICLE")


async def test_a_zh_server_explains_refused_links_and_a_bad_pattern_in_chinese(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    """Every sentence of a zh answer is Chinese: item hints (with the refusal) and argument errors."""
    async with wechat_client(
        hostd_data_dir, hostd_roots, settings=plugin_settings(article_server), language="zh"
    ) as client:
        envelope = await call(
            client,
            "read_wechat_articles",
            urls=["https://example.com/s/x", "mp.weixin.qq.com/s/abc"],
            response_format="detailed",
        )
        bad = await call(
            client, "read_wechat_articles", urls=["https://example.com/s/x"], filename_pattern="{id}"
        )
    hints = [item["hint"] for item in envelope["items"]]
    assert "不在允许的 URL 前缀之下" in hints[0]
    assert "缺少协议" in hints[1]
    for hint in hints:
        assert "not under" not in hint
        assert "scheme" not in hint
        assert "Only links" not in hint
    assert bad["error"]["code"] == "INVALID_ARGUMENT"
    assert "未知的占位符 {id}" in bad["error"]["message"]
    assert "unknown" not in bad["error"]["message"]
