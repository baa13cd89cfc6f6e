"""Sessions as documents: export (JSON, Markdown, HTML, text; returned or written inside the
roots), import (a JSON export or a spec-shaped document) and diagrams (Mermaid, ASCII).

The formats themselves live in ``export.py`` and ``visualize.py``; documents are written in the
server's language. Files are read and written beneath the root's folder descriptor
(``hostd_fs``), so a folder swapped for a symlink meanwhile is refused.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field

from hostd import ResourceLink, Roots, Text, ToolError
from hostd_deep_thinking.jsonshape import NotFiniteNumber, refuse_constant
from hostd_deep_thinking.models import SESSION_ID_PATTERN, ExportOutput, ImportOutput, VisualizeOutput
from hostd_deep_thinking.store import SessionExists, SessionState, session_store
from hostd_deep_thinking.tools.common import Context, SessionId, load_state, resource_uri, summary_of

MAX_IMPORT_CHARS = 50_000_000


def _render(ctx: Context, state: SessionState, format: str) -> str:
    from hostd_deep_thinking import export

    store = session_store(ctx)
    with store.session_lock(state.session_id):
        if format == "json":
            return export.to_json(state)
        if format == "markdown":
            return export.to_markdown(state, ctx.language)
        if format == "html":
            return export.to_html(state, ctx.language)
        return export.to_text(state, ctx.language)


#: The media type of each export format, for the link to a written file.
EXPORT_TYPES = {"json": "application/json", "markdown": "text/markdown", "html": "text/html"}


def export_session(
    ctx: Context,
    roots: Roots,
    session_id: SessionId,
    format: Annotated[Literal["json", "markdown", "html", "text"], Field(description="Document format")],
    output_path: Annotated[
        str | None,
        Field(
            description="Write to this file instead of answering",
            max_length=4096,
        ),
    ] = None,
    overwrite: Annotated[bool, Field(description="Replace an existing output_path")] = False,
) -> ExportOutput:
    """Export a session as JSON (re-importable), Markdown, HTML or text."""
    state = load_state(ctx, session_id)
    document = _render(ctx, state, format)
    if output_path is None:
        return ExportOutput(
            session_id=session_id, format=format, content=document, output_path=None, bytes_written=None
        ).with_message(
            Text(en=f"Exported '{session_id}' as {format}.", zh=f"已将 '{session_id}' 导出为 {format}。")
        )
    from hostd_fs import atomic_write, resolve_beneath

    path = resolve_beneath(output_path, roots(), allow_missing=True, expect="file")
    if path.exists() and not overwrite:
        raise ToolError(
            "ALREADY_EXISTS",
            Text(en=f"{path} already exists.", zh=f"{path} 已存在。"),
            hint=Text(
                en="Pass overwrite=true to replace it, or choose another path.",
                zh="传入 overwrite=true 以覆盖，或换一个路径。",
            ),
            details={"path": str(path)},
        )
    written = atomic_write(path, document)  # makes missing parent folders beneath the root
    mime_type = {"json": "application/json", "markdown": "text/markdown", "html": "text/html"}.get(
        format, "text/plain"
    )
    return (
        ExportOutput(
            session_id=session_id, format=format, content=None, output_path=str(path), bytes_written=written
        )
        .with_links(ResourceLink.file(path.path, mime_type))
        .with_message(Text(en=f"Wrote {path}.", zh=f"已写入 {path}。"))
    )


def _read_import(roots: Roots, path_or_data: str) -> Any:
    text = path_or_data
    if not looks_like_json(path_or_data):
        from hostd_fs import FsError, read_beneath, resolve_beneath

        path = resolve_beneath(path_or_data, roots(), allow_missing=False, expect="file")
        try:
            text = read_beneath(path, max_bytes=MAX_IMPORT_CHARS).decode("utf-8")
        except FsError as exc:
            if exc.reason != "FILE_TOO_LARGE":
                raise
            raise ToolError(
                "TOO_LONG",
                Text(en=f"{path} is too large to import.", zh=f"{path} 太大，无法导入。"),
                details={"path": str(path), "limit_bytes": MAX_IMPORT_CHARS},
            ) from None
        except UnicodeDecodeError as exc:
            raise ToolError(
                "READ_ERROR",
                Text(en=f"Cannot read {path} as UTF-8 text.", zh=f"无法以 UTF-8 文本读取 {path}。"),
                details={"path": str(path), "reason": type(exc).__name__},
            ) from None
    try:
        return json.loads(text, parse_constant=refuse_constant)
    except NotFiniteNumber as exc:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en=f"The import holds {exc.name}, which is not a JSON value.",
                zh=f"导入内容含有 {exc.name}，它不是合法的 JSON 值。",
            ),
            hint=Text(en="Replace it with a number or null.", zh="请改为具体数字或 null。"),
            details={"argument": "path_or_data", "value": exc.name},
        ) from None
    except RecursionError:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en="The import is nested too deeply to be a session.",
                zh="导入内容嵌套过深，不可能是会话。",
            ),
            hint=Text(
                en="Pass a file written by export_session(format='json'), or its content.",
                zh="请传入 export_session(format='json') 生成的文件或其内容。",
            ),
            details={"argument": "path_or_data"},
        ) from None
    except ValueError as exc:
        where = f"（第 {exc.lineno} 行第 {exc.colno} 列）" if isinstance(exc, json.JSONDecodeError) else ""
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(en=f"The import is not valid JSON: {exc}.", zh=f"导入内容不是合法的 JSON{where}。"),
            hint=Text(
                en="Pass a file written by export_session(format='json'), or its content.",
                zh="请传入 export_session(format='json') 生成的文件或其内容。",
            ),
            details={"argument": "path_or_data"},
        ) from None


def looks_like_json(path_or_data: str) -> bool:
    """JSON text rather than a path: an object, an array or a string (a path starts with none of these)."""
    return path_or_data.lstrip()[:1] in ("{", "[", '"')


def import_session(
    ctx: Context,
    roots: Roots,
    path_or_data: Annotated[
        str,
        Field(
            description="Path of a JSON export, or its text",
            min_length=1,
            max_length=MAX_IMPORT_CHARS,
        ),
    ],
    session_id: Annotated[
        str | None,
        Field(description="Id to store under", pattern=SESSION_ID_PATTERN),
    ] = None,
    overwrite: Annotated[bool, Field(description="Replace an existing session")] = False,
) -> ImportOutput:
    """Import a session from an export_session JSON or a spec-shaped document."""
    from hostd_deep_thinking.importing import parse_import

    raw = _read_import(roots, path_or_data)
    document = parse_import(raw, session_id, importer=ctx.member)  # ImportProblem: INVALID_ARGUMENT
    store = session_store(ctx)
    target = document["session_id"]
    replaced = store.exists(target)
    try:
        state = store.create(document, replace=overwrite)
    except SessionExists as exc:
        # This tool can also store the session under another id.
        exc.hint = Text(
            en="Pass overwrite=true (a backup is taken first) or another session_id.",
            zh="传入 overwrite=true（会先备份）或指定其他 session_id。",
        )
        raise
    ctx.resource_changed(resource_uri(target))
    return ImportOutput(session=summary_of(state), replaced=replaced and overwrite, warnings=[]).with_message(
        Text(
            en=f"Imported session '{target}' ({len(state.thoughts)} thoughts).",
            zh=f"已导入会话 '{target}'（{len(state.thoughts)} 条思考）。",
        )
    )


def visualize_session(
    ctx: Context,
    session_id: SessionId,
    format: Annotated[Literal["mermaid", "ascii"], Field(description="Diagram format")] = "mermaid",
) -> VisualizeOutput:
    """Draw a session as a Mermaid flowchart or an ASCII chart."""
    from hostd_deep_thinking.visualize import to_ascii, to_mermaid

    state = load_state(ctx, session_id)
    with session_store(ctx).session_lock(session_id):
        diagram = to_mermaid(state, ctx.language) if format == "mermaid" else to_ascii(state, ctx.language)
    return VisualizeOutput(session_id=session_id, format=format, diagram=diagram).with_message(
        Text(en=f"{format} diagram of '{session_id}'.", zh=f"会话 '{session_id}' 的 {format} 图。")
    )
