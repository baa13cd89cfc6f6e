"""``images: local`` on read_wechat_articles (issue 16): saved fixture pages served on 127.0.0.1,
their images served by a second loopback server standing in for WeChat's CDN."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import anyio
import pytest
from hostd_testing import (
    call,
    fuzz_tools,
    handshake,
    raw_stdio_server,
    served_client,
    tools_call,
    write_config,
)
from wechat_testlib import (
    ArticleServer,
    CdnServer,
    image_settings,
    require_fixtures,
    tiny_png,
    wechat_client,
)

pytestmark = pytest.mark.anyio

CONTENT_NAME = re.compile(r"^[0-9a-f]{32}\.(png|jpg|gif|webp)$")
GENERATED_AT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")
# Every reason an image can be left remote for (the README's table).
KNOWN_REASONS = {
    "not_allowed",
    "redirect_not_allowed",
    "too_many_redirects",
    "verification",
    "rate_limited",
    "timeout",
    "server_error",
    "connection_failed",
    "response_too_large",
    "not_an_image",
    "svg_refused",
    "article_limit",
    "write_error",
    "cancelled",
} | {f"http_{status}" for status in range(300, 500)}
LOCAL_LINK = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


async def _read(
    data_dir: Path,
    root: Path,
    server: ArticleServer,
    cdn: CdnServer,
    arguments: dict[str, Any],
    language: str = "en",
    **settings: Any,
) -> dict[str, Any]:
    async with wechat_client(
        data_dir, root, settings=image_settings(server, cdn, **settings), language=language
    ) as client:
        return await call(client, "read_wechat_articles", images="local", **arguments)


def _gallery(server: ArticleServer, *sources: str, count: int = 0, title: str = "Gallery") -> str:
    query = "&".join(
        [f"title={quote(title)}", f"count={count}", *(f"src={quote(s, safe='')}" for s in sources)]
    )
    return server.url(f"/s/gallery?{query}")


def _local_links(markdown_path: Path) -> list[Path]:
    """The files the Markdown's relative image links point at (percent-decoded)."""
    text = markdown_path.read_text(encoding="utf-8")
    links = [m.group(1) for m in LOCAL_LINK.finditer(text) if not m.group(1).startswith("http")]
    return [markdown_path.parent / unquote(link) for link in links]


async def test_fixture_articles_store_their_images_beside_the_markdown(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, cdn_server: CdnServer
) -> None:
    require_fixtures()
    names = [
        "article_2025_tech_code_xuanyuan.html",  # 10 images, one of them twice
        "picture_post_2025_36kr.html",  # pictures from the page data
        "article_2024_reprint_codeblocks_vue2react.html",  # png and gif
        "article_2026_paid_badge_xiaoshuoshiyi.html",  # its one image is on res.wx.qq.com
    ]
    urls = [article_server.url(f"/s/fixture-cdn/{name}") for name in names]
    envelope = await _read(hostd_data_dir, hostd_roots, article_server, cdn_server, {"urls": urls})
    assert envelope["summary"]["succeeded"] == 4, envelope
    xuanyuan, picture, vue, paid = envelope["items"]
    assert (xuanyuan["images"]["found"], xuanyuan["images"]["saved"], xuanyuan["images"]["remote"]) == (
        9,
        9,
        0,
    )
    assert picture["images"]["saved"] == picture["images"]["found"] == 4
    assert vue["images"]["saved"] == 20
    assert paid["images"] == {
        "found": 1,
        "saved": 0,
        "remote": 1,
        "bytes_written": 0,
        "folder": None,
        "problems": [{"url": paid["images"]["problems"][0]["url"], "reason": "not_allowed"}],
    }
    assert paid["images"]["problems"][0]["url"].startswith("https://res.wx.qq.com/")
    # Every distinct image was asked for once; nothing else reached the CDN.
    assert len(cdn_server.requests) == len(set(cdn_server.requests)) == 9 + 4 + 20
    for item in (xuanyuan, picture, vue):
        markdown = Path(item["saved_path"])
        folder = Path(item["images"]["folder"])
        assert folder == markdown.parent / (markdown.stem + ".assets")
        stored = sorted(folder.iterdir())
        assert all(CONTENT_NAME.match(path.name) for path in stored)
        assert item["images"]["bytes_written"] == sum(path.stat().st_size for path in stored)
        linked = _local_links(markdown)
        assert linked
        assert all(path.is_file() and path.parent == folder for path in linked)
        assert set(linked) == set(stored)
        assert cdn_server.base not in markdown.read_text(encoding="utf-8")
    # The real type names the file (the CDN answers each wx_fmt with that type).
    vue_files = {path.suffix for path in Path(vue["images"]["folder"]).iterdir()}
    assert vue_files == {".png", ".gif", ".jpg"}
    # The paid article keeps its remote link.
    assert "https://res.wx.qq.com/" in Path(paid["saved_path"]).read_text(encoding="utf-8")


async def test_remote_stays_the_default_and_fetches_no_image(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, cdn_server: CdnServer
) -> None:
    async with wechat_client(
        hostd_data_dir, hostd_roots, settings=image_settings(article_server, cdn_server)
    ) as client:
        envelope = await call(client, "read_wechat_articles", urls=[_gallery(article_server, count=3)])
    item = envelope["items"][0]
    assert item["status"] == "ok"
    assert "images" not in item
    assert cdn_server.requests == []
    assert not list(Path(item["saved_path"]).parent.glob("*.assets"))
    assert Path(item["saved_path"]).read_text(encoding="utf-8").count(cdn_server.base) == 3


async def test_the_same_image_twice_is_stored_once(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, cdn_server: CdnServer
) -> None:
    same_a, same_b = cdn_server.url("/same/a.png"), cdn_server.url("/same/b.png")
    url = _gallery(article_server, same_a, same_b, same_a)
    first = (await _read(hostd_data_dir, hostd_roots, article_server, cdn_server, {"urls": [url]}))["items"][
        0
    ]
    assert (first["images"]["found"], first["images"]["saved"]) == (2, 2)
    folder = Path(first["images"]["folder"])
    assert [path.name for path in folder.iterdir()] == [first_name := next(folder.iterdir()).name]
    assert first["images"]["bytes_written"] == len(tiny_png("always the same picture"))
    assert {path.name for path in _local_links(Path(first["saved_path"]))} == {first_name}
    # Read again over it: the stored picture is found, not written again.
    again = await _read(
        hostd_data_dir, hostd_roots, article_server, cdn_server, {"urls": [url], "overwrite": True}
    )
    assert again["items"][0]["images"]["saved"] == 2
    assert again["items"][0]["images"]["bytes_written"] == 0


async def test_hostile_images_stay_remote_with_their_reasons(
    hostd_data_dir: Path,
    hostd_roots: Path,
    article_server: ArticleServer,
    cdn_server: CdnServer,
    tmp_path: Path,
) -> None:
    outside_host = article_server.url("/outside/picture.png")  # the article server: not an image host
    cases = {
        cdn_server.url("/bad/html"): "not_an_image",
        cdn_server.url("/bad/svg"): "svg_refused",
        cdn_server.url("/bad/huge"): "response_too_large",
        cdn_server.url("/bad/huge?declared=1"): "response_too_large",
        cdn_server.url("/bad/redirect?to=" + quote(outside_host, safe="")): "redirect_not_allowed",
        cdn_server.url("/bad/loop"): "too_many_redirects",
        cdn_server.url("/bad/missing"): "http_404",
        outside_host: "not_allowed",
        "../../../../etc/passwd": "not_allowed",  # relative to the article: not on the image host
        "file:///etc/passwd": "not_allowed",
        cdn_server.url("/bad/named"): None,  # stored, under its content name only
        cdn_server.url("/mmbiz_png/../../../etc/passwd?wx_fmt=png"): None,  # a plain path on the CDN
    }
    started = time.monotonic()
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        cdn_server,
        {"urls": [_gallery(article_server, *cases)]},
        max_retries=0,
    )
    assert time.monotonic() - started < 10
    item = envelope["items"][0]
    assert item["status"] == "ok"
    reasons = {problem["url"]: problem["reason"] for problem in item["images"]["problems"]}
    assert reasons == {url: reason for url, reason in cases.items() if reason is not None}
    assert (item["images"]["saved"], item["images"]["remote"]) == (2, len(reasons))
    assert article_server.count("/outside/") == 0
    folder = Path(item["images"]["folder"])
    assert all(CONTENT_NAME.match(path.name) for path in folder.iterdir())
    # Nothing landed anywhere but the article's folder, and the refused links are kept as they were.
    written = {path for path in hostd_roots.rglob("*") if path.is_file()}
    assert written == {Path(item["saved_path"]), *folder.iterdir()}
    text = Path(item["saved_path"]).read_text(encoding="utf-8")
    assert cdn_server.url("/bad/svg") in text
    assert "file:///etc/passwd" in text


async def test_a_trickling_image_ends_at_the_time_limit(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, cdn_server: CdnServer
) -> None:
    """The image's 800 ms is a limit on the whole download, not on each read: the trickle sends a
    byte every 50 ms for 20 s, so only a whole-download limit hangs up on it (the server sees the
    hang-up) before it ends. The elapsed time is measured in bench/bench_wechat_limits.py."""
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        cdn_server,
        {"urls": [_gallery(article_server, cdn_server.url("/bad/trickle"))], "timeout_ms": 800},
        max_retries=0,
    )
    item = envelope["items"][0]
    assert item["status"] == "ok"
    assert item["images"]["problems"] == [{"url": cdn_server.url("/bad/trickle"), "reason": "timeout"}]
    assert cdn_server.hang_up_seen.wait(5)
    assert cdn_server.count("/bad/trickle") == 1


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_a_thousand_images_are_bounded_by_count_with_a_warning(
    hostd_data_dir: Path,
    hostd_roots: Path,
    article_server: ArticleServer,
    cdn_server: CdnServer,
    language: str,
) -> None:
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        cdn_server,
        {"urls": [_gallery(article_server, count=1000)], "concurrency": 10},
        language=language,
        max_images_per_article=25,
    )
    images = envelope["items"][0]["images"]
    assert (images["found"], images["saved"], images["remote"]) == (1000, 25, 975)
    assert len(images["problems"]) == 20
    assert {p["reason"] for p in images["problems"]} == {"article_limit"}
    assert len(cdn_server.requests) == 25
    assert "1000" in images["warning"]
    assert "max_images_per_article" in images["warning"]
    if language == "zh":
        # Nothing English but the setting's name.
        assert not re.search(r"[A-Za-z]{3,}", images["warning"].replace("max_images_per_article", ""))
        assert "图片" in images["warning"]


async def test_the_bytes_of_one_articles_images_are_bounded_with_a_warning(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, cdn_server: CdnServer
) -> None:
    picture = len(tiny_png("x"))
    envelope = await _read(
        hostd_data_dir,
        hostd_roots,
        article_server,
        cdn_server,
        {"urls": [_gallery(article_server, count=60)], "concurrency": 1},
        max_image_bytes_per_article=1024 * 2,
    )
    images = envelope["items"][0]["images"]
    stored = 2048 // picture
    assert (images["saved"], images["remote"]) == (stored, 60 - stored)
    assert images["bytes_written"] <= 2048
    assert {p["reason"] for p in images["problems"]} == {"article_limit"}
    assert "max_image_bytes_per_article" in images["warning"]
    # Only the requests already under way when the budget ran out (one per download thread, two at
    # concurrency 1) went past it: the rest were never fetched.
    assert len(cdn_server.requests) <= stored + 2


async def test_image_downloads_honour_concurrency(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer
) -> None:
    """Three downloads at a time, never more: the CDN holds its answers until three are in flight
    (so a loaded machine still reaches the peak) and counts the peak. How much faster three at a
    time is than one is measured in bench/bench_wechat_limits.py, not asserted here."""
    with CdnServer(delay_s=0.05, hold_until=3) as slow_cdn:
        envelope = await _read(
            hostd_data_dir,
            hostd_roots,
            article_server,
            slow_cdn,
            {"urls": [_gallery(article_server, count=24)], "concurrency": 3},
        )
    assert envelope["items"][0]["images"]["saved"] == 24
    assert slow_cdn.max_in_flight == 3


async def test_cancelling_a_call_closes_its_image_connections(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, cdn_server: CdnServer
) -> None:
    url = _gallery(article_server, cdn_server.url("/bad/trickle"))
    async with wechat_client(
        hostd_data_dir, hostd_roots, settings=image_settings(article_server, cdn_server)
    ) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(
                client.call_tool,
                "read_wechat_articles",
                {"urls": [url], "images": "local", "timeout_ms": 60_000},
            )
            assert await anyio.to_thread.run_sync(cdn_server.trickle_started.wait, 5)
            group.cancel_scope.cancel()
        # The trickle lasts 20 s and the call's limit is 60 s: a hang-up seen within 5 s was the
        # cancel's doing. (The cancel-to-hang-up latency is in bench/bench_wechat_limits.py.)
        assert await anyio.to_thread.run_sync(cdn_server.hang_up_seen.wait, 5)
    assert not list((hostd_roots / "exports" / "articles").glob("*.md"))


async def test_the_digest_reads_articles_with_local_images_unchanged(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, cdn_server: CdnServer
) -> None:
    require_fixtures()
    names = ["article_2025_tech_code_xuanyuan.html", "article_2025_reprint_36kr.html"]
    urls = [article_server.url(f"/s/fixture-cdn/{name}") for name in names]
    # Parentheses, brackets and spaces in the names: the links must stay one token each.
    pattern = "{title} (copy) [1]"
    digests = {}
    async with wechat_client(
        hostd_data_dir, hostd_roots, settings=image_settings(article_server, cdn_server)
    ) as client:
        for images in ("remote", "local"):
            read = await call(
                client,
                "read_wechat_articles",
                urls=urls,
                images=images,
                output_dir=images,
                filename_pattern=pattern,
            )
            assert read["summary"]["succeeded"] == 2
            for item in read["items"] if images == "local" else []:
                # One link token per image, each resolving to its file despite the spaces and brackets.
                linked = _local_links(Path(item["saved_path"]))
                assert len(set(linked)) == item["images"]["saved"] > 0
                assert all(p.is_file() for p in linked)
            digest = await call(
                client,
                "summarize_articles",
                input_dir=images,
                output_path=f"digest-{images}.md",
                response_format="detailed",
            )
            assert digest["status"] == "success"
            assert digest["errors"] == []
            assert digest["warnings"] == []
            assert digest["article_count"] == 2
            text = GENERATED_AT.sub("", Path(digest["path"]).read_text(encoding="utf-8"))
            digests[images] = (text.replace("remote/", "DIR/"), digest["sections_overview"])
    local_text, local_sections = digests["local"]
    remote_text, remote_sections = digests["remote"]
    assert local_text.replace("local/", "DIR/") == remote_text
    assert [{**s, "source_file": ""} for s in local_sections] == [
        {**s, "source_file": ""} for s in remote_sections
    ]
    assert "assets" not in local_text
    assert ".png" not in local_text


async def test_a_real_server_process_stores_images(
    tmp_path: Path, hostd_roots: Path, article_server: ArticleServer, cdn_server: CdnServer
) -> None:
    config = write_config(
        tmp_path,
        ["wechat"],
        config={"language": "en", "allowed_roots": [str(hostd_roots)]},
        settings=image_settings(article_server, cdn_server),
    )
    async with served_client(config, cwd=hostd_roots) as client:
        envelope = await call(
            client, "read_wechat_articles", urls=[_gallery(article_server, count=3)], images="local"
        )
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    item = envelope["items"][0]
    assert item["images"]["saved"] == 3
    assert len(_local_links(Path(item["saved_path"]))) == 3
    schema = tools["read_wechat_articles"].input_schema["properties"]["images"]
    assert schema["enum"] == ["remote", "local"]
    assert schema["default"] == "remote"


def test_only_bitmap_magic_bytes_make_an_image() -> None:
    from hostd_wechat.images import image_extension, looks_like_svg
    from wechat_testlib import tiny_gif, tiny_jpeg

    assert image_extension(tiny_png("a")) == "png"
    assert image_extension(tiny_jpeg("a")) == "jpg"
    assert image_extension(tiny_gif("a")) == "gif"
    assert image_extension(b"RIFF\x10\x00\x00\x00WEBPVP8 ") == "webp"
    for not_an_image in (b"", b"<html><body>", b"RIFF\x10\x00\x00\x00WAVEfmt ", b"\x89PNG", b"GIF90a"):
        assert image_extension(not_an_image) is None
    assert looks_like_svg(b'\xef\xbb\xbf <?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>')
    assert looks_like_svg(b"<svg onload='x'/>")
    assert not looks_like_svg(b"<html></html>")


def test_links_to_stored_images_are_one_token_and_http_is_upgraded_only_to_a_listed_https() -> None:
    from hostd_wechat.images import admitted_url, markdown_link
    from hostd_wechat.urls import UrlPrefix

    assert (
        markdown_link("标题 (1) [x]#%?.assets", "ab.png") == "标题%20%281%29%20%5Bx%5D%23%25%3F.assets/ab.png"
    )
    prefixes = [UrlPrefix.parse("https://mmbiz.qpic.cn/")]
    page = "https://mp.weixin.qq.com/s/abc"
    legacy = "http://mmbiz.qpic.cn/mmbiz_jpg/x/0?wx_fmt=jpeg"
    assert admitted_url(legacy, page, prefixes) == ("https://mmbiz.qpic.cn/mmbiz_jpg/x/0?wx_fmt=jpeg", None)
    assert (
        admitted_url("//mmbiz.qpic.cn/a/0?wx_fmt=png", page, prefixes)[0]
        == "https://mmbiz.qpic.cn/a/0?wx_fmt=png"
    )
    for refused in (
        "http://mmbiz.qpic.cn:8080/a",
        "https://res.wx.qq.com/a.png",
        "/s/x.png",
        "https://u@mmbiz.qpic.cn/a",
    ):
        assert admitted_url(refused, page, prefixes)[0] is None, refused


def test_image_settings_are_checked_when_the_config_is_read() -> None:
    from hostd_wechat.models import Settings
    from pydantic import ValidationError

    assert Settings().image_url_prefixes == ["https://mmbiz.qpic.cn/", "https://mmbiz.qlogo.cn/"]
    for bad in ({"image_url_prefixes": ["ftp://mmbiz.qpic.cn/"]}, {"max_images_per_article": 0}):
        with pytest.raises(ValidationError):
            Settings(**bad)


def _hostile_sources(rng: random.Random, cdn: CdnServer) -> list[str]:
    alphabet = "abc/.%?#&=:@ \\\t()[]<>\"'\u2028\u00e9漢😀"
    pieces = [
        lambda: cdn.url("/mmbiz_png/" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))),
        lambda: cdn.url("/bad/" + rng.choice(["html", "svg", "loop", "missing", "named"])),
        lambda: rng.choice(["javascript:alert(1)", "data:image/png;base64,AAAA", "//", "?", "#x", "..", "/"]),
        lambda: (
            rng.choice(["http", "https", "ftp", "file", "gopher"])
            + "://"
            + rng.choice(["127.0.0.1", "[::1]", "x"])
        ),
        lambda: cdn.url("/" + "a" * rng.randint(200, 600)),
        lambda: cdn.base + "\x00" + "/a.png",
    ]
    return [rng.choice(pieces)() for _ in range(rng.randint(1, 12))]


async def test_fuzz_with_image_settings_never_answers_internal(
    hostd_data_dir: Path, hostd_roots: Path, article_server: ArticleServer, cdn_server: CdnServer
) -> None:
    """The schema fuzz over the changed tool, then random hostile image links with images: local."""
    rng = random.Random(16)
    async with wechat_client(
        hostd_data_dir, hostd_roots, settings=image_settings(article_server, cdn_server, max_retries=0)
    ) as client:
        report = await fuzz_tools(client, seed=16, rounds=12, skip=frozenset({"summarize_articles"}))
        assert report.calls > 0, report.failures
        assert not report.failures, report.failures
        for round_number in range(6):
            url = _gallery(article_server, *_hostile_sources(rng, cdn_server), title=f"Fuzz {round_number}")
            envelope = await call(client, "read_wechat_articles", urls=[url], images="local")
            assert envelope["status"] == "success", envelope
            item = envelope["items"][0]
            assert item["status"] == "ok", item
            assert item["images"]["saved"] + item["images"]["remote"] == item["images"]["found"]
            assert {p["reason"] for p in item["images"]["problems"]} <= KNOWN_REASONS
        assert (await client.list_tools()).tools  # still serving
    stored = [p for p in hostd_roots.rglob("*") if p.is_file() and p.suffix != ".md"]
    assert all(CONTENT_NAME.match(p.name) and p.parent.name.endswith(".assets") for p in stored)


def test_a_served_process_exits_promptly_when_stdin_closes_during_image_downloads(
    tmp_path: Path, hostd_roots: Path, article_server: ArticleServer, cdn_server: CdnServer
) -> None:
    config = write_config(
        tmp_path,
        ["wechat"],
        config={
            "language": "en",
            "allowed_roots": [str(hostd_roots)],
            # Requests read before end of input get this long to be answered (issue 33), then the
            # server stops: the downloads still running past it are abandoned, not waited for.
            "profiles": {"default": {"plugins": ["wechat"], "transport": {"shutdown_grace_seconds": 2}}},
        },
        settings=image_settings(article_server, cdn_server),
    )
    arguments = {
        "urls": [_gallery(article_server, cdn_server.url("/bad/trickle"))],
        "images": "local",
        "timeout_ms": 60_000,
    }
    with raw_stdio_server(config, cwd=hostd_roots, capture_stdout=False, capture_stderr=False) as server:
        server.send(*handshake("c"), tools_call(2, "read_wechat_articles", arguments))
        # A guard, not a speed check: a loaded machine took over 20 s to get this far.
        assert cdn_server.trickle_started.wait(90)
        assert server.process.poll() is None
        server.close_stdin()
        # The trickled image takes 20 s and then never completes (60 s limit): exiting within
        # 15 s means the download was abandoned, not waited for. The exit latency is benchmarked.
        server.process.wait(timeout=15)
    assert cdn_server.hang_up_seen.wait(5)
