"""How promptly the wechat plugin's limits act, written into bench/RESULTS.md (section ``wechat-limits``).

The unit tests prove each behaviour by what the loopback servers observe (the peak of requests
in flight, the client hanging up, no hung fetch finished first); how long it takes is measured
here, where a loaded machine gives a slow figure instead of a failed test. Each case runs 5 times
(after a warm-up) and reports the median against its baseline from the same run:

1. Image downloads: 24 images from the stand-in CDN, every answer +100 ms, ``concurrency=3``
   against ``concurrency=1``: at least a 2x speed-up (ideal 3x).
2. A page trickled a byte every 150 ms (in the body, then in the headers), ``timeout_ms=1000``,
   no retries: the TIMEOUT answer within 1.5x the limit (a per-read limit would take 20 s).
3. The same with ``timeout_ms=500`` and the default two retries: within 1.5x of 3 x 0.5 s.
4. An image trickled a byte every 50 ms, ``timeout_ms=800``: within 1.5x the limit.
5. Cancelling a call mid-trickle: the server sees the connection closed within 1 s (floor: the
   server noticing at its second write after the close: 100 ms).
6. ``ping`` of a neighbour plugin while 45 fetches hang (more than the host's 40 worker
   threads), against ``ping`` on an idle host: under 1 s.
7. ``hostd serve`` over stdio, stdin closed while 3 fetches hang and one trickles, against
   stdin closed on an idle server: the process gone within 3 s.

Run: ``.venv/bin/python bench/bench_wechat_limits.py`` (about two minutes).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from benchlib import load_module, table, write_section

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUNS = 5


TESTS = ROOT / "plugins" / "wechat" / "tests"
#: The wechat tests' loopback servers (article pages and the stand-in image CDN), from their file.
LIB = load_module(TESTS / "wechat_testlib.py")


def runs(measure: Callable[[], float]) -> list[float]:
    measure()  # warm-up: imports, first connections
    return [measure() for _ in range(RUNS)]


async def _call(folder: Path, settings: dict[str, Any], arguments: dict[str, Any]) -> tuple[float, Any]:
    """One read_wechat_articles call through an in-memory client: (seconds, envelope)."""
    from hostd_testing import envelope_of, in_memory_client

    run = folder / f"run-{time.monotonic_ns()}"
    (run / "data").mkdir(parents=True)
    async with in_memory_client(
        ["wechat"], data_dir=run / "data", settings=settings, config={"allowed_roots": [str(run)]}, cwd=run
    ) as client:
        started = time.perf_counter()
        result = await client.call_tool("read_wechat_articles", arguments)
        return time.perf_counter() - started, envelope_of(result)


def image_concurrency(folder: Path) -> tuple[list[float], list[float]]:
    with LIB.ArticleServer() as pages, LIB.CdnServer(delay_s=0.1) as cdn:
        settings = LIB.image_settings(pages, cdn)
        gallery = pages.url("/s/gallery?title=Images&count=24")

        def timed(concurrency: int) -> float:
            arguments = {"urls": [gallery], "images": "local", "concurrency": concurrency}
            elapsed, envelope = asyncio.run(_call(folder, settings, arguments))
            assert envelope["items"][0]["images"]["saved"] == 24, envelope
            return elapsed

        return runs(lambda: timed(1)), runs(lambda: timed(3))


def trickled_page(folder: Path, where: str, timeout_ms: int, retries: int) -> list[float]:
    with LIB.ArticleServer() as pages:
        settings = LIB.plugin_settings(pages, max_retries=retries)
        url = pages.url("/s/trickle?every_ms=150" + ("&headers=1" if where == "headers" else ""))

        def timed() -> float:
            elapsed, envelope = asyncio.run(
                _call(folder, settings, {"urls": [url], "timeout_ms": timeout_ms})
            )
            assert envelope["items"][0]["error_code"] == "TIMEOUT", envelope
            return elapsed

        return runs(timed)


def trickled_image(folder: Path) -> list[float]:
    with LIB.ArticleServer() as pages, LIB.CdnServer() as cdn:
        settings = LIB.image_settings(pages, cdn, max_retries=0)
        gallery = pages.url("/s/gallery?src=" + cdn.url("/bad/trickle"))

        def timed() -> float:
            arguments = {"urls": [gallery], "images": "local", "timeout_ms": 800}
            elapsed, envelope = asyncio.run(_call(folder, settings, arguments))
            assert envelope["items"][0]["images"]["problems"][0]["reason"] == "timeout", envelope
            return elapsed

        return runs(timed)


def cancel_to_hang_up(folder: Path) -> list[float]:
    from hostd_testing import in_memory_client

    async def once() -> float:
        with LIB.ArticleServer() as pages:
            run = folder / f"run-{time.monotonic_ns()}"
            (run / "data").mkdir(parents=True)
            url = pages.url("/s/trickle?every_ms=50")
            async with in_memory_client(
                ["wechat"],
                data_dir=run / "data",
                settings=LIB.plugin_settings(pages),
                config={"allowed_roots": [str(run)]},
                cwd=run,
            ) as client:
                call = asyncio.ensure_future(
                    client.call_tool("read_wechat_articles", {"urls": [url], "timeout_ms": 60_000})
                )
                assert await asyncio.to_thread(pages.trickle_started.wait, 10)
                cancelled = time.perf_counter()
                call.cancel()
                assert await asyncio.to_thread(pages.hang_up_seen.wait, 10)
                elapsed = time.perf_counter() - cancelled
                await asyncio.gather(call, return_exceptions=True)
                return elapsed

    return runs(lambda: asyncio.run(once()))


def ping_beside_hung_fetches(folder: Path) -> tuple[list[float], list[float]]:
    import anyio
    from hostd_testing import envelope_of, in_memory_client

    neighbour_plugin = load_module(TESTS / "neighbour_plugin.py")  # a plugin with a sync `ping` tool

    async def once(hung: int) -> float:
        with LIB.ArticleServer() as pages:
            run = folder / f"run-{time.monotonic_ns()}"
            (run / "data").mkdir(parents=True)
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    in_memory_client(
                        ["wechat", "neighbour"],
                        data_dir=run / "data",
                        config={"language": "en", "allowed_roots": [str(run)]},
                        settings=LIB.plugin_settings(pages),
                        extra_plugins={"neighbour": neighbour_plugin},
                        cwd=run,
                    )
                )
                group = await stack.enter_async_context(anyio.create_task_group())
                url = pages.url("/s/hang?seconds=60")
                for _ in range(hung):
                    group.start_soon(
                        client.call_tool, "read_wechat_articles", {"urls": [url], "timeout_ms": 60_000}
                    )
                while pages.count("/s/hang") < min(hung, 20):
                    await anyio.sleep(0.02)
                started = time.perf_counter()
                pong = envelope_of(await client.call_tool("ping", {}))
                elapsed = time.perf_counter() - started
                assert pong["pong"] is True
                group.cancel_scope.cancel()
                return elapsed

    return runs(lambda: asyncio.run(once(0))), runs(lambda: asyncio.run(once(45)))


def exit_on_stdin_close(folder: Path) -> tuple[list[float], list[float]]:
    from hostd_testing import write_config
    from hostd_testing.raw_stdio import handshake, raw_stdio_server, tools_call

    def once(busy: bool) -> float:
        with LIB.ArticleServer() as pages:
            run = folder / f"run-{time.monotonic_ns()}"
            run.mkdir()
            config = write_config(
                run,
                ["wechat"],
                config={"language": "en", "allowed_roots": [str(run)]},
                settings=LIB.plugin_settings(pages),
            )
            urls = [pages.url(f"/s/hang?seconds=60&n={n}") for n in range(3)]
            urls.append(pages.url("/s/trickle?every_ms=100"))
            messages = [*handshake("bench")]
            if busy:
                messages.append(
                    tools_call(
                        2, "read_wechat_articles", {"urls": urls, "timeout_ms": 60_000, "concurrency": 4}
                    )
                )
            with raw_stdio_server(config, cwd=run, capture_stdout=True, capture_stderr=False) as server:
                server.send(*messages)
                server.read_until({1})  # the handshake answered: the server is up in both cases
                if busy:
                    server.wait_until(
                        lambda: pages.count("/s/hang") >= 3 and pages.trickle_started.is_set(),
                        timeout=30,
                        message="before the fetches hung",
                    )
                server.close_stdin()
                closed = time.perf_counter()
                server.process.wait(timeout=60)
                return time.perf_counter() - closed

    return runs(lambda: once(False)), runs(lambda: once(True))


def spread(values: list[float], unit: float = 1.0, fmt: str = ".2f", suffix: str = " s") -> str:
    middle = statistics.median(values) * unit
    return f"{middle:{fmt}}{suffix} (min {min(values) * unit:{fmt}}, max {max(values) * unit:{fmt}})"


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="wechat-limits-bench-"))
    rows: list[list[object]] = []
    load_before = os.getloadavg()[0]

    def row(case: str, measured: str, ratio: str, target: str, met: bool) -> None:
        rows.append([case, measured, ratio, target, "met" if met else "NOT met"])
        print(rows[-1], file=sys.stderr)

    try:
        serial, three = image_concurrency(folder)
        speedup = statistics.median(serial) / statistics.median(three)
        row(
            "24 images (+100 ms each), concurrency 3 vs 1",
            f"{spread(three)} vs {spread(serial)}",
            f"{speedup:.2f}x faster (ideal 3x)",
            ">= 2x",
            speedup >= 2,
        )
        for where in ("body", "headers"):
            times = trickled_page(folder, where, 1000, 0)
            ratio = statistics.median(times) / 1.0
            row(
                f"page trickled in the {where} (a byte per 150 ms), timeout_ms 1000, no retries",
                spread(times),
                f"{ratio:.2f}x the limit",
                "<= 1.5x",
                ratio <= 1.5,
            )
        times = trickled_page(folder, "body", 500, 2)
        ratio = statistics.median(times) / 1.5
        row(
            "page trickled in the body, timeout_ms 500, 2 retries (3 attempts)",
            spread(times),
            f"{ratio:.2f}x of 3 x 0.5 s",
            "<= 1.5x",
            ratio <= 1.5,
        )
        times = trickled_image(folder)
        ratio = statistics.median(times) / 0.8
        row(
            "image trickled (a byte per 50 ms), timeout_ms 800",
            spread(times),
            f"{ratio:.2f}x the limit",
            "<= 1.5x",
            ratio <= 1.5,
        )
        times = cancel_to_hang_up(folder)
        row(
            "cancel a call mid-trickle: until the server sees the connection closed",
            spread(times, 1000, ".0f", " ms"),
            "floor: the server notices at its second write after the close, 100 ms at a byte per 50 ms",
            "< 1 s",
            statistics.median(times) < 1,
        )
        idle, hung = ping_beside_hung_fetches(folder)
        row(
            "a neighbour's `ping` while 45 fetches hang vs on an idle host",
            f"{spread(hung, 1000, '.1f', ' ms')} vs {spread(idle, 1000, '.1f', ' ms')}",
            f"{statistics.median(hung) / statistics.median(idle):.1f}x the idle ping",
            "< 1 s",
            statistics.median(hung) < 1,
        )
        idle, busy = exit_on_stdin_close(folder)
        row(
            "`hostd serve` exit after stdin closes, 4 fetches hung vs idle",
            f"{spread(busy)} vs {spread(idle)}",
            f"{statistics.median(busy) / statistics.median(idle):.2f}x the idle exit",
            "< 3 s",
            statistics.median(busy) < 3,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    body = (
        "Threaded `http.server`s on 127.0.0.1 (the wechat tests' article server and stand-in image CDN), "
        "in-memory MCP client (the exit case: `hostd serve` over stdio). Medians of 5 runs after a warm-up, "
        "each against its baseline from the same run. The unit tests prove these limits act (peak in "
        "flight, hang-ups seen by the server, nothing hung finished first) without timing them. "
        f"Load average (1 min) {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
        f"{os.cpu_count()} CPUs.\n\n" + table(["case", "measured", "ratio", "target", ""], rows)
    )
    write_section(
        "wechat-limits", "wechat: how promptly the fetch limits act", body, packages=("hostd-wechat",)
    )


if __name__ == "__main__":
    main()
