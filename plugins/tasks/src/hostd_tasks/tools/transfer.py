"""export_tasks and import_tasks: the list (or a filter of it) as a JSON document that round-trips
everything, or as Markdown; in the answer or in a file inside the roots (the document's format is
``hostd_tasks.transfer``, its reading and writing ``store.transfer``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from hostd import ResourceLink, Roots, Text, ToolContext, ToolError
from hostd_tasks.models import ExportTasksOutput, ImportTasksOutput, Settings
from hostd_tasks.resources import label_uri, resource_uri
from hostd_tasks.rules import Priority, Status
from hostd_tasks.tools.arguments import Label, TaskId
from hostd_tasks.wording import counted

PathArg = Annotated[str, Field(min_length=1, max_length=4096)]


def export_tasks(
    ctx: ToolContext[Settings],
    roots: Roots,
    format: Annotated[
        Literal["json", "markdown"],
        Field(description="json: for import_tasks, everything kept; markdown: for people"),
    ] = "json",
    status: Annotated[Status | None, Field(description="Only tasks with this status")] = None,
    priority: Annotated[Priority | None, Field(description="Only tasks with this priority")] = None,
    label: Annotated[Label | None, Field(description="Only tasks with this label")] = None,
    task_ids: Annotated[
        list[TaskId] | None, Field(description="Only these tasks", min_length=1, max_length=1000)
    ] = None,
    output_path: Annotated[
        PathArg | None, Field(description="Write the document to this file instead")
    ] = None,
    overwrite: Annotated[bool, Field(description="Replace an existing output_path")] = False,
) -> ExportTasksOutput:
    """Export the task list (or the tasks a filter selects, with what they wait on) as a JSON document
    for import_tasks (history, claims, leases, dependencies, subtasks, labels, session links) or as
    Markdown, in the answer or into output_path.
    """
    from hostd_db import utc_stamp

    from hostd_tasks import transfer
    from hostd_tasks.store import TaskStore
    from hostd_tasks.store.transfer import Selection
    from hostd_tasks.store.transfer import export_tasks as read_export

    selection = Selection(
        status=status,
        priority=priority,
        label=label,
        task_ids=None if task_ids is None else tuple(dict.fromkeys(task_ids)),
    )
    exported = read_export(TaskStore(ctx.database()), selection)
    filters = {"status": status, "priority": priority, "label": label, "task_ids": task_ids}
    document: dict[str, Any] = {
        "format": transfer.FORMAT_NAME,
        "version": transfer.FORMAT_VERSION,
        "exported_at": utc_stamp(),
        "filters": {name: value for name, value in filters.items() if value is not None},
        "tasks": exported.tasks,
    }
    count = len(exported.tasks)
    along = Text(
        en=f" ({exported.brought_along} of them because the selected tasks wait on them)",
        zh=f"（其中 {exported.brought_along} 个因被选中的任务依赖而一并导出）",
    )
    more = along if exported.brought_along else Text.same("")
    if output_path is not None:
        pieces = transfer.json_pieces(document) if format == "json" else transfer.markdown(document)
        target, written = _write(roots, output_path, overwrite, pieces)
        return (
            ExportTasksOutput(
                format=format,
                count=count,
                brought_along=exported.brought_along,
                output_path=str(target),
                bytes_written=written,
            )
            .with_links(
                ResourceLink.file(target, "application/json" if format == "json" else "text/markdown")
            )
            .with_message(
                Text(
                    en=f"Exported {counted(count, 'task')} to {target}",
                    zh=f"已将 {count} 个任务导出到 {target}",
                )
                + more
                + Text(en=".", zh="。")
            )
        )
    if format == "markdown":
        answer = ExportTasksOutput(
            format=format,
            count=count,
            brought_along=exported.brought_along,
            markdown=transfer.markdown(document),
        )
        size = len(answer.markdown or "")
    else:
        answer = ExportTasksOutput(
            format=format, count=count, brought_along=exported.brought_along, document=document
        )
        size = transfer.document_size(document, ctx.settings.max_export_chars)
    if size > ctx.settings.max_export_chars:
        raise ToolError(
            "TOO_LONG",
            Text(
                en=f"The export of {counted(count, 'task')} is larger than an answer may be "
                f"({ctx.settings.max_export_chars} characters).",
                zh=f"{count} 个任务的导出超过了单次回答的上限（{ctx.settings.max_export_chars} 个字符）。",
            ),
            hint=Text(
                en="Pass output_path to write it to a file (then import_tasks input_path=...), or export "
                "fewer tasks (status, priority, label, task_ids).",
                zh="请传 output_path 将其写入文件（再用 import_tasks input_path=... 导入），"
                "或导出更少的任务（status、priority、label、task_ids）。",
            ),
            details={"argument": "output_path", "tasks": count, "limit": ctx.settings.max_export_chars},
        )
    return answer.with_message(
        Text(en=f"Exported {counted(count, 'task')}", zh=f"已导出 {count} 个任务")
        + more
        + Text(
            en=". Pass the document to import_tasks as data." if format == "json" else ".",
            zh="。可将 document 作为 data 传给 import_tasks。" if format == "json" else "。",
        )
    )


def _write(roots: Roots, output_path: str, overwrite: bool, text: str | Iterable[bytes]) -> tuple[Path, int]:
    from hostd_fs import atomic_write, output_target

    target = output_target(output_path, roots(), overwrite=overwrite)
    return target.path, atomic_write(target, text)


def _read(roots: Roots, input_path: str) -> tuple[Path, Any]:
    """The JSON document in the file at input_path (inside the roots), read up to the size limit."""
    from hostd_fs import FsError, read_beneath, resolve_beneath

    from hostd_tasks.transfer import MAX_DOCUMENT_BYTES

    rooted = resolve_beneath(input_path, roots(), allow_missing=False, expect="file")
    target = rooted.path
    try:
        raw = read_beneath(rooted, max_bytes=MAX_DOCUMENT_BYTES)
    except FsError as exc:
        if exc.reason != "FILE_TOO_LARGE":
            raise
        size = target.stat().st_size if target.exists() else MAX_DOCUMENT_BYTES + 1
        raise _too_large("input_path", size) from None
    try:
        return target, json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # JSON nested past the parser's depth too
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(en=f"{target} is not a JSON document.", zh=f"{target} 不是 JSON 文档。"),
            hint=Text(
                en="Give a file export_tasks wrote with format=json (the Markdown export is for people "
                "only).",
                zh="请给出 export_tasks 以 format=json 写出的文件（Markdown 导出只供人阅读）。",
            ),
            details={"argument": "input_path", "problem": "not_json"},
        ) from None


def _too_large(argument: str, size: int) -> ToolError:
    from hostd_tasks.transfer import MAX_DOCUMENT_BYTES

    return ToolError(
        "TOO_LONG",
        Text(
            en=f"The document holds {size} bytes or more; import_tasks reads at most {MAX_DOCUMENT_BYTES}. "
            "Nothing was imported.",
            zh=f"该文档至少有 {size} 字节；import_tasks 最多读取 {MAX_DOCUMENT_BYTES} 字节。未导入任何内容。",
        ),
        hint=Text(
            en="Export fewer tasks per document (export_tasks takes status, priority, label and task_ids) "
            "and import them one after another.",
            zh="请每个文档导出更少的任务（export_tasks 可按 status、priority、label、task_ids 筛选），"
            "再依次导入。",
        ),
        details={"argument": argument, "problem": "too_large", "bytes": size, "limit": MAX_DOCUMENT_BYTES},
    )


def import_tasks(
    ctx: ToolContext[Settings],
    roots: Roots,
    data: Annotated[
        dict[str, Any] | None, Field(description="An export_tasks JSON document (or its whole answer)")
    ] = None,
    input_path: Annotated[
        PathArg | None, Field(description="Instead of data: a file export_tasks wrote")
    ] = None,
) -> ImportTasksOutput:
    """Import an export_tasks JSON document (data) or file (input_path): all or nothing; tasks already
    here are recognised and left alone (importing twice changes nothing); a task whose id is taken
    gets a new id, and every reference to it follows (the answer maps old ids to new).
    """
    from hostd_tasks import transfer
    from hostd_tasks.store import TaskStore
    from hostd_tasks.store.transfer import import_tasks as write_import

    if (data is None) == (input_path is None):
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(en="Give exactly one of data and input_path.", zh="data 与 input_path 必须且只能给出一个。"),
            hint=Text(
                en="data takes what export_tasks answered; input_path a file inside the allowed roots.",
                zh="data 接收 export_tasks 的结果；input_path 接收允许目录内的文件。",
            ),
            details={"argument": "data" if data is None else "input_path"},
        )
    target: Path | None = None
    argument = "data"
    if input_path is not None:
        argument = "input_path"
        target, data = _read(roots, input_path)
        if not isinstance(data, dict):
            data = {"format": None}
    else:
        assert data is not None
        size = transfer.document_size(data, transfer.MAX_DOCUMENT_BYTES)
        if size > transfer.MAX_DOCUMENT_BYTES:
            raise _too_large("data", size)
    try:
        tasks, version = transfer.load_document(data)
    except transfer.DocumentError as exc:
        raise _refused(argument, exc.problems) from None
    data = None  # the checked tasks hold all of it: the raw document (a file's) can go before the write
    result = write_import(TaskStore(ctx.database()), tasks, by=ctx.member)
    ids = {
        task.task_id: result.created.get(task.task_id) or result.already_present[task.task_id]
        for task in tasks
    }
    ctx.resource_changed(*(resource_uri(task_id) for task_id in result.created.values()))
    ctx.resource_changed(
        *(
            label_uri(label)
            for task in tasks
            if task.task_id in result.created
            for label in task.labels_stored
        )
    )
    created, present, renumbered = len(result.created), len(result.already_present), len(result.renumbered)
    answer = ImportTasksOutput(
        format_version=version,
        total=len(tasks),
        created=created,
        already_present=present,
        renumbered=result.renumbered,
        ids=ids,
        input_path=None if target is None else str(target),
    )
    return answer.with_message(
        Text(
            en=f"Imported {counted(len(tasks), 'task')}: {created} created ({renumbered} under a new id, "
            f"see renumbered), {present} already here and left as they are.",
            zh=f"已导入 {len(tasks)} 个任务：新建 {created} 个（其中 {renumbered} 个使用了新 ID，"
            f"见 renumbered），{present} 个已存在，保持不变。",
        )
    )


# What each problem of a document means, in both languages (``{where}``: the place in it).
_PROBLEMS: dict[str, tuple[str, str]] = {
    "unknown_format": (
        "'format' is not 'hostd-tasks-export'",
        "format 不是 'hostd-tasks-export'",
    ),
    "unknown_version": (
        "'version' is not a format version this server reads",
        "version 不是本服务可读取的格式版本",
    ),
    "too_many_tasks": ("the document holds too many tasks", "文档中的任务过多"),
    "duplicate_task_id": (
        "{where} names a task id the document already used",
        "{where} 的任务 ID 在文档中重复",
    ),
    "duplicate_origin": ("{where} repeats another task's origin", "{where} 与另一个任务的 origin 重复"),
    "dangling_reference": (
        "{where} names a task the document does not hold",
        "{where} 指向文档中不存在的任务",
    ),
    "dependency_cycle": ("tasks wait on each other in a cycle: {cycle}", "任务之间相互等待，形成环：{cycle}"),
    "waits_on_itself": (
        "{where}: the task depends on itself or is its own parent",
        "{where}：任务依赖自身或以自身为父任务",
    ),
    "duplicate_dependency": ("{where}: a dependency is named twice", "{where}：同一依赖出现了两次"),
    "lease_without_claim": (
        "{where}: a lease (lease_expires_at) is held exactly while a task is in_progress",
        "{where}：只有 in_progress 的任务才有领取期限（lease_expires_at），反之亦然",
    ),
    "notes_too_long": ("{where}: the notes together are too long", "{where}：备注总长度超出上限"),
    "invalid_time": ("{where} is not an ISO 8601 time", "{where} 不是 ISO 8601 时间"),
    "invalid_unicode": (
        "{where} holds a lone surrogate (not valid Unicode)",
        "{where} 含有孤立的代理码位（不是有效的 Unicode）",
    ),
    "blank_title": ("{where} is blank", "{where} 为空白"),
    "missing": ("{where} is missing", "缺少 {where}"),
    "extra_forbidden": ("{where} is not a field of a task", "{where} 不是任务的字段"),
    "string_type": ("{where} must be text", "{where} 必须是文本"),
    "int_type": ("{where} must be a whole number", "{where} 必须是整数"),
    "int_parsing": ("{where} must be a whole number", "{where} 必须是整数"),
    "list_type": ("{where} must be a list", "{where} 必须是列表"),
    "dict_type": ("{where} must be an object", "{where} 必须是对象"),
    "model_type": ("{where} must be an object", "{where} 必须是对象"),
    "literal_error": ("{where} is not one of the allowed values", "{where} 不是允许的取值"),
    "string_pattern_mismatch": (
        "{where} does not have the form of an id or label",
        "{where} 不符合 ID 或标签的格式",
    ),
    "string_too_long": ("{where} is too long", "{where} 过长"),
    "string_too_short": ("{where} is empty", "{where} 为空"),
    "too_long": ("{where} has too many entries", "{where} 的条目过多"),
    "too_deep": ("{where} is nested too deep", "{where} 嵌套过深"),
    "less_than_equal": ("{where} is too large", "{where} 的值过大"),
    "greater_than_equal": ("{where} is too small", "{where} 的值过小"),
}


def _sentence(details: dict[str, Any]) -> Text:
    en, zh = _PROBLEMS.get(
        details["problem"], ("{where} has a value this server cannot import", "{where} 的值无法导入")
    )
    cycle = " -> ".join(details.get("cycle") or [])
    return Text(
        en=en.format(where=details["where"], cycle=cycle), zh=zh.format(where=details["where"], cycle=cycle)
    )


def _refused(argument: str, problems: list[Any]) -> ToolError:
    """One refusal for every problem of a document: the first in the message, all in details."""
    found = [problem.as_details() for problem in problems]
    first = _sentence(found[0])
    more = len(found) - 1
    also = (
        Text(en=f" (and {counted(more, 'other problem')})", zh=f"（另有 {more} 个问题）")
        if more
        else Text.same("")
    )
    code = "TOO_LONG" if found[0]["problem"] == "too_many_tasks" else "INVALID_ARGUMENT"
    return ToolError(
        code,
        Text(en=f"{argument} cannot be imported: ", zh=f"{argument} 无法导入：")
        + first
        + also
        + Text(en=". Nothing was imported.", zh="。未导入任何内容。"),
        hint=Text(
            en="Pass a document export_tasks wrote (format 'hostd-tasks-export', version 1): every task's "
            "dependencies and parent inside the document, no task waiting on itself; details.problems lists "
            "each problem with its place (where) and task.",
            zh="请传入 export_tasks 写出的文档（format 为 'hostd-tasks-export'、version 为 1）："
            "每个任务的依赖和父任务都在文档中，且没有任务等待自身；"
            "details.problems 列出了每个问题的位置（where）和任务。",
        ),
        details={
            "argument": argument,
            "problem": found[0]["problem"],
            "where": found[0]["where"],
            **({"cycle": found[0]["cycle"]} if "cycle" in found[0] else {}),
            "problems": found,
        },
    )
