"""``read_wechat_articles``: fetch articles concurrently, convert them, write one Markdown file each.

The call succeeds with one item per URL; only call-level faults (bad arguments, an output
folder outside the roots, headless asked for but missing) are errors. The tool itself is
async, so a batch holds none of the host's worker threads (which every sync tool of every
plugin shares): each article is fetched, parsed and written in a thread of the plugin's own
bounded pool (``FetchPool``), at most twice ``concurrency`` per call and at most
``concurrency`` requests in flight, so parsing never holds the network back. One progress
notification goes out per article. When the client cancels, or the server shuts down, every
socket of the batch is shut at once, so no fetch outlives its call.
Files are written with ``atomic_write``, so a cancelled call never leaves half a file.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from hostd import ToolContext, ToolError
from hostd_wechat.fetch import FetchCanceller, FetchOptions, FetchResult, fetch_page
from hostd_wechat.frontmatter import FIELDS, render_front_matter, word_count
from hostd_wechat.images import ImageDownloader
from hostd_wechat.models import ArticleItem, BatchSummary, ReadArticlesResult
from hostd_wechat.naming import DEFAULT_PATTERN, NameReservations, file_name, pattern_problem
from hostd_wechat.parse import CHINA_TIME, ParsedArticle
from hostd_wechat.settings import Settings, UserAgent, settings_of
from hostd_wechat.urls import UrlPrefix, check_url

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

    ctx: ToolContext
    settings: Settings
    options: FetchOptions
    strategy: str
    folder: Path
    pattern: str
    overwrite: bool
    detailed: bool
    headless_missing: str | None
    reservations: NameReservations
    fetch_slots: threading.BoundedSemaphore
    canceller: FetchCanceller = field(default_factory=FetchCanceller)
    #: Set for ``images: local``: stores each article's images beside it.
    images: ImageDownloader | None = None

    def cancelled(self) -> bool:
        return self.canceller.cancelled or self.ctx.cancelled


def _hint(ctx: ToolContext, code: str, reason: str | None, plan: BatchPlan | None = None) -> str:
    """What the model (or the user) can do about one failed item."""
    if code == "INVALID_URL":
        prefixes = ", ".join(plan.settings.allowed_url_prefixes) if plan else "https://mp.weixin.qq.com/s"
        return ctx.text(
            en=f"Only links under {prefixes} are fetched (redirects included); check the link.",
            zh=f"只抓取 {prefixes} 下的链接（重定向同样检查）；请检查链接。",
        )
    if code == "CHALLENGE":
        missing = plan.headless_missing if plan else None
        if missing:
            return ctx.text(
                en="WeChat wants a browser here. Enable the headless strategy: pip install "
                "'hostd-wechat[headless]' and a system Chromium (Debian: apt install chromium; the "
                f"chromium_path setting points at it). Missing now: {missing}. "
                "Or lower concurrency and retry later.",
                zh="微信要求浏览器访问。请启用 headless 策略：pip install "
                "'hostd-wechat[headless]' 并安装系统 "
                f"Chromium（Debian：apt install chromium；由 chromium_path 设置指定）。当前缺少：{missing}。"
                "或降低并发稍后重试。",
            )
        return ctx.text(
            en="WeChat asked for verification or throttled us: lower concurrency, wait and retry, "
            "or open the link in WeChat once.",
            zh="微信要求验证或限制了访问频率：请降低并发、稍后重试，或先在微信中打开一次该链接。",
        )
    if code == "NOT_FOUND":
        return ctx.text(
            en="The article is deleted, removed or expired; replace the URL.",
            zh="文章已删除、被移除或链接已过期；请更换 URL。",
        )
    if code == "TIMEOUT":
        return ctx.text(en="Raise timeout_ms or retry later.", zh="请增大 timeout_ms 或稍后重试。")
    if code == "WRITE_ERROR":
        return ctx.text(
            en="Check that the output folder is writable and the disk has room.",
            zh="请检查输出目录是否可写、磁盘空间是否充足。",
        )
    if code == "TOO_LONG":
        return ctx.text(
            en="The page is larger than the max_response_bytes setting allows.",
            zh="页面超过 max_response_bytes 设置允许的大小。",
        )
    return ctx.text(en="Check the network and retry.", zh="请检查网络后重试。")


def _error_item(
    plan: BatchPlan, url: str, result: FetchResult | None, code: str, reason: str | None, started: float
) -> ArticleItem:
    detail = result.detail if result is not None else ""
    hint = _hint(plan.ctx, code, reason, plan)
    if detail and plan.detailed:
        hint = f"{hint} ({detail})"
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
        return _error_item(plan, url, result, result.error_code or "NETWORK_ERROR", result.reason, started)
    assert article is not None
    if not article.verdict.ok:
        return _error_item(
            plan, url, result, article.verdict.error_code or "NOT_FOUND", article.verdict.reason, started
        )
    if article.needs_scripts:
        return _error_item(plan, url, result, "CHALLENGE", "scripts_required", started)
    return _write_article(plan, url, result, article, strategy, started)


def article_markdown(
    article: ParsedArticle,
    *,
    source_url: str,
    retrieved_at: str,
    image_links: dict[str, str] | None = None,
) -> str:
    """The whole file: front matter, a blank line, the title heading and the body.

    ``image_links`` (remote image link -> relative path) points stored images at their files.
    """
    from hostd_wechat.markdown import html_to_markdown

    body, _converted = html_to_markdown(article.body_html, image_links) if article.body_html else ("", True)
    metadata: dict[str, Any] = {
        "title": article.title,
        "account_name": article.account_name,
        "author": article.author,
        "publish_time": article.publish_time or "",
        "canonical_url": article.canonical_url,
        "source_url": source_url,
        "retrieved_at": retrieved_at,
        "article_id": article.article_id,
        "word_count": word_count(article.body_text),
        "images": article.images,
    }
    assert tuple(metadata) == FIELDS
    if article.publish_time_raw and article.publish_time_raw != article.publish_time:
        metadata["publish_time_raw"] = article.publish_time_raw
    heading = f"# {article.title}\n\n" if article.title else ""
    return render_front_matter(metadata) + heading + body


def _write_article(
    plan: BatchPlan, url: str, result: FetchResult, article: ParsedArticle, strategy: Strategy, started: float
) -> ArticleItem:
    from hostd_fs import FsError, atomic_write, resolve_beneath

    now = dt.datetime.now(CHINA_TIME)
    date = (article.publish_time or now.isoformat())[:10].replace("-", "")
    name = file_name(plan.pattern, date=date, title=article.title, account_name=article.account_name)
    if plan.cancelled():
        return _error_item(plan, url, result, "CANCELLED", "cancelled", started)
    target = plan.reservations.reserve(plan.folder, name, overwrite=plan.overwrite)
    image_links: dict[str, str] = {}
    images = None
    if plan.images is not None:
        # Stored before the Markdown that links them; the folder is named after the reserved file.
        image_links, images = plan.images.localise(
            article.image_urls, base_url=result.final_url or url, markdown_path=target
        )
        if plan.cancelled():
            return _error_item(plan, url, result, "CANCELLED", "cancelled", started)
    text = article_markdown(
        article, source_url=url, retrieved_at=now.isoformat(timespec="seconds"), image_links=image_links
    )
    try:
        # Re-resolved and written beneath the root: the folder may have been swapped meanwhile.
        written = atomic_write(resolve_beneath(str(target), plan.ctx.roots()), text)
    except (OSError, FsError) as exc:
        item = _error_item(
            plan, url, result, "WRITE_ERROR", getattr(exc, "reason", None) or type(exc).__name__, started
        )
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


def _output_folder(ctx: ToolContext, output_dir: str) -> Path:
    from hostd_fs import resolve_beneath

    # The folders are made beneath the root's descriptor, so none can lead outside the roots.
    return resolve_beneath(output_dir, ctx.roots(), expect="dir", create_folders=True).path


async def _run_batch(plan: BatchPlan, urls: list[str], concurrency: int) -> list[ArticleItem]:
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
            hint=f"{_hint(ctx, 'INVALID_URL', None, plan)} ({refusal})",
        )
        items[index] = refused
        await progress(refused)

    pool = ctx.plugin.resource("wechat.fetch_pool", FetchPool)
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


async def read_wechat_articles(
    ctx: ToolContext,
    urls: Annotated[
        list[Annotated[str, Field(max_length=4096)]],
        Field(
            description="WeChat article links (https://mp.weixin.qq.com/s/...), 1 to 50.",
            min_length=1,
            max_length=50,
        ),
    ],
    fetch_strategy: Annotated[
        Literal["auto", "http", "headless"],
        Field(
            description="auto: plain HTTP first, a headless browser when WeChat challenges or the page "
            "needs its scripts; http: never a browser; headless: always the browser."
        ),
    ] = "auto",
    output_dir: Annotated[
        str,
        Field(
            description="Folder for the Markdown files, inside the allowed roots.",
            min_length=1,
            max_length=1024,
        ),
    ] = "exports/articles/",
    filename_pattern: Annotated[
        str | None,
        Field(
            description="File name pattern with {date} (YYYYMMDD, +08:00), {title}, {account_name}; "
            "default {title}.",
            max_length=200,
        ),
    ] = None,
    overwrite: Annotated[
        bool, Field(description="Replace files of the same name (else add _2, _3 ...).")
    ] = False,
    concurrency: Annotated[int, Field(description="Articles fetched at the same time.", ge=1, le=10)] = 3,
    response_format: Annotated[
        Literal["concise", "detailed"],
        Field(description="detailed adds durations, the strategy used and a preview of each article."),
    ] = "concise",
    timeout_ms: Annotated[
        int, Field(description="Time limit of one page request, in milliseconds.", ge=100, le=120_000)
    ] = 10_000,
    user_agent: Annotated[
        UserAgent | None,
        Field(description="User-Agent header to send instead of the default (printable Latin-1)."),
    ] = None,
    images: Annotated[
        Literal["remote", "local"],
        Field(
            description="remote: image links point at WeChat's servers; local: download each image into "
            "a folder beside the Markdown file (<name>.assets/) and link it by relative path; an image "
            "that cannot be stored keeps its remote link and is reported in the item."
        ),
    ] = "remote",
) -> ReadArticlesResult:
    """Read WeChat official-account articles and save each as a Markdown file with front matter
    (title, account, author, publish time, URLs, word count, images). Per-URL results: failed
    items carry error_code (INVALID_URL, CHALLENGE, NOT_FOUND, TIMEOUT, WRITE_ERROR) and a reason.
    images='local' also stores each article's images beside it and reports those left remote."""
    settings = settings_of(ctx.settings)
    pattern = filename_pattern if filename_pattern is not None else DEFAULT_PATTERN
    problem = pattern_problem(pattern) if pattern.strip() else "empty pattern"
    if problem:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(en=f"filename_pattern: {problem}.", zh=f"filename_pattern：{problem}。"),
            hint=ctx.text(
                en="Use only {date}, {title} and {account_name}, e.g. '{date}_{title}'.",
                zh="只能使用 {date}、{title}、{account_name}，例如 '{date}_{title}'。",
            ),
            details={"argument": "filename_pattern"},
        )
    from hostd_wechat.headless import headless_unavailable_reason

    headless_missing = headless_unavailable_reason(settings.chromium_path)
    if fetch_strategy == "headless" and headless_missing:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"fetch_strategy 'headless' is not available here: {headless_missing}.",
                zh=f"此处无法使用 headless 策略：{headless_missing}。",
            ),
            hint=ctx.text(
                en="Use fetch_strategy 'auto' or 'http', or install the headless extra and Chromium.",
                zh="请改用 auto 或 http，或安装 headless 扩展与 Chromium。",
            ),
            details={"argument": "fetch_strategy"},
        )
    import anyio

    folder = await anyio.to_thread.run_sync(_output_folder, ctx, output_dir)
    options = FetchOptions(
        prefixes=[UrlPrefix.parse(p) for p in settings.allowed_url_prefixes],
        timeout_s=timeout_ms / 1000,
        max_bytes=settings.max_response_bytes,
        user_agent=user_agent or settings.default_user_agent,
        retries=settings.max_retries,
        backoff_s=settings.retry_backoff_ms / 1000,
    )
    plan = BatchPlan(
        ctx=ctx,
        settings=settings,
        options=options,
        strategy=fetch_strategy,
        folder=folder,
        pattern=pattern,
        overwrite=overwrite,
        detailed=response_format == "detailed",
        headless_missing=headless_missing,
        reservations=NameReservations(),
        fetch_slots=threading.BoundedSemaphore(concurrency),
    )
    if images == "local":
        plan.images = ImageDownloader(
            settings=settings,
            page_options=options,
            concurrency=concurrency,
            fetch_slots=plan.fetch_slots,
            canceller=plan.canceller,
            cancelled=plan.cancelled,
            roots=ctx.roots,
            text=ctx.text,
        )
    items = await _run_batch(plan, list(urls), concurrency)
    succeeded = sum(1 for item in items if item.status == "ok")
    summary = BatchSummary(total=len(items), succeeded=succeeded, failed=len(items) - succeeded)
    return ReadArticlesResult(summary=summary, items=items).with_message(
        ctx.text(
            en=f"Saved {succeeded} of {len(items)} articles to {folder}.",
            zh=f"已保存 {len(items)} 篇中的 {succeeded} 篇文章到 {folder}。",
        )
    )
