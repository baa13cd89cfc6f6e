"""The dashboard's memory pages at 100,000 memories, on SQLite and PostgreSQL (section ``dashboard``).

An in-process host serving memory alone is seeded through ``import_memories`` with the corpus of
bench_memory (bench/memory_eval, tags and times), then its dashboard is served on a free
127.0.0.1 port, signed in with the one-time link. Measured:

- server time of each list page (the listing, tag, author and status filters, page 5 through
  the cursors, the overview) and of the memory search page, from the ``Server-Timing`` header the
  dashboard sends (the time until its answer starts), over repeated requests: p50 and p95;
- page weight: every byte a page loads (HTML, CSS, scripts) on a cold load in Chromium, from
  the Performance API's transfer sizes;
- first contentful paint in headless Chromium (Debian's, through Playwright), cold cache, median
  of several loads.

Targets (issue 22): list pages p50 < 50 ms and p95 < 150 ms; search page p50 < 30 ms; a page
without diagrams < 300 KB; first contentful paint < 500 ms.

    .venv/bin/python bench/bench_dashboard.py [--total 100000] [--backends sqlite,postgres] [--reuse-seed]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
from bench_memory import CONTEXT, IMPORT_BATCH, tagged_import_document, with_tags_and_times
from benchlib import WORK, median, p95, restore_seed, save_seed, saved_seed_seconds, table, write_section
from memory_eval.generate import build_corpus

DATABASE_ENV = "HOSTD_BENCH_DASHBOARD_DATABASE_URL"
SCRATCH = WORK / "dashboard"
REPEATS = 40
SEARCHES = ["部署", "回滚 配置", "数据库", "cache", "queue timeout", "认证服务 日志", "监控", "payment retry"]
FCP_LOADS = 9


def host_for(directory: Path, backend: str) -> Any:
    from hostd.core.config import config_from_mapping
    from hostd.core.host import Host

    storage = {"storage": {"url_env": DATABASE_ENV}} if backend == "postgres" else {}
    raw = {"language": "en", "profiles": {"default": {"plugins": ["memory"]}}, **storage}
    host = Host(config_from_mapping(raw, "default", data_dir=directory / "data"))
    if storage:
        host.prepare_team_databases(migrate=True)
    return host


def seed(host: Any, total: int) -> float:
    corpus = with_tags_and_times(build_corpus(total, seed=202, context_sentences=CONTEXT))

    async def run() -> None:
        for start in range(0, len(corpus), IMPORT_BATCH):
            document = tagged_import_document(corpus[start : start + IMPORT_BATCH])
            envelope, is_error = await host.call("import_memories", {"data": document})
            assert not is_error, envelope["error"]

    started = time.perf_counter()
    anyio.run(run)
    return time.perf_counter() - started


def server_ms(answer: Any) -> float:
    timing = answer.headers["server-timing"]
    return float(timing.split("dur=")[1])


def page_times(client: Any, url: str, repeats: int = REPEATS) -> list[float]:
    times = []
    for _ in range(repeats):
        answer = client.get(url)
        assert answer.status_code == 200, (url, answer.status_code, answer.text[:300])
        times.append(server_ms(answer))
    return times


def next_link(page: str) -> str | None:
    import re

    found = re.search(r'<a href="([^"]+)" rel="next">', page)
    return found.group(1).replace("&amp;", "&") if found else None


def stats_cold(host: Any, repeats: int = 5) -> list[float]:
    """get_memory_stats alone (the overview reads it on every visit), in-process."""

    async def run() -> list[float]:
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            envelope, is_error = await host.call("get_memory_stats", {})
            assert not is_error, envelope
            times.append((time.perf_counter() - started) * 1000)
        return times

    with ThreadPoolExecutor(max_workers=1) as pool:  # not inside the served app's loop
        return pool.submit(anyio.run, run).result()


def first_memory_link(page: str) -> str:
    import re

    found = re.search(r'<a class="uri" href="([^"]+)"', page)
    assert found, "the listing shows no memory"
    return found.group(1).replace("&amp;", "&")


def list_pages(client: Any, member: str) -> dict[str, str]:
    """The list pages measured, by name: their URLs (page 5 found by following the cursors)."""
    pages = {
        "listing, page 1": "/ui/memory",
        "tag filter": "/ui/memory?tags=payment-service",
        "author filter": f"/ui/memory?author={member}",
        "status filter": "/ui/memory?status=active",
        "changed-after filter": "/ui/memory?updated_after=2025-06-01",
    }
    url: str | None = "/ui/memory"
    for _ in range(4):
        assert url is not None
        url = next_link(client.get(url).text)
    assert url is not None
    pages["listing, page 5"] = url
    pages["overview"] = "/ui/"
    return pages


def browser_measures(origin: str, link: str, urls: dict[str, str]) -> dict[str, tuple[float, int]]:
    """First contentful paint (median of cold loads) and the bytes each page loads, in Chromium."""
    from hostd_testing.browser import DESKTOP, chromium

    measured: dict[str, tuple[float, int]] = {}
    with contextlib.ExitStack() as stack:
        stack.enter_context(_no_pytest_skip())
        browser = stack.enter_context(chromium())
        signing = browser.new_context(viewport=DESKTOP)
        signing.new_page().goto(origin + link)
        state = signing.storage_state()
        signing.close()
        for name, url in urls.items():
            paints, weight = [], 0
            target = url if url.startswith("http") else origin + url
            for _ in range(FCP_LOADS):
                context = browser.new_context(viewport=DESKTOP, storage_state=state)  # a cold cache each time
                page = context.new_page()
                page.goto(target, wait_until="load")
                paint = page.evaluate(
                    """() => new Promise(done => {
                        const seen = performance.getEntriesByName('first-contentful-paint');
                        if (seen.length) return done(seen[0].startTime);
                        new PerformanceObserver(list => done(list.getEntries()[0].startTime))
                            .observe({type: 'paint', buffered: true});
                    })"""
                )
                weight = page.evaluate(
                    """() => performance.getEntriesByType('navigation')
                        .concat(performance.getEntriesByType('resource'))
                        .reduce((sum, e) => sum + (e.transferSize || e.encodedBodySize || 0), 0)"""
                )
                paints.append(float(paint))
                context.close()
            measured[name] = (median(paints), int(weight))
    return measured


@contextlib.contextmanager
def _no_pytest_skip() -> Iterator[None]:
    """hostd_testing.browser skips a test when Chromium is missing; here that is an error."""
    os.environ.setdefault("HOSTD_REQUIRE_BROWSER", "1")
    yield


def open_seeded(
    directory: Path,
    key: str,
    backend: str,
    database_url: str | None,
    reuse_seed: bool,
    open_host: Any,
    seed_host: Any,
) -> tuple[Any, dict[str, Any]]:
    """A started host on a fresh ``directory`` holding the seed ``key``: restored when
    ``reuse_seed`` finds it saved, else made by ``seed_host(host)`` (and saved with ``reuse_seed``).
    Also the run's first facts: how long the seed took and whether it was restored."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    saved = saved_seed_seconds(key) if reuse_seed else None
    if saved is not None:
        restore_seed(key, directory / "data", database_url)
    host = open_host(directory, backend)
    host.startup()
    result: dict[str, Any] = {"backend": backend, "restored": saved is not None, "seeded_s": saved}
    if saved is None:
        try:
            result["seeded_s"] = seed_host(host)
        except BaseException:
            host.shutdown()
            raise
        if reuse_seed:
            save_seed(key, directory / "data", database_url, result["seeded_s"])
    return host, result


@contextlib.contextmanager
def signed_in(host: Any) -> Iterator[Any]:
    """An HTTP client signed in to ``host``'s local dashboard, served on 127.0.0.1."""
    import httpx2 as httpx
    from hostd.core.config import TransportConfig
    from hostd.protocol.guard import HttpPolicy
    from hostd.web.serve import local_app
    from hostd.web.signing import OneTimeToken
    from hostd_testing.browser import served

    one_time = OneTimeToken()
    app = local_app(host, one_time, HttpPolicy(TransportConfig(type="http")))
    with (
        served(app) as origin,
        httpx.Client(base_url=origin, follow_redirects=False, timeout=60) as client,
    ):
        assert client.get(f"/ui/signin?token={one_time.token}").status_code == 303
        yield client


def run_backend(
    backend: str, total: int, reuse_seed: bool = False, seed_only: bool = False
) -> dict[str, Any]:
    from hostd.core.config import TransportConfig
    from hostd.core.identity import local_member
    from hostd.protocol.guard import HttpPolicy
    from hostd.web.serve import local_app
    from hostd.web.signing import OneTimeToken
    from hostd_testing.browser import served

    key = f"dashboard-{backend}-{total}"
    database_url = os.environ[DATABASE_ENV] if backend == "postgres" else None
    host, result = open_seeded(
        SCRATCH / backend, key, backend, database_url, reuse_seed, host_for, lambda made: seed(made, total)
    )
    try:
        if seed_only:
            return result
        with signed_in(host) as client:
            pages = list_pages(client, local_member())
            result["lists"] = {name: page_times(client, url) for name, url in pages.items()}
            searches = [f"/ui/memory?{urllib.parse.urlencode({'q': q})}" for q in SEARCHES]
            result["search"] = [t for url in searches for t in page_times(client, url, REPEATS // 4)]
            memory_url = first_memory_link(client.get("/ui/memory").text)
            result["memory_page"] = page_times(client, memory_url)
            result["stats_cold"] = stats_cold(host)
            browser_pages = {
                "listing": "/ui/memory",
                "search": searches[0],
                "memory": memory_url,
                "overview": "/ui/",
            }
            second = OneTimeToken()
        app2 = local_app(host, second, HttpPolicy(TransportConfig(type="http")))
        with served(app2) as origin, served(bare_page()) as bare:
            browser_pages["baseline: bare HTML page"] = f"{bare}/"
            with ThreadPoolExecutor(max_workers=1) as pool:  # Playwright's loop stays off anyio's
                result["browser"] = pool.submit(
                    browser_measures, origin, f"/ui/signin?token={second.token}", browser_pages
                ).result()
    finally:
        host.shutdown()
    return result


def bare_page() -> Any:
    """The baseline for first contentful paint: one heading, no stylesheet, no script."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    async def page(request: Any) -> HTMLResponse:
        return HTMLResponse(
            "<!doctype html><html><head><title>b</title></head><body><h1>baseline</h1></body></html>"
        )

    return Starlette(routes=[Route("/", page)])


def ms(value: float) -> str:
    return f"{value:.1f} ms"


def write(runs: list[dict[str, Any]], total: int) -> None:
    verdict = {True: "met", False: "**missed**"}
    rows = []
    for run in runs:
        for name, times in run["lists"].items():
            rows.append(
                [
                    run["backend"],
                    name,
                    ms(median(times)),
                    ms(p95(times)),
                    f"{verdict[median(times) < 50]} / {verdict[p95(times) < 150]}",
                ]
            )
        rows.append(
            [
                run["backend"],
                "memory search (8 queries)",
                ms(median(run["search"])),
                ms(p95(run["search"])),
                f"p50 < 30 ms: {verdict[median(run['search']) < 30]}",
            ]
        )
        cold = run["stats_cold"]
        rows.append(
            [
                run["backend"],
                "get_memory_stats alone (in-process)",
                ms(median(cold)),
                ms(p95(cold)),
                f"{verdict[median(cold) < 50]} / {verdict[p95(cold) < 150]}",
            ]
        )
        rows.append(
            [
                run["backend"],
                "a memory's page",
                ms(median(run["memory_page"])),
                ms(p95(run["memory_page"])),
                "",
            ]
        )
    browser_rows = []
    for run in runs:
        for name, (paint, weight) in run["browser"].items():
            browser_rows.append(
                [
                    run["backend"],
                    name,
                    ms(paint),
                    f"{weight / 1024:.0f} KB",
                    f"{verdict[paint < 500]} / {verdict[weight < 300 * 1024]}",
                ]
            )
    seeding = ", ".join(
        f"{run['backend']} {run['seeded_s']:.0f} s" + (" (a saved seed, restored)" if run["restored"] else "")
        for run in runs
    )
    body = "\n\n".join(
        [
            f"An in-process host serving memory alone, N = {total:,} memories (bench/memory_eval corpus "
            f"with tags and times, seeded through import_memories: {seeding}), its dashboard served by "
            "uvicorn on "
            "127.0.0.1 and signed in with the one-time link. Server time is the dashboard's `Server-Timing` "
            f"(until the answer starts: the tools' calls and the template), {REPEATS} requests per list page "
            f"and the memory page, {REPEATS // 4} per search query. Targets: list pages p50 < 50 ms and "
            "p95 < 150 ms; search page p50 < 30 ms.",
            table(["backend", "page", "p50", "p95", "target (p50 / p95)"], rows),
            f"In headless Chromium (Debian's, Playwright), cold cache, median of {FCP_LOADS} loads: first "
            "contentful paint (Performance API) and the bytes the page loaded (HTML with its inline CSS, "
            "htmx; no page here "
            "draws a diagram, so Mermaid is not loaded). The baseline row is a bare HTML page (one heading, "
            "no CSS, no script) from another server in the same run: what this headless Chromium needs to "
            "paint anything. Targets: FCP < 500 ms, < 300 KB. The overview's counts come from "
            "get_memory_stats on every visit, which reads the counts the store keeps (memory_counts).",
            table(
                ["backend", "page", "first contentful paint", "page weight", "target (FCP / weight)"],
                browser_rows,
            ),
        ]
    )
    write_section(
        "dashboard", f"dashboard: memory pages at {total:,} memories", body, packages=("hostd-memory",)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, default=100_000)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument(
        "--reuse-seed",
        action="store_true",
        help="restore the seed an earlier run of these sizes kept (bench/.work/seeds), else seed and keep it",
    )
    parser.add_argument(
        "--seed-only", action="store_true", help="with --reuse-seed: save the seed, measure nothing"
    )
    args = parser.parse_args()
    runs = []
    for backend in args.backends.split(","):
        if backend == "postgres":
            from hostd_testing.postgres import running_postgres

            with running_postgres() as server:
                os.environ[DATABASE_ENV] = server.create_database("dashboard")
                runs.append(run_backend(backend, args.total, args.reuse_seed, args.seed_only))
        else:
            runs.append(run_backend(backend, args.total, args.reuse_seed, args.seed_only))
    if args.seed_only:
        return
    write(runs, args.total)


if __name__ == "__main__":
    main()
