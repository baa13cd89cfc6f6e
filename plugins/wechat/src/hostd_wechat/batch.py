"""One ``read_wechat_articles`` batch: fetch, classify, convert and write each article.

Each article is fetched, parsed and written in a thread of the plugin's own bounded pool
(``FetchPool``), at most twice ``concurrency`` per call and at most ``concurrency`` requests
in flight, so parsing never holds the network back. One progress notification goes out per
article. When the client cancels, or the server shuts down, every socket of the batch is shut
at once, so no fetch outlives its call. Files are written with ``atomic_write``, so a cancelled
call never leaves half a file. An article's own failure is an error item with a code, a reason
and a hint, never an exception.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hostd import Roots, Text, ToolContext
from hostd_wechat.fetch import FetchCanceller, FetchOptions, FetchResult, fetch_page
from hostd_wechat.images import ImageDownloader
from hostd_wechat.markdown import article_markdown
from hostd_wechat.models import ArticleItem, Settings
from hostd_wechat.naming import NameReservations, file_name
from hostd_wechat.parse import CHINA_TIME, ParsedArticle
from hostd_wechat.urls import check_url

PREVIEW_CHARS = 200
# Threads of the plugin's own pool, shared by every call: stuck pages can fill this pool, never the
# host's worker threads that the other plugins' tools need.
FETCH_POOL_THREADS = 24
Strategy = Literal["http", "headless"]


class FetchPool:
    """The plugin's bounded pool for fetching, parsing and writing articles (a plugin resource).

    ``close()`` (at server shut-down) cancels every batch still running, so a process whose
    client went away exits now instead of waiting for hung pages.
    """

    def __init__(self) -> None:
        import anyio

        self.limiter = anyio.CapacityLimiter(FETCH_POOL_THREADS)
        self._lock = threading.Lock()
        self._running: set[FetchCanceller] = set()

    def track(self, canceller: FetchCanceller) -> None:
        with self._lock:
            self._running.add(canceller)

    def forget(self, canceller: FetchCanceller) -> None:
        with self._lock:
            self._running.discard(canceller)

    def close(self) -> None:
        with self._lock:
            running = list(self._running)
        for canceller in running:
            canceller.cancel()


@dataclass
class BatchPlan:
    """Everything one worker needs, fixed for the whole call."""

    ctx: ToolContext[Settings]
    roots: Roots
    settings: Settings
    options: FetchOptions
    strategy: str
    folder: Path
    pattern: str
    overwrite: bool
    detailed: bool
    headless_missing: Text | None
    reservations: NameReservations
    fetch_slots: threading.BoundedSemaphore
    canceller: FetchCanceller = field(default_factory=FetchCanceller)
    #: Set for ``images: local``: stores each article's images beside it.
    images: ImageDownloader | None = None

    def cancelled(self) -> bool:
        return self.canceller.cancelled or self.ctx.cancelled


def _hint(code: str, plan: BatchPlan) -> Text:
    """What the model (or the user) can do about one failed item."""
    if code == "INVALID_URL":
        return Text(
            en="Only links under {prefixes} are fetched (redirects included); check the link.",
            zh="只抓取 {prefixes} 下的链接（重定向同样检查）；请检查链接。",
        ).format(prefixes=", ".join(plan.settings.allowed_url_prefixes))
    if code == "CHALLENGE":
        if plan.headless_missing is not None:
            return (
                Text(
                    en="WeChat wants a browser here. Enable the headless strategy: pip install "
                    "'hostd-wechat[headless]' and a system Chromium (Debian: apt install chromium; the "
                    "chromium_path setting points at it). Missing now: ",
                    zh="微信要求浏览器访问。请启用 headless 策略：pip install "
                    "'hostd-wechat[headless]' 并安装系统 "
                    "Chromium（Debian：apt install chromium；由 chromium_path 设置指定）。当前缺少：",
                )
                + plan.headless_missing
                + Text(en=". Or lower concurrency and retry later.", zh="。或降低并发稍后重试。")
            )
        return Text(
            en="WeChat asked for verification or throttled us: lower concurrency, wait and retry, "
            "or open the link in WeChat once.",
            zh="微信要求验证或限制了访问频率：请降低并发、稍后重试，或先在微信中打开一次该链接。",
        )
    return _HINTS.get(code, _NETWORK_HINT)


_NETWORK_HINT = Text(en="Check the network and retry.", zh="请检查网络后重试。")
_HINTS = {
    "NOT_FOUND": Text(
        en="The article is deleted, removed or expired; replace the URL.",
        zh="文章已删除、被移除或链接已过期；请更换 URL。",
    ),
    "TIMEOUT": Text(en="Raise timeout_ms or retry later.", zh="请增大 timeout_ms 或稍后重试。"),
    "WRITE_ERROR": Text(
        en="Check that the output folder is writable and the disk has room.",
        zh="请检查输出目录是否可写、磁盘空间是否充足。",
    ),
    "PROXY_ERROR": Text(
        en="The HTTP proxy could not be reached or refused the request: check the wechat `proxy` "
        "setting or the HTTP_PROXY/HTTPS_PROXY variables (NO_PROXY lists hosts fetched directly), "
        "the proxy's address and credentials, and that it is running.",
        zh="无法连接 HTTP 代理，或代理拒绝了请求：请检查 wechat 的 `proxy` 设置或 HTTP_PROXY/HTTPS_PROXY "
        "环境变量（NO_PROXY 列出直接访问的主机）、代理的地址与凭据，以及代理是否在运行。",
    ),
    "TOO_LONG": Text(
        en="The page is larger than the max_response_bytes setting allows.",
        zh="页面超过 max_response_bytes 设置允许的大小。",
    ),
}


def with_detail(hint: Text, detail: Text) -> Text:
    """The hint followed by the particulars in brackets."""
    return hint + Text(en=" (", zh="（") + detail + Text(en=")", zh="）")


def _error_item(
    plan: BatchPlan, url: str, code: str, reason: str | None, *, started: float, detail: Text | None = None
) -> ArticleItem:
    """The item of an article that failed; ``detail`` joins the hint in a detailed answer."""
    hint = _hint(code, plan)
    if detail is not None and plan.detailed:
        hint = with_detail(hint, detail)
    return ArticleItem(
        url=url,
        status="error",
        error_code=code,
        reason=reason,
        hint=hint,
        duration_ms=_elapsed_ms(started) if plan.detailed else None,
    )


def _elapsed_ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def _fetch(plan: BatchPlan, url: str, strategy: str) -> FetchResult:
    """One fetch, holding one of the ``concurrency`` slots only while the network is in use."""
    with plan.fetch_slots:
        if strategy == "headless":
            from hostd_wechat.headless import render_page

            with plan.options.in_flight():
                return render_page(url, plan.options, plan.settings.chromium_path, plan.cancelled)
        return fetch_page(url, plan.options, plan.canceller)


def _parse(result: FetchResult) -> ParsedArticle:
    from hostd_wechat.parse import parse_article

    return parse_article(result.html, url=result.url, http_status=result.http_status)


def _needs_browser(result: FetchResult, article: ParsedArticle | None) -> bool:
    if result.error_code == "CHALLENGE":
        return True
    if article is None:
        return False
    return article.verdict.error_code == "CHALLENGE" or article.needs_scripts


def process_url(plan: BatchPlan, url: str) -> ArticleItem:
    """Fetch, classify, convert and write one article; never raises for the article's own faults."""
    started = time.perf_counter()
    strategy: Strategy = "headless" if plan.strategy == "headless" else "http"
    result = _fetch(plan, url, strategy)
    article = _parse(result) if result.ok else None
    if plan.strategy == "auto" and _needs_browser(result, article) and plan.headless_missing is None:
        strategy = "headless"
        result = _fetch(plan, url, strategy)
        article = _parse(result) if result.ok else None
    if not result.ok:
        code = result.error_code or "NETWORK_ERROR"
        return _error_item(plan, url, code, result.reason, started=started, detail=result.detail)
    assert article is not None
    if not article.verdict.ok:
        code = article.verdict.error_code or "NOT_FOUND"
        return _error_item(plan, url, code, article.verdict.reason, started=started, detail=result.detail)
    if article.needs_scripts:
        return _error_item(plan, url, "CHALLENGE", "scripts_required", started=started, detail=result.detail)
    return _write_article(plan, url, result, article, strategy, started)


def _write_article(
    plan: BatchPlan, url: str, result: FetchResult, article: ParsedArticle, strategy: Strategy, started: float
) -> ArticleItem:
    from hostd_fs import FsError, atomic_write, resolve_beneath

    now = dt.datetime.now(CHINA_TIME)
    date = (article.publish_time or now.isoformat())[:10].replace("-", "")
    name = file_name(plan.pattern, date=date, title=article.title, account_name=article.account_name)
    if plan.cancelled():
        return _error_item(plan, url, "CANCELLED", "cancelled", started=started, detail=result.detail)
    target = plan.reservations.reserve(plan.folder, name, overwrite=plan.overwrite)
    image_links: dict[str, str] = {}
    images = None
    if plan.images is not None:
        # Stored before the Markdown that links them; the folder is named after the reserved file.
        image_links, images, warning = plan.images.localise(
            article.image_urls, base_url=result.final_url or url, markdown_path=target
        )
        if warning is not None:
            images.warning = warning
        if plan.cancelled():
            return _error_item(plan, url, "CANCELLED", "cancelled", started=started, detail=result.detail)
    text = article_markdown(
        article, source_url=url, retrieved_at=now.isoformat(timespec="seconds"), image_links=image_links
    )
    try:
        # Re-resolved and written beneath the root: the folder may have been swapped meanwhile.
        written = atomic_write(resolve_beneath(str(target), plan.roots()), text)
    except FsError as exc:
        item = _error_item(plan, url, "WRITE_ERROR", exc.reason, started=started, detail=result.detail)
        item.saved_path = str(target)
        item.images = images
        return item
    return ArticleItem(
        url=url,
        status="ok",
        saved_path=str(target),
        title=article.title,
        account_name=article.account_name,
        bytes_written=written,
        strategy=strategy if plan.detailed else None,
        duration_ms=_elapsed_ms(started) if plan.detailed else None,
        preview_snippet=article.body_text[:PREVIEW_CHARS] if plan.detailed else None,
        images=images,
    )


async def run_batch(plan: BatchPlan, urls: list[str], concurrency: int) -> list[ArticleItem]:
    import anyio

    ctx = plan.ctx
    total = len(urls)
    items: list[ArticleItem | None] = [None] * total
    done = 0

    async def progress(item: ArticleItem) -> None:
        nonlocal done
        done += 1
        label = item.title or item.error_code or ""
        try:
            await ctx.report_progress(done, total, f"{done}/{total} {item.status}: {label}"[:200])
        except Exception:  # progress is best effort; an abandoned call has no client left
            ctx.logger.debug("progress not delivered", exc_info=True)

    prefixes = plan.options.prefixes
    queued: list[int] = []
    for index, url in enumerate(urls):
        refusal = check_url(url, prefixes)
        if refusal is None:
            queued.append(index)
            continue
        refused = ArticleItem(
            url=url,
            status="error",
            error_code="INVALID_URL",
            reason="not_allowed",
            hint=with_detail(_hint("INVALID_URL", plan), refusal),
        )
        items[index] = refused
        await progress(refused)

    pool = ctx.resource("wechat.fetch_pool", FetchPool)
    # Twice as many workers as fetch slots: while some parse and write (CPU), others keep the
    # network busy, so at most ``concurrency`` requests are in flight and they never wait on parsing.
    workers = anyio.Semaphore(concurrency * 2)

    async def run_one(index: int) -> None:
        async with workers:
            item = await anyio.to_thread.run_sync(
                process_url, plan, urls[index], limiter=pool.limiter, abandon_on_cancel=True
            )
        items[index] = item
        await progress(item)

    pool.track(plan.canceller)
    try:
        async with anyio.create_task_group() as group:
            for index in queued:
                group.start_soon(run_one, index)
    except BaseException:
        plan.canceller.cancel()  # cancelled (or failed): shut every socket of the batch now
        raise
    finally:
        pool.forget(plan.canceller)
        if plan.images is not None:
            plan.images.close()
    return [
        item
        if item is not None
        else ArticleItem(url=urls[i], status="error", error_code="CANCELLED", reason="cancelled")
        for i, item in enumerate(items)
    ]
