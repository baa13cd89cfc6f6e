"""``read_wechat_articles``: check the call's arguments, plan the batch, answer with its items.

The call succeeds with one item per URL; only call-level faults (bad arguments, an output
folder outside the roots, headless asked for but missing) are errors. The tool is async, so a
batch holds none of the host's worker threads (which every sync tool of every plugin shares);
the work itself is in ``hostd_wechat.batch``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from hostd import ResourceLink, Roots, Text, ToolContext, ToolError
from hostd_wechat.batch import BatchPlan, run_batch
from hostd_wechat.fetch import FetchOptions
from hostd_wechat.images import ImageDownloader
from hostd_wechat.models import BatchSummary, ReadArticlesOutput, Settings, UserAgent
from hostd_wechat.naming import DEFAULT_PATTERN, NameReservations, pattern_problem
from hostd_wechat.urls import UrlPrefix


def _output_folder(roots: Roots, output_dir: str) -> Path:
    from hostd_fs import resolve_beneath

    # The folders are made beneath the root's descriptor, so none can lead outside the roots.
    return resolve_beneath(output_dir, roots(), expect="dir", create_folders=True).path


async def read_wechat_articles(
    ctx: ToolContext[Settings],
    roots: Roots,
    urls: Annotated[
        list[Annotated[str, Field(max_length=4096)]],
        Field(
            description="Article links, https://mp.weixin.qq.com/s/...",
            min_length=1,
            max_length=50,
        ),
    ],
    fetch_strategy: Annotated[
        Literal["auto", "http", "headless"],
        Field(description="auto: HTTP, a headless browser when needed"),
    ] = "auto",
    output_dir: Annotated[
        str,
        Field(
            description="Folder for the Markdown files",
            min_length=1,
            max_length=1024,
        ),
    ] = "exports/articles/",
    filename_pattern: Annotated[
        str | None,
        Field(
            description="File name with {date}, {title}, {account_name}",
            max_length=200,
        ),
    ] = None,
    overwrite: Annotated[bool, Field(description="Replace same-named files (else _2, _3 ...)")] = False,
    concurrency: Annotated[int, Field(description="Articles fetched at once", ge=1, le=10)] = 3,
    response_format: Annotated[
        Literal["concise", "detailed"],
        Field(description="detailed adds timings and previews"),
    ] = "concise",
    timeout_ms: Annotated[int, Field(description="Per page request", ge=100, le=120_000)] = 10_000,
    user_agent: Annotated[
        UserAgent | None,
        Field(description="User-Agent header to send"),
    ] = None,
    images: Annotated[
        Literal["remote", "local"],
        Field(description="local: store images in <name>.assets/ beside the file"),
    ] = "remote",
) -> ReadArticlesOutput:
    """Save WeChat official-account articles as Markdown files with front matter; each URL's result says what
    failed and why.
    """
    settings = ctx.settings
    pattern = filename_pattern if filename_pattern is not None else DEFAULT_PATTERN
    problem = pattern_problem(pattern)
    if problem is not None:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(en="filename_pattern: ", zh="filename_pattern：") + problem + Text(en=".", zh="。"),
            hint=Text(
                en="Use only {date}, {title} and {account_name}, e.g. '{date}_{title}'.",
                zh="只能使用 {date}、{title}、{account_name}，例如 '{date}_{title}'。",
            ),
            details={"argument": "filename_pattern"},
        )
    from hostd_wechat.headless import headless_unavailable_reason

    headless_missing = headless_unavailable_reason(settings.chromium_path)
    if fetch_strategy == "headless" and headless_missing is not None:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en="fetch_strategy 'headless' is not available here: ",
                zh="此处无法使用 headless 策略：",
            )
            + headless_missing
            + Text(en=".", zh="。"),
            hint=Text(
                en="Use fetch_strategy 'auto' or 'http', or install the headless extra and Chromium.",
                zh="请改用 auto 或 http，或安装 headless 扩展与 Chromium。",
            ),
            details={"argument": "fetch_strategy"},
        )
    import anyio

    folder = await anyio.to_thread.run_sync(_output_folder, roots, output_dir)
    options = FetchOptions(
        prefixes=[UrlPrefix.parse(p) for p in settings.allowed_url_prefixes],
        timeout_s=timeout_ms / 1000,
        max_bytes=settings.max_response_bytes,
        user_agent=user_agent or settings.default_user_agent,
        retries=settings.max_retries,
        backoff_s=settings.retry_backoff_ms / 1000,
        proxy=settings.proxy,
        in_flight=ctx.fetching,
    )
    plan = BatchPlan(
        ctx=ctx,
        roots=roots,
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
            roots=roots,
        )
    items = await run_batch(plan, list(urls), concurrency)
    succeeded = sum(1 for item in items if item.status == "ok")
    summary = BatchSummary(total=len(items), succeeded=succeeded, failed=len(items) - succeeded)
    saved = [ResourceLink.file(Path(item.saved_path)) for item in items if item.saved_path]
    return (
        ReadArticlesOutput(summary=summary, items=items)
        .with_links(*saved)
        .with_message(
            Text(
                en="Saved {succeeded} of {total} articles to {folder}.",
                zh="已保存 {total} 篇中的 {succeeded} 篇文章到 {folder}。",
            ).format(succeeded=succeeded, total=len(items), folder=str(folder))
        )
    )
