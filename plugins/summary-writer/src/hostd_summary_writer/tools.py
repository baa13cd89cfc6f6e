"""The ``update_summary`` tool: check the arguments, find the file inside the roots, write it.

Appends never read the file (the separator depends only on its size, taken under the lock),
so an append costs the same on a 100 MB file as on an empty one. Overwrites go through a
temporary file and a rename, so a reader sees the old version or the new one, never half.
Both hold a cross-process lock kept in the host's lock folder, not beside the user's file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from hostd import ResourceLink, Roots, Text, ToolContext, ToolError
from hostd_summary_writer.models import Settings, UpdateSummaryOutput, WriteMode
from hostd_summary_writer.sections import DEFAULT_HEADING, is_blank, is_markdown_path, section_bytes

if TYPE_CHECKING:
    from hostd_fs import RootedPath


def update_summary(
    ctx: ToolContext[Settings],
    roots: Roots,
    content: Annotated[
        str,
        Field(description="The summary, Markdown, not blank"),
    ],
    file_path: Annotated[
        str,
        Field(
            description="Markdown file, absolute or relative to the first allowed root",
            min_length=1,
        ),
    ],
    mode: Annotated[
        WriteMode,
        Field(description="How to write"),
    ] = "append",
) -> UpdateSummaryOutput:
    """Write a summary into a Markdown file inside the allowed roots: append adds it after a timestamped
    heading, overwrite REPLACES THE WHOLE FILE.
    """
    data = _checked_content(content, ctx.settings.max_content_bytes)
    target = _resolved_target(roots, file_path)
    if mode == "append":
        bytes_written, created, separator_added = _append(ctx, target, data)
        if created:
            message = Text(
                en="Summary written to new file (created): {path}", zh="总结已写入新创建的文件：{path}"
            )
        else:
            message = Text(en="Summary appended to file: {path}", zh="总结已成功追加至文件：{path}")
    else:
        bytes_written, created = _overwrite(ctx, target, data)
        separator_added = False
        message = Text(en="Summary written to file (replaced): {path}", zh="总结已成功覆盖写入文件：{path}")
    return (
        UpdateSummaryOutput(
            file_path=str(target),
            mode=mode,
            bytes_written=bytes_written,
            created=created,
            separator_added=separator_added,
        )
        .with_message(message.format(path=str(target)))
        .with_links(ResourceLink.file(target.path))
    )


def _checked_content(content: str, max_bytes: int) -> bytes:
    """The content as UTF-8, or the error the spec asks for (blank, too long, not text)."""
    if is_blank(content):
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en="Invalid content: must not be empty or only whitespace",
                zh="无效的 content：不能为空或仅包含空白字符",
            ),
            hint=Text(
                en="Pass the summary text to write as 'content'.", zh="请在 content 中提供要写入的总结文本。"
            ),
            details={"argument": "content"},
        )
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise _not_unicode_error("content") from None
    if len(data) > max_bytes:
        raise ToolError(
            "TOO_LONG",
            Text(
                en="Content is too long: {size} bytes of UTF-8, the limit is {max_bytes}",
                zh="内容过长：UTF-8 编码为 {size} 字节，上限为 {max_bytes} 字节",
            ).format(size=len(data), max_bytes=max_bytes),
            hint=Text(
                en="Split the summary into several calls in append mode, or raise "
                "plugins.summary-writer.max_content_bytes in the config.",
                zh="请分多次以 append 模式写入，或在配置中调高 plugins.summary-writer.max_content_bytes。",
            ),
            details={"argument": "content", "bytes": len(data), "max_bytes": max_bytes},
        )
    return data


def _resolved_target(roots: Roots, file_path: str) -> RootedPath:
    """The file inside the effective roots; the writers re-open it beneath the root and make its folders."""
    from hostd_fs import resolve_beneath

    if not is_markdown_path(file_path):
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en="Invalid file_path: must end with .md or .markdown",
                zh="无效的 file_path：必须以 .md 或 .markdown 结尾",
            ),
            hint=Text(
                en="Use a Markdown file name, for example notes/summary.md.",
                zh="请使用 Markdown 文件名，例如 notes/summary.md。",
            ),
            details={"argument": "file_path"},
        )
    if not _is_unicode_text(file_path):
        raise _not_unicode_error("file_path")
    return resolve_beneath(file_path, roots(), expect="file")


def _is_unicode_text(text: str) -> bool:
    """False for strings holding lone surrogates, which JSON allows but no file can store."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _not_unicode_error(argument: str) -> ToolError:
    return ToolError(
        "INVALID_ARGUMENT",
        Text(
            en="Invalid {argument}: it holds characters that are not valid Unicode text (lone surrogates)",
            zh="无效的 {argument}：包含无效的 Unicode 字符（孤立代理项）",
        ).format(argument=argument),
        hint=Text(en="Send it as proper UTF-8 text.", zh="请以正确的 UTF-8 文本发送。"),
        details={"argument": argument},
    )


def _heading(ctx: ToolContext[Settings]) -> str:
    return ctx.settings.separator_heading or ctx.render(DEFAULT_HEADING)


def _append(ctx: ToolContext[Settings], target: RootedPath, data: bytes) -> tuple[int, bool, bool]:
    """Append under the file's lock; hostd-fs raises its FsError (a CodedError) for every failure."""
    from hostd_fs import locked_append

    heading = _heading(ctx)
    result = locked_append(
        target,
        lambda size: section_bytes(data, heading, size),
        lock_dir=ctx.lock_dir,
        timeout=ctx.settings.lock_timeout_seconds,
    )
    return result.bytes_written, result.created, result.previous_size > 0


def _overwrite(ctx: ToolContext[Settings], target: RootedPath, data: bytes) -> tuple[int, bool]:
    from hostd_fs import locked_overwrite

    return locked_overwrite(target, data, lock_dir=ctx.lock_dir, timeout=ctx.settings.lock_timeout_seconds)
