"""export_memories and import_memories: the export document (in the answer, in pages, or in a
file inside the roots) and the official memory server's JSONL knowledge graph.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from hostd.paging import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, encode_cursor
from pydantic import Field

from hostd import NotConfirmed, ResourceLink, Roots, Text, ToolContext, ToolError
from hostd_memory.models import (
    ExportMemoriesOutput,
    ImportItemRef,
    ImportMemoriesOutput,
    ImportProblem,
    Settings,
)
from hostd_memory.resources import resource_uri
from hostd_memory.tools.answers import (
    budget_of,
    collect,
    paged_message,
)
from hostd_memory.tools.arguments import (
    DomainArg,
    domain_filter,
    uri_problem,
)

if TYPE_CHECKING:
    from hostd_memory.store import Filters, MemoryRow, MemoryStore


def export_memories(
    ctx: ToolContext[Settings],
    roots: Roots,
    domain: DomainArg = None,
    include_versions: Annotated[bool, Field(description="With every version")] = False,
    include_relations: Annotated[bool, Field(description="With aliases and mentioned URIs")] = False,
    output_path: Annotated[
        str | None,
        Field(
            description="Write the whole document to this JSON file instead",
            min_length=1,
            max_length=4096,
        ),
    ] = None,
    overwrite: Annotated[bool, Field(description="Replace an existing output_path")] = False,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> ExportMemoriesOutput:
    """Export memories (all but deleted) as a JSON document for import_memories, in pages or whole into
    output_path.
    """
    from hostd_db import utc_stamp

    from hostd_memory import transfer
    from hostd_memory.store import Filters, memory_store, mentioned_relations

    filters = Filters(domain=domain_filter(domain))
    store = memory_store(ctx)

    def entry(memory: MemoryRow) -> dict[str, Any]:
        versions = store.all_versions(memory) if include_versions else None
        relations = None
        if include_relations:
            relations = {
                "mentions": [u for u, _ in mentioned_relations(store, memory)],
                "mentioned_by": store.mentioned_by(memory),
            }
        links = store.outgoing_links([memory.id]).get(memory.id)
        return transfer.exported_memory(memory, versions=versions, relations=relations, links=links)

    document = transfer.document_header(filters.domain, include_versions, include_relations, utc_stamp())
    if output_path is not None:
        return _export_to_file(ctx, roots, store, filters, entry, document, output_path, overwrite)
    arguments = {
        "domain": filters.domain,
        "include_versions": include_versions,
        "include_relations": include_relations,
        "overwrite": overwrite,
    }
    after = decode_cursor(cursor, "export_memories", arguments)
    memories, last, more = collect(
        lambda a, n: store.export_page(filters, int(a or 0), n),
        lambda m: m.id,
        entry,
        after,
        budget=budget_of(ctx) - len(json.dumps(document)),
        max_items=limit,
        size=lambda item: len(json.dumps(item, ensure_ascii=False)) + 2,
    )
    document["memories"] = memories
    result = ExportMemoriesOutput(
        count=len(memories),
        document=document,
        truncated=more,
        next_cursor=encode_cursor("export_memories", arguments, last) if more else None,
    )
    return result.with_message(paged_message(len(memories), more, en="memories exported", zh="条记忆已导出"))


def _export_to_file(
    ctx: ToolContext[Settings],
    roots: Roots,
    store: MemoryStore,
    filters: Filters,
    entry: Callable[[MemoryRow], Any],
    document: dict[str, Any],
    output_path: str,
    overwrite: bool,
) -> ExportMemoriesOutput:
    from hostd_fs import atomic_write, output_target

    target = output_target(output_path, roots(), overwrite=overwrite)
    memories: list[Any] = []
    last = 0
    while True:
        rows = store.export_page(filters, last, 200)
        memories.extend(entry(m) for m in rows)
        if len(rows) < 200:
            break
        last = rows[-1].id
    document["memories"] = memories
    if ctx.cancelled:  # the last safe point: the file is written whole or not at all
        raise _stopped("export_memories", kept=Text(en="No file was written.", zh="未写入任何文件。"))
    written = atomic_write(target, json.dumps(document, ensure_ascii=False, indent=1))
    return (
        ExportMemoriesOutput(count=len(memories), output_path=str(target), bytes_written=written)
        .with_links(ResourceLink.file(target.path, "application/json"))
        .with_message(
            Text(
                en=f"Exported {len(memories)} memories to {target}.",
                zh=f"已将 {len(memories)} 条记忆导出到 {target}。",
            )
        )
    )


# The largest file import_memories reads from input_path.
MAX_INPUT_BYTES = 256 * 1024 * 1024


def _input_document(roots: Roots, input_path: str) -> tuple[Path, str]:
    """The file at input_path (inside the roots) as text, read beneath the root's folder descriptor
    (a folder swapped for a symlink meanwhile is refused), without blocking on a FIFO."""
    from hostd_fs import FsError, read_beneath, resolve_beneath

    rooted = resolve_beneath(input_path, roots(), allow_missing=False, expect="file")
    target = rooted.path
    try:
        raw = read_beneath(rooted, max_bytes=MAX_INPUT_BYTES)
    except FsError as exc:
        if exc.reason != "FILE_TOO_LARGE":
            raise
        size = target.stat().st_size if target.exists() else MAX_INPUT_BYTES + 1
        raise ToolError(
            "TOO_LONG",
            Text(
                en=f"{target} holds {size} bytes; import reads at most {MAX_INPUT_BYTES} bytes.",
                zh=f"{target} 有 {size} 字节；导入最多读取 {MAX_INPUT_BYTES} 字节。",
            ),
            hint=Text(
                en="Split the file, or export fewer memories per file (export_memories takes a domain).",
                zh="请拆分文件，或每个文件导出更少的记忆（export_memories 可按域导出）。",
            ),
            details={"argument": "input_path", "bytes": size, "limit": MAX_INPUT_BYTES},
        ) from None
    try:
        return target, raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en=f"{target} is not UTF-8 text (byte {exc.start}).",
                zh=f"{target} 不是 UTF-8 文本（第 {exc.start} 字节）。",
            ),
            hint=Text(
                en="Give a file written by export_memories or by the official memory server (JSONL).",
                zh="请给出由 export_memories 或官方 memory 服务器写出的文件（JSONL）。",
            ),
            details={"argument": "input_path", "byte": exc.start},
        ) from None


def _unknown_file(target: Path) -> ToolError:
    from hostd_memory import transfer

    return ToolError(
        "INVALID_ARGUMENT",
        Text(
            en=f"{target} is neither an export of this server nor a file of the official memory server.",
            zh=f"{target} 既不是本服务导出的文件，也不是官方 memory 服务器的文件。",
        ),
        hint=Text(
            en=f"Give a JSON document with format '{transfer.FORMAT_NAME}' (what export_memories writes), or "
            "the JSONL file of @modelcontextprotocol/server-memory (its MEMORY_FILE_PATH): one entity or "
            "relation per line.",
            zh=f"请给出 format 为 '{transfer.FORMAT_NAME}' 的 JSON 文档（export_memories 写出的文件），或 "
            "@modelcontextprotocol/server-memory 的 JSONL 文件（其 MEMORY_FILE_PATH）：每行一个实体或关系。",
        ),
        details={"argument": "input_path"},
    )


def _graph_file_error(target: Path, problems: list[dict[str, Any]]) -> ToolError:
    lines = ", ".join(str(p["line"]) for p in problems[:10])
    more = "..." if len(problems) > 10 else ""
    return ToolError(
        "INVALID_ARGUMENT",
        Text(
            en=f"{target} has {len(problems)} malformed line(s) (line {lines}{more}); nothing was imported.",
            zh=f"{target} 有 {len(problems)} 行格式错误（第 {lines}{more} 行）；未导入任何内容。",
        ),
        hint=Text(
            en='Each line must be {"type": "entity", "name", "entityType", "observations": [...]} or '
            '{"type": "relation", "from", "to", "relationType"}; fix or remove the lines named in '
            "details.lines and import again.",
            zh='每行必须是 {"type": "entity", "name", "entityType", "observations": [...]} 或 '
            '{"type": "relation", "from", "to", "relationType"}；'
            "请修正或删除 details.lines 所列的行后重新导入。",
        ),
        details={
            "argument": "input_path",
            "lines": [{**p, "message": problem_text(p["problem"], None)} for p in problems],
        },
    )


def import_memories(
    ctx: ToolContext[Settings],
    roots: Roots,
    data: Annotated[
        dict[str, Any] | None,
        Field(description="An export_memories document (or its whole answer)"),
    ] = None,
    strategy: Annotated[
        Literal["skip", "overwrite", "merge"],
        Field(description="For existing URIs"),
    ] = "skip",
    input_path: Annotated[
        str | None,
        Field(
            description="Instead of data: a file",
            min_length=1,
            max_length=4096,
        ),
    ] = None,
) -> ImportMemoriesOutput:
    """Import an export_memories document (data) or file (input_path), or the official memory server's JSONL;
    all or nothing, and importing twice changes nothing.
    """
    from hostd_memory import transfer
    from hostd_memory.store import ImportReport, memory_store
    from hostd_memory.store.importing import ImportStopped

    if (data is None) == (input_path is None):
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(en="Give exactly one of data and input_path.", zh="data 与 input_path 必须且只能给出一个。"),
            hint=Text(
                en="data takes what export_memories answered; input_path a file inside the allowed roots.",
                zh="data 接收 export_memories 的结果；input_path 接收允许目录内的文件。",
            ),
            details={"argument": "data" if data is None else "input_path"},
        )
    graph: Any = None
    target: Path | None = None
    if input_path is not None:
        target, text = _input_document(roots, input_path)
        if transfer.looks_like_graph(text):
            try:
                graph = transfer.official_graph_document(text)
            except transfer.GraphFileError as exc:
                raise _graph_file_error(target, exc.problems) from None
            data = graph.document
        else:
            try:
                data = json.loads(text)
            except ValueError:
                data = None
            if not isinstance(data, dict):
                raise _unknown_file(target)
    assert data is not None
    try:
        document, original_version = transfer.load_document(data)
    except transfer.DocumentError as exc:
        argument = "data" if input_path is None else "input_path"
        wrong = problem_text(exc.problem, exc.where)
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en=f"{argument} is not an importable document: {wrong.en}.",
                zh=f"{argument} 不是可导入的文档：{wrong.zh}。",
            ),
            hint=Text(
                en=f"Pass what export_memories returned: an object with format "
                f"'{transfer.FORMAT_NAME}', version 1-{transfer.FORMAT_VERSION} and a list of memories.",
                zh=f"请传入 export_memories 的结果：format 为 '{transfer.FORMAT_NAME}'、version 为 "
                f"1-{transfer.FORMAT_VERSION}、并含 memories 列表的对象。",
            ),
            details={"argument": argument, "problem": exc.problem, "where": exc.where},
        ) from None
    items, problems = transfer.check_items(document, ctx.member)
    store = memory_store(ctx)
    if strategy == "overwrite":
        _confirm_overwrite(ctx, store, [str(item.uri) for item in items])
    report = ImportReport()
    try:
        store.import_items(items, strategy, report, author=ctx.member, cancelled=lambda: ctx.cancelled)
    except ImportStopped:
        nothing = Text(en="Nothing was imported.", zh="未导入任何内容。")
        raise _stopped("import_memories", kept=nothing) from None
    written = (*report.created, *report.overwritten, *report.merged)
    ctx.resource_changed(*(resource_uri(uri) for uri in written))
    found = [*problems, *report.errors]
    if graph is not None:
        for problem in found:
            problem["line"] = _graph_line_of(graph, problem)
        found += graph.problems
    errors = sorted(
        (_import_problem(p) for p in found),
        key=lambda e: (e.index if e.index is not None else -1, e.line or 0),
    )
    result = ImportMemoriesOutput(
        strategy=strategy,
        format_version=original_version,
        created=len(report.created),
        skipped=len(report.skipped),
        overwritten=len(report.overwritten),
        merged=len(report.merged),
        unchanged=len(report.unchanged),
        links_added=report.links_added,
        source="official-memory-graph" if graph is not None else "hostd-memory-export",
        input_path=str(target) if target is not None else None,
        errors=errors[:200],
    )
    return result.with_message(
        Text(
            en=f"Imported: {result.created} created, {result.skipped} skipped, "
            f"{result.overwritten} overwritten, {result.merged} merged, "
            f"{result.unchanged} unchanged, {result.links_added} link(s) added, {len(errors)} error(s).",
            zh=f"导入完成：新建 {result.created}，跳过 {result.skipped}，"
            f"覆盖 {result.overwritten}，合并 {result.merged}，"
            f"未变 {result.unchanged}，新增链接 {result.links_added}，错误 {len(errors)}。",
        )
    )


#: How many of the memories an overwriting import replaces its confirmation names.
_NAMED_IN_QUESTION = 5


def _stopped(tool: str, *, kept: Text) -> ToolError:
    """The answer of a call the client cancelled (no one may read it; a task shows it cancelled)."""
    return ToolError(
        "CANCELLED",
        Text(en=f"{tool} was cancelled. {kept.en}", zh=f"{tool} 已取消。{kept.zh}"),
        hint=Text(en="Call it again to do it.", zh="如仍需要，请重新调用。"),
    )


def _confirm_overwrite(ctx: ToolContext[Settings], store: MemoryStore, uris: list[str]) -> None:
    """Ask the user before an import replaces memories that exist (nothing is asked when it replaces
    none); ``NotConfirmed`` unless they accept or the client cannot ask."""
    existing = sorted(store.existing_uris(uris))
    if not existing:
        return
    named = ", ".join(existing[:_NAMED_IN_QUESTION])
    more = len(existing) - _NAMED_IN_QUESTION
    answer = ctx.confirm_sync(
        Text(
            en=f"Replace {len(existing)} existing memory(ies) with the imported content: {named}"
            + (f" and {more} more" if more > 0 else "")
            + "? Their current content stays in their version history.",
            zh=f"用导入的内容替换 {len(existing)} 条已有记忆：{named}"
            + (f" 等另外 {more} 条" if more > 0 else "")
            + "？其当前内容保留在版本历史中。",
        )
    )
    if answer == "declined" or answer == "cancelled":
        raise NotConfirmed(
            answer,
            Text(
                en=f"Nothing was imported; the {len(existing)} existing memory(ies) are unchanged.",
                zh=f"未导入任何内容；{len(existing)} 条已有记忆未被改动。",
            ),
        )


def _graph_line_of(graph: Any, problem: dict[str, Any]) -> int | None:
    """The file line a problem of a converted knowledge graph comes from (a relation's for a link)."""
    index = problem.get("index")
    if index is None or not 0 <= index < len(graph.entity_lines):
        return None
    field = str(problem.get("field") or "")
    if field.startswith("links."):
        number = int(field.split(".")[1])
        links = graph.link_lines[index]
        return int(links[number]) if number < len(links) else None
    return int(graph.entity_lines[index])


# What each import problem means for the client: a bad item is the caller's INVALID_ARGUMENT; a URI
# already in use is ALREADY_EXISTS; items contradicting each other are a CONFLICT.
_IMPORT_PROBLEM_CODES = {
    "alias_exists": "ALREADY_EXISTS",
    "alias_taken": "ALREADY_EXISTS",
    "alias_cycle": "CONFLICT",
    "link_target_missing": "NOT_FOUND",
    "link_source_missing": "NOT_FOUND",
}


def _import_problem(problem: dict[str, Any]) -> ImportProblem:
    kind = str(problem["problem"]).partition(":")[0]
    cycle = problem.get("cycle")
    return ImportProblem(
        index=problem.get("index"),
        uri=problem.get("uri"),
        code=_IMPORT_PROBLEM_CODES.get(kind, "INVALID_ARGUMENT"),
        field=problem.get("field"),
        line=problem.get("line"),
        problem=problem["problem"],
        message=problem_text(problem["problem"], problem.get("field"), cycle),
        cycle=[ImportItemRef(**member) for member in cycle] if cycle else None,
    )


def problem_text(problem: str, field: str | None, cycle: list[dict[str, Any]] | None = None) -> Text:
    """What is wrong with an import (a document, an item's ``field``, a file's line) in both languages.

    ``problem`` is the stable code the answer also carries (``<kind>`` or ``<kind>:<detail>``, the
    kind of a field check being pydantic's error type); the sentence never shows a code or
    pydantic's own English text, only the field's name and what to fix.
    """
    from hostd_memory.transfer import FORMAT_NAME, MAX_IMPORT_ITEMS

    kind, _, detail = problem.partition(":")
    name = field or "?"
    members = ", ".join(f"{m['index']} ({m['uri']})" for m in cycle or [])
    uri = uri_problem(detail)
    texts = {
        "invalid_uri": (f"invalid URI in {name} ({uri.en})", f"{name} 中的 URI 无效（{uri.zh}）"),
        "unknown_format": (
            f"{name} is not '{FORMAT_NAME}'",
            f"{name} 不是 '{FORMAT_NAME}'",
        ),
        "unknown_version": (
            f"{name} is not a format version this server reads",
            f"{name} 不是本服务可读取的格式版本",
        ),
        "missing_memories": (f"{name} is not a list of memories", f"{name} 不是记忆列表"),
        "list_type": (f"{name} must be a list", f"{name} 必须是列表"),
        "dict_type": (f"{name} must be an object", f"{name} 必须是对象"),
        "model_type": (f"{name} must be an object", f"{name} 必须是对象"),
        "model_attributes_type": (f"{name} must be an object", f"{name} 必须是对象"),
        "bool_type": (f"{name} must be true or false", f"{name} 必须是 true 或 false"),
        "bool_parsing": (f"{name} must be true or false", f"{name} 必须是 true 或 false"),
        "too_long": (f"{name} has too many entries", f"{name} 的条目过多"),
        "too_short": (f"{name} has too few entries", f"{name} 的条目过少"),
        "string_too_short": (f"{name} is empty", f"{name} 为空"),
        "not_json": ("the line is not JSON", "该行不是 JSON"),
        "not_entity_or_relation": (
            'the line is neither an entity nor a relation ("type")',
            "该行既不是实体也不是关系（type）",
        ),
        "bad_name": ("the entity's name is missing or empty", "实体的 name 缺失或为空"),
        "bad_entity_type": ("the entity's entityType is not text", "实体的 entityType 不是文本"),
        "bad_observations": (
            "the entity's observations are not a list of texts",
            "实体的 observations 不是文本列表",
        ),
        "bad_from": ("the relation's from is missing or empty", "关系的 from 缺失或为空"),
        "bad_to": ("the relation's to is missing or empty", "关系的 to 缺失或为空"),
        "bad_relationType": (
            "the relation's relationType is missing or empty",
            "关系的 relationType 缺失或为空",
        ),
        "bad_label": (
            "the entity type or relation name cannot be stored (empty, too long, or holding a control "
            "character or comma)",
            "实体类型或关系名称无法保存（为空、过长，或含有控制字符或逗号）",
        ),
        "too_many_entities": (
            f"the file holds more than {MAX_IMPORT_ITEMS} entities",
            f"文件中的实体超过 {MAX_IMPORT_ITEMS} 个",
        ),
        "duplicate_uri": (
            "the document holds this URI twice; the first was used",
            "文档中该 URI 重复；已使用第一条",
        ),
        "duplicate_version": ("two versions share a number", "有两个版本号相同"),
        "version_behind_history": (
            "'version' is lower than a version in its history",
            "version 小于历史中的版本号",
        ),
        "invalid_time": (
            f"{name} is not an ISO 8601 time within the years 1-9999 (in UTC)",
            f"{name} 不是 ISO 8601 时间，或换算为 UTC 后超出 1-9999 年",
        ),
        "invalid_unicode": (
            f"{name} holds a lone surrogate, which is not valid Unicode",
            f"{name} 含有孤立的代理码位，不是有效的 Unicode",
        ),
        "blank_content": (f"{name} is empty or only whitespace", f"{name} 为空或只有空白"),
        "less_than_equal": (f"{name} is too large", f"{name} 的值过大"),
        "greater_than_equal": (f"{name} is too small", f"{name} 的值过小"),
        "missing": (f"{name} is missing", f"缺少 {name}"),
        "string_type": (f"{name} must be text", f"{name} 必须是文本"),
        "int_type": (f"{name} must be a whole number", f"{name} 必须是整数"),
        "int_parsing": (f"{name} must be a whole number", f"{name} 必须是整数"),
        "literal_error": (f"{name} is not one of the allowed values", f"{name} 不是允许的取值"),
        "string_too_long": (f"{name} is too long", f"{name} 过长"),
        "alias_exists": ("an alias with this URI exists", "已有同名别名"),
        "alias_taken": ("this alias URI is taken; the alias was not added", "该别名 URI 已被占用，未添加"),
        "invalid_tag": (f"{name} holds an invalid tag", f"{name} 含有无效的标签"),
        "invalid_relation": (f"{name} is not a valid relation name", f"{name} 不是有效的关系名称"),
        "invalid_member_name": (
            f"{name} is not a team member's name (letters, digits, '_', '-', '.')",
            f"{name} 不是有效的成员名（字母、数字、'_'、'-'、'.'）",
        ),
        "link_target_missing": (
            "the link's target is neither in the input nor in the store; the link was not added",
            "链接的目标既不在输入中也不在存储中；未添加该链接",
        ),
        "link_source_missing": (
            "the relation's source entity is not in the file; the relation was not imported",
            "关系的源实体不在文件中；未导入该关系",
        ),
        "link_to_itself": ("the link points at its own memory; it was not added", "链接指向自身；未添加"),
        "alias_to_itself": (
            f"{name} is the memory's own URI; the memory was imported without that alias",
            f"{name} 就是该记忆自身的 URI；已导入该记忆，但未添加此别名",
        ),
        "alias_cycle": (
            f"the aliases of items {members} name each other in a cycle; none of them was imported",
            f"条目 {members} 的别名互相指向，构成循环；这些条目均未导入",
        ),
    }
    en, zh = texts.get(kind, (f"{name} has a value this server cannot import", f"{name} 的值无法导入"))
    return Text(en=en, zh=zh)
