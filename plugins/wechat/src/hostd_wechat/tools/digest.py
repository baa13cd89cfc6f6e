"""``summarize_articles``: one digest file for a set of Markdown articles.

The tool checks the output first (a Markdown name, not there unless ``overwrite``), gathers
and reads the inputs (``hostd_wechat.sources``), has them summarized by the client's model
when it offers MCP sampling and the ``use_sampling`` setting allows it
(``hostd_wechat.sampling``), else extractively (``hostd_wechat.extractive``), renders the
document (``hostd_wechat.digest_document``), checks the output again and writes it atomically.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from hostd import ResourceLink, Roots, Text, ToolContext, ToolError
from hostd_wechat.digest_document import digest_language, render_digest, truncate
from hostd_wechat.extractive import score_articles, summarize
from hostd_wechat.models import FileProblem, Settings, SummarizeOutput
from hostd_wechat.sampling import write_summaries_by_sampling
from hostd_wechat.sources import MAX_INPUT_FILES, SkippedFile, collect, read_source

MARKDOWN_SUFFIXES = (".md", ".markdown")
PREVIEW_CHARS = 300


def summarize_articles(
    ctx: ToolContext[Settings],
    roots: Roots,
    files: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=1024)]] | None,
        Field(
            description="Markdown files; overrides input_dir",
            max_length=MAX_INPUT_FILES,
        ),
    ] = None,
    input_dir: Annotated[
        str | None,
        Field(
            description="Folder searched with glob; default exports/articles",
            min_length=1,
            max_length=1024,
        ),
    ] = None,
    glob: Annotated[str, Field(description="Pattern in input_dir", min_length=1, max_length=200)] = "**/*.md",
    output_path: Annotated[
        str,
        Field(description="Digest file; {date} is YYYYMMDD", min_length=1, max_length=1024),
    ] = "exports/summaries/summary_{date}.md",
    style: Annotated[
        Literal["key_points", "outline", "narrative", "brief"],
        Field(description="Summary style"),
    ] = "key_points",
    language: Annotated[
        Literal["zh", "en", "auto"],
        Field(description="Language of the labels"),
    ] = "auto",
    per_article_max_chars: Annotated[
        int | None,
        Field(description="Cut each summary to this length", ge=20, le=100_000),
    ] = None,
    include_toc: Annotated[bool, Field(description="Start with a table of contents")] = True,
    include_metadata: Annotated[bool, Field(description="Show source, account, time and a manifest")] = True,
    response_format: Annotated[
        Literal["concise", "detailed"],
        Field(description="detailed adds an overview and preview"),
    ] = "concise",
    overwrite: Annotated[bool, Field(description="Replace an existing digest file")] = False,
) -> SummarizeOutput:
    """Summarize Markdown articles into one digest file, a section per article; the client's model writes them
    when it offers sampling.
    """
    settings = ctx.settings
    skipped: list[SkippedFile] = []
    warnings: list[Text] = []
    now = dt.datetime.now().astimezone()
    output = output_path.replace("{date}", now.strftime("%Y%m%d"))
    _check_output(roots, output, overwrite)
    allowed = roots()
    paths = collect(
        files,
        input_dir,
        glob,
        roots=allowed,
        cancelled=lambda: ctx.cancelled,
        skipped=skipped,
        warnings=warnings,
    )
    if not paths and any(s.code == "PATH_NOT_ALLOWED" for s in skipped):
        raise _refused_inputs(skipped)
    if not paths:
        raise ToolError(
            "EMPTY_INPUT",
            Text(en="No Markdown file matched.", zh="没有匹配到任何 Markdown 文件。"),
            hint=Text(
                en="Check files, or input_dir and glob (default '**/*.md').",
                zh="请检查 files，或 input_dir 与 glob（默认 '**/*.md'）。",
            ),
            details={"problems": [s.as_detail() for s in skipped[:20]]},
        )
    articles = [a for a in (read_source(p, allowed, skipped, warnings) for p in paths) if a is not None]
    if not articles and all(s.code == "PATH_NOT_ALLOWED" for s in skipped):
        # Refused again when read (a file swapped for a link or a device after the check).
        raise _refused_inputs(skipped)
    if not articles:
        raise ToolError(
            "READ_ERROR",
            Text(en="None of the matched files could be read.", zh="匹配到的文件都无法读取。"),
            hint=Text(
                en="They must be UTF-8 Markdown files; details.problems says what was wrong with each.",
                zh="文件须为 UTF-8 编码的 Markdown；details.problems 列出了每个文件的问题。",
            ),
            details={"problems": [s.as_detail() for s in skipped[:20]]},
        )
    lang = digest_language(language, articles)
    used_sampling = write_summaries_by_sampling(ctx, articles, style, lang, warnings)
    if not used_sampling:
        score_articles([a.text for a in articles])
        for article in articles:
            article.summary = summarize(article.text, style, lang)
    for article in articles:
        article.summary = truncate(article.summary, per_article_max_chars, lang)
    document, overview = render_digest(
        articles,
        language=lang,
        include_toc=include_toc,
        include_metadata=include_metadata,
        generated=now.isoformat(timespec="seconds"),
    )
    if len(document) > settings.max_digest_chars:
        raise ToolError(
            "TOO_LONG",
            Text(
                en="The digest would be {chars} characters, over the budget of {budget} (setting "
                "max_digest_chars).",
                zh="汇总将有 {chars} 个字符，超出 {budget} 的预算（设置 max_digest_chars）。",
            ).format(chars=len(document), budget=settings.max_digest_chars),
            hint=Text(
                en="Use style 'brief' or a smaller per_article_max_chars, or fewer files.",
                zh="请使用 brief 风格、调小 per_article_max_chars，或减少文件数。",
            ),
            details={"chars": len(document), "budget": settings.max_digest_chars},
        )
    _check_output(roots, output, overwrite)  # again: the file may have appeared while we summarized
    target, written = _write(roots, output, document)
    detailed = response_format == "detailed"
    answer = SummarizeOutput(
        saved=True,
        path=str(target),
        bytes_written=written,
        article_count=len(articles),
        summarizer="sampling" if used_sampling else "extractive",
        warnings=warnings,
        errors=[FileProblem(path=s.path, code=s.code, message=s.message) for s in skipped],
        sections_overview=overview if detailed else None,
        preview_snippet=document[:PREVIEW_CHARS] if detailed else None,
    ).with_message(
        Text(en="Summarized {count} articles into {path}.", zh="已将 {count} 篇文章汇总到 {path}。").format(
            count=len(articles), path=str(target)
        )
    )
    return answer.with_links(ResourceLink.file(target))


def _refused_inputs(skipped: list[SkippedFile]) -> ToolError:
    """Every input was refused by the path rules: say so (not "nothing matched"), listing each."""
    refused = [s for s in skipped if s.code == "PATH_NOT_ALLOWED"]
    return ToolError(
        "PATH_NOT_ALLOWED",
        Text(
            en="None of the files may be read: {count} refused by the path rules "
            "(outside the allowed folders, or not a regular file).",
            zh="所给文件均不允许读取：{count} 个被路径规则拒绝（不在允许的文件夹内，或不是普通文件）。",
        ).format(count=len(refused)),
        hint=Text(
            en="Give regular Markdown files inside the allowed folders; details.problems says why each "
            "was refused.",
            zh="请提供允许的文件夹内的普通 Markdown 文件；details.problems 列出了每个文件被拒绝的原因。",
        ),
        details={"problems": [s.as_detail() for s in skipped[:50]]},
    )


def _check_output(roots: Roots, output_path: str, overwrite: bool) -> None:
    """Refuse a digest name that is not Markdown, and an existing file unless ``overwrite``."""
    from hostd_fs import resolve_in_roots

    if Path(output_path.replace("\\", "/")).suffix.lower() not in MARKDOWN_SUFFIXES:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en="output_path must name a Markdown file (.md or .markdown).",
                zh="output_path 必须是 Markdown 文件（.md 或 .markdown）。",
            ),
            hint=Text(
                en="For example exports/summaries/summary_{date}.md.",
                zh="例如 exports/summaries/summary_{date}.md。",
            ),
            details={"argument": "output_path"},
        )
    target = resolve_in_roots(output_path, roots(), expect="file")
    if not overwrite and os.path.lexists(target):
        raise ToolError(
            "ALREADY_EXISTS",
            Text(en="The digest file {path} already exists.", zh="汇总文件 {path} 已存在。").format(
                path=str(target)
            ),
            hint=Text(
                en="Pass overwrite: true to replace it, or choose another output_path.",
                zh="如需替换请传 overwrite: true，或换一个 output_path。",
            ),
            details={"path": str(target), "argument": "output_path"},
        )


def _write(roots: Roots, output_path: str, document: str) -> tuple[Path, int]:
    """Write the digest atomically beneath its root; a failure of the write itself is WRITE_ERROR.

    Refusals of the path (outside the roots, a bad name, too deep) keep their own codes.
    """
    from hostd_fs import FsError, atomic_write, resolve_beneath

    target = resolve_beneath(output_path, roots(), expect="file")
    try:
        # Missing parent folders are made beneath the root's descriptor.
        return target.path, atomic_write(target, document)
    except FsError as exc:
        if exc.code in ("PATH_NOT_ALLOWED", "INVALID_ARGUMENT", "PATH_TOO_LONG"):
            raise
        raise ToolError(
            "WRITE_ERROR",
            exc.message,
            hint=exc.hint,
            details={"path": output_path, "reason": exc.reason},
        ) from None
