"""Benchmarks of the wechat plugin, written into bench/RESULTS.md (section ``wechat``).

1. Network concurrency: 30 generated articles (~20 KB) from a local HTTP server that delays
   every answer by 300 ms, read with ``concurrency=5`` through an in-memory MCP client. The
   ideal is 30 x 0.3 s / 5 = 1.8 s; the target is a wall time of at most 1.3x that.
2. Parse and convert: the 2024-2026 saved pages (2-4 MB each) through ``parse_article`` and
   the Markdown writer, single-threaded: at least 4 pages per second.
3. ``summarize_articles`` over 1,000 generated Markdown articles of ~5 KB, in a child process
   so its peak RSS is its own: under 10 s and under 300 MB.
4. ``images: local``: one article with 50 images, ``concurrency=5``, from a loopback image
   server that delays every answer by 100 ms (the tests' stand-in CDN). The ideal is
   50 x 0.1 s / 5 = 1.0 s; the target is a wall time of at most 1.3x that. Written to its own
   section (``wechat-images``).

Run: ``.venv/bin/python bench/bench_wechat.py`` (a few minutes at most); ``--only images``
runs only the image case and rewrites only its section.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from benchlib import WORK, load_module, median, table, write_section

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
ARTICLES = 30
DELAY_S = 0.3
CONCURRENCY = 5
IDEAL_S = ARTICLES * DELAY_S / CONCURRENCY


def _article_page(number: int) -> bytes:
    paragraphs = "".join(
        f"<p>第{number}篇第{i}段：本地服务器上的测试文章，用来衡量并发抓取。Paragraph {i} of the bench.</p>"
        for i in range(170)
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<meta property='og:title' content='Bench {number}'></head><body>"
        f"<h1 id='activity-name'>Bench {number}</h1><a id='js_name'>Bench Account</a>"
        f"<div id='js_content'>{paragraphs}</div><script>var ct = \"1730080366\";</script></body></html>"
    ).encode()


def _serve() -> tuple[ThreadingHTTPServer, int]:
    pages = {n: _article_page(n) for n in range(ARTICLES)}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def do_GET(self) -> None:
            time.sleep(DELAY_S)
            body = pages[int(self.path.rsplit("/", 1)[-1])]
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


async def _network_round(root: Path, port: int) -> float:
    from hostd_testing import envelope_of, in_memory_client

    folder = root / f"run-{time.monotonic_ns()}"
    folder.mkdir()
    data = folder / "data"
    data.mkdir()
    settings = {"wechat": {"allowed_url_prefixes": [f"http://127.0.0.1:{port}/s"]}}
    urls = [f"http://127.0.0.1:{port}/s/{n}" for n in range(ARTICLES)]
    async with in_memory_client(
        ["wechat"], data_dir=data, settings=settings, config={"allowed_roots": [str(folder)]}, cwd=folder
    ) as client:
        started = time.perf_counter()
        result = await client.call_tool("read_wechat_articles", {"urls": urls, "concurrency": CONCURRENCY})
        elapsed = time.perf_counter() - started
    envelope = envelope_of(result)
    assert envelope["summary"]["succeeded"] == ARTICLES, envelope["summary"]
    return elapsed


def bench_network() -> tuple[list[float], int]:
    server, port = _serve()
    page_bytes = len(_article_page(0))
    root = Path(tempfile.mkdtemp(prefix="wechat-bench-"))
    try:
        asyncio.run(_network_round(root, port))  # warm-up: imports, first parser use
        times = [asyncio.run(_network_round(root, port)) for _ in range(5)]
    finally:
        server.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    return times, page_bytes


def bench_parse() -> tuple[int, float, float]:
    from hostd_wechat.markdown import article_markdown
    from hostd_wechat.parse import parse_article

    pages = sorted(
        page
        for folder in ("wechat", "wechat-unlabeled")
        for page in (FIXTURES / folder).glob("*.html")
        if any(year in page.name for year in ("2024", "2025", "2026"))
    )
    raws = [page.read_bytes() for page in pages]

    def one_pass() -> float:
        started = time.perf_counter()
        for raw in raws:
            article = parse_article(raw, url="https://mp.weixin.qq.com/s/bench")
            article_markdown(article, source_url="https://mp.weixin.qq.com/s/bench", retrieved_at="now")
        return time.perf_counter() - started

    one_pass()  # warm-up
    runs = [one_pass() for _ in range(3)]
    megabytes = sum(len(r) for r in raws) / 1e6
    return len(raws), median(runs), megabytes


_SENTENCES_EN = [
    "Battery storage smooths solar output in the evening.",
    "Regulators published a new draft on grid access.",
    "The company reported higher revenue but thinner margins.",
    "Engineers rewrote the scheduler to cut tail latency.",
    "Analysts expect demand to recover next quarter.",
    "The team migrated its database without downtime.",
]
_SENTENCES_ZH = [
    "新能源车的价格战仍在继续，供应链承压。",
    "研究人员公布了新的量子纠错实验结果。",
    "这家公司调整了组织架构，以提升决策效率。",
    "城市更新项目进入第二阶段，居民反响积极。",
    "开源社区发布了新版本，修复了多个安全问题。",
    "市场预计下季度需求将逐步回暖。",
]


def _generate_markdown(folder: Path, count: int) -> int:
    rng = random.Random(42)
    total = 0
    for number in range(count):
        chinese = number % 2 == 0
        pool = _SENTENCES_ZH if chinese else _SENTENCES_EN
        sections = []
        for section in range(4):
            body = ("" if chinese else " ").join(rng.choice(pool) for _ in range(14 if chinese else 10))
            sections.append(f"## Section {section}\n\n{body}\n\n{body[::-1] if chinese else body}\n")
        text = (
            f"---\ntitle: Article {number}\naccount_name: Account {number % 17}\nauthor: A\n"
            f"publish_time: '2025-01-{number % 28 + 1:02d}T08:00:00+08:00'\n"
            f"source_url: https://mp.weixin.qq.com/s/gen{number}\nword_count: 1000\nimages: 0\n---\n\n"
            f"# Article {number}\n\n" + "\n".join(sections)
        )
        path = folder / f"article_{number:04d}.md"
        path.write_text(text, encoding="utf-8")
        total += len(text.encode())
    return total


_CHILD = r"""
import asyncio, json, sys, time
from pathlib import Path
from hostd_testing import envelope_of, in_memory_client

root = Path(sys.argv[1])

async def main():
    data = root / "data"
    data.mkdir(exist_ok=True)
    config = {"allowed_roots": [str(root)]}
    arguments = {"input_dir": "articles", "output_path": "digest.md"}
    async with in_memory_client(["wechat"], data_dir=data, config=config, cwd=root) as client:
        started = time.perf_counter()
        result = await client.call_tool("summarize_articles", arguments)
        elapsed = time.perf_counter() - started
    envelope = envelope_of(result)
    # VmHWM, not ru_maxrss: Linux keeps the forked parent's peak in ru_maxrss across exec.
    status = Path("/proc/self/status").read_text()
    rss_mb = int(next(l for l in status.splitlines() if l.startswith("VmHWM:")).split()[1]) / 1024
    print(json.dumps({"elapsed": elapsed, "rss_mb": rss_mb, "count": envelope.get("article_count"),
                      "bytes": envelope.get("bytes_written"), "status": envelope["status"]}))

asyncio.run(main())
"""


def bench_summarize() -> dict[str, float]:
    root = WORK / "wechat-summarize"
    shutil.rmtree(root, ignore_errors=True)
    (root / "articles").mkdir(parents=True)
    input_bytes = _generate_markdown(root / "articles", 1000)
    runs = []
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(root)], capture_output=True, text=True, check=True
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert all(r["status"] == "success" and r["count"] == 1000 for r in runs), runs
    shutil.rmtree(root, ignore_errors=True)
    return {
        "elapsed": median([r["elapsed"] for r in runs]),
        "rss_mb": max(r["rss_mb"] for r in runs),
        "input_kb_per_article": input_bytes / 1000 / 1024,
        "digest_bytes": runs[0]["bytes"],
    }


IMAGES = 50
IMAGE_DELAY_S = 0.1
IMAGES_IDEAL_S = IMAGES * IMAGE_DELAY_S / CONCURRENCY


async def _images_round(root: Path, article_url: str, settings: dict) -> float:
    from hostd_testing import envelope_of, in_memory_client

    folder = root / f"run-{time.monotonic_ns()}"
    (folder / "data").mkdir(parents=True)
    async with in_memory_client(
        ["wechat"],
        data_dir=folder / "data",
        settings=settings,
        config={"allowed_roots": [str(folder)]},
        cwd=folder,
    ) as client:
        started = time.perf_counter()
        result = await client.call_tool(
            "read_wechat_articles", {"urls": [article_url], "images": "local", "concurrency": CONCURRENCY}
        )
        elapsed = time.perf_counter() - started
    item = envelope_of(result)["items"][0]
    assert item["status"] == "ok", item
    assert item["images"]["saved"] == IMAGES, item
    return elapsed


def bench_images() -> list[float]:
    # The wechat tests' loopback servers (article pages and the stand-in CDN), loaded from their file.
    testlib = load_module(
        Path(__file__).resolve().parents[1] / "plugins" / "wechat" / "tests" / "wechat_testlib.py"
    )
    ArticleServer, CdnServer, image_settings = (
        testlib.ArticleServer,
        testlib.CdnServer,
        testlib.image_settings,
    )

    root = Path(tempfile.mkdtemp(prefix="wechat-images-bench-"))
    try:
        with ArticleServer() as pages, CdnServer(delay_s=IMAGE_DELAY_S) as cdn:
            settings = image_settings(pages, cdn)
            times = []
            article = pages.url(f"/s/gallery?title=Images&count={IMAGES}")
            for _run in range(6):  # the first is a warm-up; each run writes into a new folder
                times.append(asyncio.run(_images_round(root, article, settings)))
                assert cdn.max_in_flight <= CONCURRENCY
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return times[1:]


def write_images_section(times: list[float]) -> None:
    wall = median(times)
    ratio = wall / IMAGES_IDEAL_S
    row = [
        f"read 1 article with {IMAGES} images (+{int(IMAGE_DELAY_S * 1000)} ms each), images: local, "
        f"concurrency {CONCURRENCY}",
        f"{wall:.2f} s (min {min(times):.2f}, max {max(times):.2f}, {len(times)} runs)",
        f"{ratio:.2f}x of ideal {IMAGES_IDEAL_S:.1f} s",
        "<= 1.3x",
        "met" if ratio <= 1.3 else "NOT met",
    ]
    body = (
        "Two threaded `http.server`s on 127.0.0.1: the article page (no delay) and the stand-in image CDN "
        f"(every answer delayed {int(IMAGE_DELAY_S * 1000)} ms, tiny PNGs), in-memory MCP client. The whole "
        "call is timed: page fetch and parse, every image fetched, checked, hashed and written atomically "
        f"(fsync) into the article's `.assets` folder, the Markdown written. Ideal: {IMAGES} x "
        f"{IMAGE_DELAY_S} s / {CONCURRENCY}.\n\n" + table(["case", "measured", "ratio", "target", ""], [row])
    )
    write_section(
        "wechat-images",
        "wechat: images stored beside the articles",
        body,
        packages=("hostd-wechat", "beautifulsoup4", "lxml", "markdownify"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--only", choices=["images"], help="run only this case (it rewrites only its own section)"
    )
    if parser.parse_args().only == "images":
        write_images_section(bench_images())
        return
    write_images_section(bench_images())
    network, page_bytes = bench_network()
    pages, parse_s, megabytes = bench_parse()
    summary = bench_summarize()
    wall = median(network)
    ratio = wall / IDEAL_S
    pages_per_s = pages / parse_s
    rows = [
        [
            f"read {ARTICLES} articles (~{page_bytes // 1024} KB, +{int(DELAY_S * 1000)} ms each), "
            f"concurrency {CONCURRENCY}",
            f"{wall:.2f} s (min {min(network):.2f}, max {max(network):.2f}, 5 runs)",
            f"{ratio:.2f}x of ideal {IDEAL_S:.1f} s",
            "<= 1.3x",
            "met" if ratio <= 1.3 else "NOT met",
        ],
        [
            f"parse + convert {pages} saved 2024-2026 pages ({megabytes:.1f} MB), one thread",
            f"{parse_s:.2f} s per pass (median of 3)",
            f"{pages_per_s:.1f} pages/s",
            ">= 4 pages/s",
            "met" if pages_per_s >= 4 else "NOT met",
        ],
        [
            f"summarize_articles over 1,000 articles (~{summary['input_kb_per_article']:.1f} KB each), "
            "extractive",
            f"{summary['elapsed']:.2f} s (median of 3), digest {summary['digest_bytes'] // 1024} KB",
            f"peak RSS {summary['rss_mb']:.0f} MB",
            "< 10 s, < 300 MB",
            "met" if summary["elapsed"] < 10 and summary["rss_mb"] < 300 else "NOT met",
        ],
    ]
    body = (
        "Local HTTP server on 127.0.0.1 (threaded `http.server`), in-memory MCP client; the ideal network "
        "time is the server's delay times the number of rounds (30 x 0.3 s / 5). Parse + convert is "
        "`parse_article` then the Markdown file text (front matter + markdownify). Peak RSS is the child "
        "process's whole maximum resident set (interpreter, host, SDK included).\n\n"
        + table(["case", "measured", "ratio / rate", "target", ""], rows)
    )
    write_section(
        "wechat",
        "wechat: concurrent fetching, parsing, summarizing",
        body,
        packages=("hostd-wechat", "beautifulsoup4", "lxml", "markdownify", "requests"),
    )


if __name__ == "__main__":
    main()
