"""The 18 memory tools: argument rules, messages in the host's language, answers in budget.

Each tool checks what the schema cannot (URIs, combinations of arguments), asks the store,
and shapes the answer. Store rules broken by a request (a missing memory, a taken URI, a
patch that does not fit) come back as ``StoreError`` and leave as ``ToolError`` here.

The host imports this module at start-up to register the tools, so it imports only what the
tools' signatures need (pydantic, the answer models, the host's API): ``sqlite3``, the store,
the search module and ``difflib`` are imported when a tool first runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, cast

from pydantic import Field

from hostd import PluginContext, ToolContext, ToolError
from hostd_memory.models import (
    MAX_VERSION,
    AddAliasResult,
    CoreMemory,
    CreateMemoryResult,
    DeleteMemoryResult,
    DiffVersionsResult,
    ExportMemoriesResult,
    ImportItemRef,
    ImportMemoriesResult,
    ImportProblem,
    IndexEntry,
    IndexGroup,
    Link,
    LinkMemoriesResult,
    ListedMemory,
    ListMemoriesResult,
    ListRollbacksResult,
    MemoryRecord,
    MemoryStatsResult,
    MemoryVersionsResult,
    MentionedUri,
    MostRead,
    PreloadItem,
    PreloadMemoryResult,
    ReadMemoryResult,
    RelatedMemory,
    Relations,
    RollbackMemoryResult,
    RollbackOption,
    SaveSessionResult,
    SearchHit,
    SearchMemoryResult,
    SessionRecord,
    Settings,
    Status,
    UnlinkMemoriesResult,
    UpdateMemoryResult,
    UpdateMode,
    VersionSummary,
)
from hostd_memory.paging import (
    ENVELOPE_ALLOWANCE,
    BadCursor,
    clip,
    decode_cursor,
    encode_cursor,
    fill_within_budget,
    fingerprint,
    size_of,
)
from hostd_memory.uris import VALID_FORM, InvalidUri, MemoryUri, parse_domain, parse_uri

if TYPE_CHECKING:
    from hostd_db import PostgresDatabase

    from hostd_memory.store import Filters, MemoryRow, MemoryStore, VersionRow

R = TypeVar("R")

MAX_CONTENT = 2_000_000
MAX_DISCLOSURE = 2_000
PREVIEW_CHARS = 120
CORE_CONTENT_CHARS = 4_000
RECENT_DEFAULT = 10
RECENT_MAX = 100

# --- parameter types (descriptions are what the model reads) ---------------------------------

UriArg = Annotated[
    str, Field(description="Memory URI, domain://path (e.g. project://config)", min_length=1, max_length=600)
]
PriorityArg = Annotated[
    int, Field(description="Priority 0-10; 0 is most important (0-2 core, 3-5 normal, 6-10 low)", ge=0, le=10)
]
OptionalPriority = Annotated[
    int | None, Field(description="New priority 0-10 (0 most important)", ge=0, le=10)
]
PriorityMin = Annotated[
    int | None, Field(description="Only memories with priority >= this (inclusive, 0-10)", ge=0, le=10)
]
PriorityMax = Annotated[
    int | None, Field(description="Only memories with priority <= this (inclusive, 0-10)", ge=0, le=10)
]
DomainArg = Annotated[
    str | None, Field(description="Only this domain (e.g. project)", min_length=1, max_length=70)
]
CursorArg = Annotated[
    str | None,
    Field(
        description="Cursor from a previous truncated answer, to get the next page",
        min_length=1,
        max_length=4000,
    ),
]
HistoryLimit = Annotated[
    int, Field(description="How many versions to list, newest first (1-100)", ge=1, le=100)
]
# Tags: the schema bounds what a client may send; store.normalise_tags then folds case and width,
# collapses whitespace and refuses control characters and commas (the same limits: 64 and 32).
TAG_EXAMPLE = '["rust", "部署", "on call"]'
Tag = Annotated[str, Field(min_length=1, max_length=64)]
TagsArg = Annotated[
    list[Tag] | None,
    Field(
        description="Tags, e.g. " + TAG_EXAMPLE + ": up to 32, each up to 64 characters; case-folded, "
        "whitespace collapsed; no commas or control characters",
        max_length=32,
    ),
]
TagsFilter = Annotated[
    list[Tag] | None,
    Field(description="Only memories carrying every one of these tags (case-insensitive)", max_length=32),
]
AuthorFilter = Annotated[
    str | None,
    Field(
        description="Only memories whose current version this team member wrote (a member name, e.g. alice)",
        min_length=1,
        max_length=64,
    ),
]
TIME_EXAMPLE = "2026-05-01, 2026-05-01T09:30:00 or 2026-05-01T09:30:00+08:00"


def _time_help(what: str) -> str:
    return f"{what} (ISO 8601; without a zone it is UTC), e.g. {TIME_EXAMPLE}"


CreatedAfter = Annotated[
    str | None,
    Field(description=_time_help("Only memories created at or after this time"), min_length=1, max_length=64),
]
CreatedBefore = Annotated[
    str | None,
    Field(description=_time_help("Only memories created before this time"), min_length=1, max_length=64),
]
UpdatedAfter = Annotated[
    str | None,
    Field(
        description=_time_help("Only memories last changed at or after this time"),
        min_length=1,
        max_length=64,
    ),
]
UpdatedBefore = Annotated[
    str | None,
    Field(description=_time_help("Only memories last changed before this time"), min_length=1, max_length=64),
]
RelationArg = Annotated[
    str,
    Field(
        description="Relation name, free text, e.g. 'depends on', 'contradicts', '参考' "
        "(case-folded, whitespace collapsed; up to 100 characters)",
        min_length=1,
        max_length=100,
    ),
]


# --- shared helpers ------------------------------------------------------------------------


def _settings(ctx: ToolContext) -> Settings:
    return ctx.settings if isinstance(ctx.settings, Settings) else Settings()


def _store(ctx: ToolContext) -> MemoryStore:
    return store_for(ctx.plugin)


def team_database(context: PluginContext) -> PostgresDatabase:
    """The plugin's tables in the team database, opened once per server (``storage`` must be set)."""
    from hostd_memory.store_postgres import PG_MIGRATIONS

    return context.resource("team-database", lambda: context.team_database(PG_MIGRATIONS))


def open_local_store(context: PluginContext) -> MemoryStore:
    """A new store on the plugin's SQLite file (the ``database`` setting): the caller closes it."""
    from hostd_memory.store import MemoryStore

    settings = context.settings if isinstance(context.settings, Settings) else Settings()
    return MemoryStore(context.data_dir / settings.database)


def store_for(context: PluginContext) -> MemoryStore:
    """The plugin's store, opened on first use and shared by every thread: the team database when
    the config has ``storage`` (the ``database`` setting is then unused), else the SQLite file."""
    if context.storage is not None:

        def open_team_store() -> MemoryStore:
            from hostd_memory.store_postgres import PostgresMemoryStore

            return PostgresMemoryStore(team_database(context))

        return context.resource("store", open_team_store)
    return context.resource("store", lambda: open_local_store(context))


def _budget(ctx: ToolContext) -> int:
    return _settings(ctx).answer_budget - ENVELOPE_ALLOWANCE


def _uri_problem(ctx: ToolContext, reason: str) -> str:
    texts = {
        "missing_scheme": ("it has no 'domain://' part", "缺少 'domain://' 部分"),
        "bad_domain": (
            "the domain may hold only lowercase letters, digits and '-'",
            "域名只能包含小写字母、数字和 '-'",
        ),
        "empty_path": ("the path after '://' is empty", "'://' 之后的路径为空"),
        "dot_segment": ("'.' and '..' are not allowed as path segments", "路径段不能是 '.' 或 '..'"),
        "bad_character": (
            'it holds whitespace, control or reserved characters (\\ ? # < > " ` |)',
            '含有空白、控制字符或保留字符（\\ ? # < > " ` |）',
        ),
        "too_long": ("it is longer than 512 characters", "超过 512 个字符"),
        "reserved_domain": ("the system:// domain is reserved", "system:// 域为保留域"),
    }
    en, zh = texts.get(reason, (reason, reason))
    return ctx.text(en=en, zh=zh)


def _parse(ctx: ToolContext, text: str, argument: str) -> MemoryUri:
    try:
        return parse_uri(text)
    except InvalidUri as exc:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"Invalid URI in '{argument}': {_uri_problem(ctx, exc.reason)}.",
                zh=f"参数 '{argument}' 的 URI 无效：{_uri_problem(ctx, exc.reason)}。",
            ),
            hint=ctx.text(
                en=f"Use the form {VALID_FORM}.",
                zh="格式为 domain://path/to/memory（域名：小写字母、数字和 '-'；路径：一个或多个段）。",
            ),
            details={"argument": argument, "reason": exc.reason, "valid_form": VALID_FORM},
        ) from None


def _writable(ctx: ToolContext, text: str, argument: str) -> MemoryUri:
    uri = _parse(ctx, text, argument)
    if uri.is_system:
        raise ToolError(
            "PERMISSION_DENIED",
            ctx.text(
                en=f"{uri} is in the reserved system:// domain, which is read-only.",
                zh=f"{uri} 属于保留的 system:// 域，只读。",
            ),
            hint=ctx.text(
                en="Use another domain, e.g. project://, user://, core://.",
                zh="请使用其他域名，例如 project://、user://、core://。",
            ),
            details={"argument": argument, "uri": str(uri)},
        )
    return uri


def _memory_uri(ctx: ToolContext, text: str, argument: str) -> MemoryUri:
    """A URI naming a memory (not a system view), for the history tools."""
    uri = _parse(ctx, text, argument)
    if uri.is_system:
        raise ToolError(
            "NOT_FOUND",
            ctx.text(
                en=f"{uri} is a system view, not a memory: it has no versions.",
                zh=f"{uri} 是系统视图而非记忆，没有版本。",
            ),
            hint=ctx.text(en="Read it with read_memory.", zh="请用 read_memory 读取。"),
            details={"argument": argument, "uri": str(uri)},
        )
    return uri


def _domain(ctx: ToolContext, domain: str | None) -> str | None:
    if domain is None:
        return None
    try:
        return parse_domain(domain)
    except InvalidUri:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"Invalid domain {domain!r}: only lowercase letters, digits and '-'.",
                zh=f"域名 {domain!r} 无效：只能包含小写字母、数字和 '-'。",
            ),
            hint=ctx.text(
                en="Give the part before '://', e.g. project.", zh="请给出 '://' 之前的部分，例如 project。"
            ),
            details={"argument": "domain"},
        ) from None


def _author(ctx: ToolContext, author: str | None) -> str | None:
    """A member name to filter by, or INVALID_ARGUMENT naming ``author`` (no member has such a name)."""
    import re

    from hostd_memory.models import MEMBER_NAME_PATTERN

    if author is None or re.match(MEMBER_NAME_PATTERN, author):
        return author
    raise ToolError(
        "INVALID_ARGUMENT",
        ctx.text(
            en=f"author {author[:80]!r} is not a member name.",
            zh=f"author {author[:80]!r} 不是有效的成员名。",
        ),
        hint=ctx.text(
            en="Give a member's name as the tokens file lists it (letters, digits, '_', '-', '.'; "
            "not starting with '.'), e.g. alice.",
            zh="请给出令牌文件中的成员名（字母、数字、'_'、'-'、'.'，不以 '.' 开头），例如 alice。",
        ),
        details={"argument": "author"},
    )


def _priority_range(ctx: ToolContext, low: int | None, high: int | None) -> None:
    if low is not None and high is not None and low > high:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"priority_min ({low}) is greater than priority_max ({high}).",
                zh=f"priority_min（{low}）大于 priority_max（{high}）。",
            ),
            hint=ctx.text(
                en="Both bounds are inclusive, 0-10, with priority_min <= priority_max.",
                zh="两个边界都包含在内，取值 0-10，且 priority_min <= priority_max。",
            ),
            details={"argument": "priority_min", "priority_min": low, "priority_max": high},
        )


def _label_problem(ctx: ToolContext, reason: str) -> str:
    texts = {
        "empty": ("it is empty or only whitespace", "为空或只有空白"),
        "too_long": ("it is too long once normalised", "规范化后过长"),
        "too_many": ("there are more than 32 distinct tags", "不同的标签超过 32 个"),
        "bad_character": (
            "it holds a control character, a comma or invalid Unicode",
            "含有控制字符、逗号或无效的 Unicode",
        ),
    }
    en, zh = texts.get(reason, (reason, reason))
    return ctx.text(en=en, zh=zh)


def _tags(ctx: ToolContext, values: list[str] | None, argument: str = "tags") -> list[str] | None:
    """The tags as the store keeps them, or INVALID_ARGUMENT naming the tag at fault."""
    from hostd_memory.store import BadLabel, normalise_tags

    if values is None:
        return None
    try:
        return normalise_tags(values)
    except BadLabel as exc:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"Invalid tag in '{argument}' ({exc.text!r}): {_label_problem(ctx, exc.reason)}.",
                zh=f"参数 '{argument}' 中的标签无效（{exc.text!r}）：{_label_problem(ctx, exc.reason)}。",
            ),
            hint=ctx.text(
                en=f"Give short labels, e.g. {TAG_EXAMPLE}: up to 32 tags of up to 64 characters each.",
                zh='请使用简短的标签，例如 ["后端", "部署", "值班"]：最多 32 个，每个最多 64 个字符。',
            ),
            details={"argument": argument, "reason": exc.reason},
        ) from None


def _relation(ctx: ToolContext, relation: str) -> str:
    from hostd_memory.store import BadLabel, normalise_relation

    try:
        return normalise_relation(relation)
    except BadLabel as exc:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"Invalid relation name: {_label_problem(ctx, exc.reason)}.",
                zh=f"关系名称无效：{_label_problem(ctx, exc.reason)}。",
            ),
            hint=ctx.text(
                en="Name the relation in a few words, e.g. 'depends on' or 'contradicts'.",
                zh="请用几个词命名关系，例如 “依赖” 或 “矛盾”。",
            ),
            details={"argument": "relation", "reason": exc.reason},
        ) from None


def _time_bounds(ctx: ToolContext, **bounds: str | None) -> dict[str, str | None]:
    """Each time bound in the store's spelling; INVALID_ARGUMENT with an example when one is not a
    time (or leaves the years 1-9999), or when an 'after' bound is not before its 'before' bound."""
    from hostd_memory.store import utc_time

    parsed: dict[str, str | None] = {}
    for argument, value in bounds.items():
        if value is None:
            parsed[argument] = None
            continue
        try:
            parsed[argument] = utc_time(value.strip())
        except ValueError:
            raise ToolError(
                "INVALID_ARGUMENT",
                ctx.text(
                    en=f"{argument} is not an ISO 8601 date or time within the years 1-9999: {value[:80]!r}.",
                    zh=f"{argument} 不是 1-9999 年之间的 ISO 8601 日期或时间：{value[:80]!r}。",
                ),
                hint=ctx.text(
                    en=f"For example {TIME_EXAMPLE}.",
                    zh="例如 2026-05-01、2026-05-01T09:30:00 或 2026-05-01T09:30:00+08:00。",
                ),
                details={"argument": argument, "example": "2026-05-01T09:30:00+08:00"},
            ) from None
    for kind in ("created", "updated"):
        after, before = parsed.get(f"{kind}_after"), parsed.get(f"{kind}_before")
        if after is not None and before is not None and after >= before:
            raise ToolError(
                "INVALID_ARGUMENT",
                ctx.text(
                    en=f"{kind}_after must be earlier than {kind}_before.",
                    zh=f"{kind}_after 必须早于 {kind}_before。",
                ),
                hint=ctx.text(
                    en="The range is [after, before): after is included, before is not.",
                    zh="范围为 [after, before)：包含 after，不包含 before。",
                ),
                details={"argument": f"{kind}_after", f"{kind}_after": after, f"{kind}_before": before},
            )
    return parsed


def _cursor_position(ctx: ToolContext, cursor: str | None, kind: str, filters: str) -> Any:
    if cursor is None:
        return None
    try:
        return decode_cursor(cursor, kind, filters)
    except BadCursor as exc:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en="This cursor does not belong to this request (or the memory changed since).",
                zh="该游标不属于本次请求（或记忆已在此后改变）。",
            ),
            hint=ctx.text(
                en="Pass next_cursor exactly as the previous answer gave it, with the same other "
                "arguments; or repeat the request without a cursor.",
                zh="请原样传入上一次回答中的 next_cursor，并保持其他参数相同；或不带游标重新请求。",
            ),
            details={"argument": "cursor", "reason": str(exc)},
        ) from None


@contextmanager
def _store_errors(ctx: ToolContext) -> Iterator[None]:
    """Turn the store's rule errors (and a busy or full database) into error envelopes."""
    import sqlite3

    from hostd_memory.store import (
        AlreadyExists,
        LinkNotFound,
        NotFound,
        PatchConflict,
        SelfLink,
        VersionNotFound,
    )

    try:
        yield
    except SelfLink as exc:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"from_uri and to_uri both lead to {exc.uri}: a memory cannot be linked to itself.",
                zh=f"from_uri 与 to_uri 都指向 {exc.uri}：记忆不能链接到自身。",
            ),
            hint=ctx.text(
                en="Link two different memories (an alias leads to the memory it names).",
                zh="请链接两条不同的记忆（别名指向其所代表的记忆）。",
            ),
            details={"argument": "to_uri", "uri": exc.uri},
        ) from None
    except LinkNotFound as exc:
        which_en = f" with relation {exc.relation!r}" if exc.relation is not None else ""
        which_zh = f"（关系 {exc.relation!r}）" if exc.relation is not None else ""
        raise ToolError(
            "NOT_FOUND",
            ctx.text(
                en=f"There is no link from {exc.from_uri} to {exc.to_uri}{which_en}.",
                zh=f"没有从 {exc.from_uri} 到 {exc.to_uri} 的链接{which_zh}。",
            ),
            hint=ctx.text(
                en="read_memory lists a memory's links in both directions.",
                zh="read_memory 会列出记忆双向的链接。",
            ),
            details={"from_uri": exc.from_uri, "to_uri": exc.to_uri, "relation": exc.relation},
        ) from None
    except NotFound as exc:
        if exc.deleted:
            raise ToolError(
                "NOT_FOUND",
                ctx.text(en=f"Memory {exc.uri} was deleted.", zh=f"记忆 {exc.uri} 已被删除。"),
                hint=ctx.text(
                    en="list_rollbacks shows its versions and rollback_memory restores it; "
                    "delete_memory with force=true removes it for good.",
                    zh="list_rollbacks 可查看其版本，rollback_memory 可恢复；"
                    "delete_memory 加 force=true 可彻底删除。",
                ),
                details={"uri": exc.uri, "deleted": True},
            ) from None
        raise ToolError(
            "NOT_FOUND",
            ctx.text(en=f"No memory at {exc.uri}.", zh=f"{exc.uri} 处没有记忆。"),
            hint=ctx.text(
                en="search_memory finds memories by their words; read system://index lists every URI.",
                zh="可用 search_memory 按内容查找；读取 system://index 可列出全部 URI。",
            ),
            details={"uri": exc.uri},
        ) from None
    except AlreadyExists as exc:
        if exc.kind == "alias":
            en = f"{exc.uri} is already an alias of {exc.target}."
            zh = f"{exc.uri} 已是 {exc.target} 的别名。"
        elif exc.kind == "deleted":
            en = f"{exc.uri} belongs to a deleted memory."
            zh = f"{exc.uri} 属于一条已删除的记忆。"
        else:
            en = f"A memory already exists at {exc.uri}."
            zh = f"{exc.uri} 处已有记忆。"
        raise ToolError(
            "ALREADY_EXISTS",
            ctx.text(en=en, zh=zh),
            hint=ctx.text(
                en="Use update_memory to change it, pick another URI, or (for a deleted one) restore it with "
                "rollback_memory or remove it with delete_memory force=true.",
                zh="可用 update_memory 修改，或换一个 URI；若已删除，可用 rollback_memory 恢复或 "
                "delete_memory（force=true）彻底删除。",
            ),
            details={"uri": exc.uri, "existing": exc.kind, "target": exc.target},
        ) from None
    except PatchConflict as exc:
        raise ToolError(
            "CONFLICT",
            ctx.text(
                en=f"old_string occurs {exc.occurrences} times in the memory; it must occur exactly once.",
                zh=f"old_string 在记忆中出现了 {exc.occurrences} 次，必须恰好出现一次。",
            ),
            hint=ctx.text(
                en="Read the memory and give a longer old_string that is unique (or 0 times: check "
                "spelling and whitespace).",
                zh="请先读取记忆，给出更长、唯一的 old_string（出现 0 次时请检查拼写和空白）。",
            ),
            details={"argument": "old_string", "occurrences": exc.occurrences},
        ) from None
    except VersionNotFound as exc:
        raise ToolError(
            "NOT_FOUND",
            ctx.text(
                en=f"{exc.uri} has no version {exc.version}; its versions are 1 to {exc.current}.",
                zh=f"{exc.uri} 没有版本 {exc.version}；现有版本为 1 到 {exc.current}。",
            ),
            hint=ctx.text(en="get_memory_versions lists them.", zh="可用 get_memory_versions 查看。"),
            details={"uri": exc.uri, "version": exc.version, "current_version": exc.current},
        ) from None
    except sqlite3.OperationalError as exc:
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            raise ToolError(
                "FILE_LOCKED",
                ctx.text(
                    en="The memory database stayed busy (another process is writing).",
                    zh="记忆数据库一直忙碌（另一个进程正在写入）。",
                ),
                hint=ctx.text(en="Retry in a moment.", zh="请稍后重试。"),
                details={},
            ) from None
        if "full" in text:
            raise ToolError(
                "DISK_FULL",
                ctx.text(en="The disk is full.", zh="磁盘已满。"),
                hint=ctx.text(en="Free some space and retry.", zh="请释放空间后重试。"),
            ) from None
        raise


def _record(memory: MemoryRow) -> MemoryRecord:
    return MemoryRecord(
        id=memory.id,
        uri=memory.uri,
        domain=memory.domain,
        path=memory.path,
        aliases=list(memory.aliases),
        tags=list(memory.tags),
        priority=memory.priority,
        disclosure=memory.disclosure,
        status=cast(Status, memory.status),
        access_count=memory.access_count,
        last_accessed_at=memory.last_accessed_at,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        version=memory.version,
        author=memory.author,
    )


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    return clip(" ".join(text[: limit * 4].split()), limit)[0]


def _listed(memory: MemoryRow) -> ListedMemory:
    return ListedMemory(memory=_record(memory), size=len(memory.content), preview=_preview(memory.content))


def _core(memory: MemoryRow, limit: int = CORE_CONTENT_CHARS) -> CoreMemory:
    content, cut = clip(memory.content, limit)
    return CoreMemory(
        memory=_record(memory),
        size=len(memory.content),
        preview=_preview(memory.content),
        content=content,
        content_truncated=cut,
    )


def _version_summary(version: VersionRow) -> VersionSummary:
    return VersionSummary(
        version=version.version,
        current=version.current,
        created_at=version.created_at,
        change=version.change,
        change_note=version.change_note,
        priority=version.priority,
        disclosure=version.disclosure,
        status=cast(Status, version.status),
        tags=list(version.tags),
        size=len(version.content),
        preview=_preview(version.content),
        author=version.author,
    )


def _collect(
    fetch: Callable[[Any, int], list[R]],
    key: Callable[[R], Any],
    convert: Callable[[R], Any],
    after: Any,
    *,
    budget: int,
    max_items: int,
    size: Callable[[Any], int] = size_of,
) -> tuple[list[Any], Any, bool]:
    """Fetch rows batch by batch, keeping what fits the budget: (items, last key, more left). The first
    item always goes in, so a page is never empty while rows remain."""
    items: list[Any] = []
    used = 0
    last = after
    while len(items) < max_items:
        want = min(50, max_items - len(items))
        rows = fetch(last, want + 1)
        for row in rows[:want]:
            item = convert(row)
            cost = size(item)
            if items and used + cost > budget:
                return items, last, True
            items.append(item)
            used += cost
            last = key(row)
        if len(rows) <= want:
            return items, last, False
    return items, last, True


# --- read_memory ---------------------------------------------------------------------------


def read_memory(
    ctx: ToolContext,
    uri: UriArg,
    cursor: CursorArg = None,
) -> ReadMemoryResult:
    """Read one memory: its content, record (with tags), last 5 versions and relations (aliases, URIs it
    mentions, memories mentioning it, links in both directions, a few related memories sharing rare tags or
    terms). Counts an access; an alias reads its target. Special URIs: system://boot
    (core memories, priority <= 2, with content), system://index (every active URI by domain),
    system://recent and system://recent/N (N <= 100, latest changes). Long contents and listings come in
    pages: pass next_cursor."""
    parsed = _parse(ctx, uri, "uri")
    store = _store(ctx)
    with _store_errors(ctx):
        if parsed.is_system:
            return _read_system(ctx, store, parsed, cursor)
        return _read_one(ctx, store, str(parsed), cursor)


def _read_one(ctx: ToolContext, store: MemoryStore, uri: str, cursor: str | None) -> ReadMemoryResult:
    from hostd_memory.store import mentioned_relations

    memory, via = store.resolve(uri)
    position = _cursor_position(ctx, cursor, "content", fingerprint(memory.id, memory.version))
    offset = int(position) if isinstance(position, int) and position >= 0 else 0
    if cursor is None:
        memory.access_count, memory.last_accessed_at = store.count_access(memory.id)
    page_size = max(1_000, _budget(ctx) - 6_000)
    page = memory.content[offset : offset + page_size]
    more = offset + page_size < len(memory.content)
    _, versions, _ = store.versions(memory.uri, limit=5)
    links_to, linked_from = store.links_of(memory.id)
    relations = Relations(
        aliases=list(memory.aliases),
        mentions=[MentionedUri(uri=u, exists=e) for u, e in mentioned_relations(store, memory)][:20],
        mentioned_by=store.mentioned_by(memory),
        links_to=[Link(uri=u, relation=r) for u, r in links_to],
        linked_from=[Link(uri=u, relation=r) for u, r in linked_from],
        related=[
            RelatedMemory(
                uri=other.uri,
                priority=other.priority,
                tags=other.tags,
                shared_tags=tags,
                shared_terms=terms,
                preview=_preview(other.content),
            )
            for other, tags, terms in store.related(memory)
        ]
        if cursor is None
        else [],
    )
    result = ReadMemoryResult(
        uri=memory.uri,
        kind="memory",
        via_alias=via,
        memory=_record(memory),
        content=page,
        content_offset=offset,
        content_length=len(memory.content),
        recent_versions=[_version_summary(v) for v in versions],
        relations=relations,
        truncated=more,
        next_cursor=encode_cursor("content", fingerprint(memory.id, memory.version), offset + page_size)
        if more
        else None,
    )
    note_en = f" (via alias {via})" if via else ""
    note_zh = f"（经由别名 {via}）" if via else ""
    more_en = " The content continues: pass next_cursor." if more else ""
    more_zh = " 内容未完，请传入 next_cursor 继续读取。" if more else ""
    return result.with_message(
        ctx.text(
            en=f"Read {memory.uri}{note_en}, version {memory.version}.{more_en}",
            zh=f"已读取 {memory.uri}{note_zh}，版本 {memory.version}。{more_zh}",
        )
    )


def _read_system(
    ctx: ToolContext, store: MemoryStore, uri: MemoryUri, cursor: str | None
) -> ReadMemoryResult:
    budget = _budget(ctx)
    match = re.fullmatch(r"recent(?:/(\d{1,6}))?", uri.path)
    if uri.path == "boot":
        after = _cursor_position(ctx, cursor, "boot", "")
        items, last, more = _collect(
            lambda a, n: store.core_memories(a, n), _list_key, _core, after, budget=budget, max_items=500
        )
        result = ReadMemoryResult(
            uri=str(uri),
            kind="boot",
            memories=items,
            truncated=more,
            next_cursor=encode_cursor("boot", "", last) if more else None,
        )
        return result.with_message(_paged_message(ctx, len(items), more, en="core memories", zh="条核心记忆"))
    if uri.path == "index":
        after = _cursor_position(ctx, cursor, "index", "")
        entries, last, more = _collect(
            lambda a, n: store.index_page(a, n),
            lambda r: r[0],
            lambda r: IndexEntry(uri=r[0], priority=r[2]),
            after,
            budget=budget,
            max_items=2_000,
        )
        groups: list[IndexGroup] = []
        for entry in entries:
            domain = entry.uri.split("://", 1)[0]
            if not groups or groups[-1].domain != domain:
                groups.append(IndexGroup(domain=domain, memories=[]))
            groups[-1].memories.append(entry)
        result = ReadMemoryResult(
            uri=str(uri),
            kind="index",
            index=groups,
            truncated=more,
            next_cursor=encode_cursor("index", "", last) if more else None,
        )
        return result.with_message(_paged_message(ctx, len(entries), more, en="active URIs", zh="个活跃 URI"))
    if match:
        wanted = int(match.group(1)) if match.group(1) else RECENT_DEFAULT
        if not 1 <= wanted <= RECENT_MAX:
            raise ToolError(
                "INVALID_ARGUMENT",
                ctx.text(
                    en=f"system://recent/N takes N from 1 to {RECENT_MAX} (got {wanted}).",
                    zh=f"system://recent/N 的 N 取值 1 到 {RECENT_MAX}（收到 {wanted}）。",
                ),
                hint=ctx.text(en="e.g. system://recent/20", zh="例如 system://recent/20"),
                details={"argument": "uri", "max": RECENT_MAX},
            )
        position = _cursor_position(ctx, cursor, "recent", str(wanted))
        after, left = (
            (position["after"], int(position["left"])) if isinstance(position, dict) else (None, wanted)
        )
        items, last, more = _collect(
            lambda a, n: store.recent_page(a, n),
            lambda m: [m.updated_at, m.id],
            _listed,
            after,
            budget=budget,
            max_items=max(1, left),
        )
        left -= len(items)
        more = more and left > 0
        result = ReadMemoryResult(
            uri=str(uri),
            kind="recent",
            memories=items,
            truncated=more,
            next_cursor=encode_cursor("recent", str(wanted), {"after": last, "left": left}) if more else None,
        )
        return result.with_message(
            _paged_message(ctx, len(items), more, en="recently changed memories", zh="条最近修改的记忆")
        )
    raise ToolError(
        "NOT_FOUND",
        ctx.text(en=f"{uri} is not a system view.", zh=f"{uri} 不是系统视图。"),
        hint=ctx.text(
            en="System URIs: system://boot, system://index, system://recent, system://recent/N.",
            zh="系统 URI：system://boot、system://index、system://recent、system://recent/N。",
        ),
        details={
            "uri": str(uri),
            "valid": ["system://boot", "system://index", "system://recent", "system://recent/N"],
        },
    )


def _list_key(memory: MemoryRow) -> list[Any]:
    return [memory.priority, memory.updated_at, memory.id]


def _paged_message(ctx: ToolContext, count: int, more: bool, *, en: str, zh: str) -> str:
    if more:
        return ctx.text(
            en=f"{count} {en}; more remain: pass next_cursor.",
            zh=f"{count} {zh}；还有更多，请传入 next_cursor。",
        )
    return ctx.text(en=f"{count} {en}.", zh=f"{count} {zh}。")


# --- create / update / delete ----------------------------------------------------------------


def create_memory(
    ctx: ToolContext,
    uri: UriArg,
    content: Annotated[str, Field(description="The memory's text", min_length=1, max_length=MAX_CONTENT)],
    priority: PriorityArg = 5,
    disclosure: Annotated[
        str | None,
        Field(description="When to bring this memory up (a trigger condition)", max_length=MAX_DISCLOSURE),
    ] = None,
    tags: TagsArg = None,
) -> CreateMemoryResult:
    """Create a memory at a new URI (e.g. project://config) as version 1. Fails with ALREADY_EXISTS when
    the URI, or an alias with that URI, exists. Priority 0-2 marks core facts (shown at boot), 3-5
    normal, 6-10 low. Tags (e.g. ["rust", "部署"]) are case-folded; list and search filter by them."""
    parsed = _writable(ctx, uri, "uri")
    if not content.strip():
        raise _blank_content(ctx, "content")
    clean_tags = _tags(ctx, tags) or []
    with _store_errors(ctx):
        memory = _store(ctx).create(
            parsed, content, priority, disclosure or "", clean_tags, author=ctx.member
        )
    return CreateMemoryResult(
        uri=memory.uri, id=memory.id, created_at=memory.created_at, memory=_record(memory)
    ).with_message(
        ctx.text(
            en=f"Created {memory.uri} (priority {priority}).",
            zh=f"已创建 {memory.uri}（优先级 {priority}）。",
        )
    )


def _invalid_combination(ctx: ToolContext, en: str, zh: str, argument: str) -> ToolError:
    return ToolError(
        "INVALID_ARGUMENT",
        ctx.text(en=en, zh=zh),
        hint=ctx.text(
            en="Modes: patch (old_string + new_string), append (append=true + content), replace (content), "
            "or metadata only (priority, disclosure, status).",
            zh="模式：补丁（old_string + new_string）、追加（append=true + content）、全量替换（content），"
            "或仅元数据（priority、disclosure、status）。",
        ),
        details={"argument": argument},
    )


def _blank_content(ctx: ToolContext, argument: str) -> ToolError:
    """The error for a memory left without text (the spec: content must not be empty)."""
    if argument == "new_string":
        en, zh = (
            "The patch would leave the memory empty or only whitespace.",
            "该补丁会使记忆为空或只剩空白。",
        )
    else:
        en, zh = f"{argument} is empty or only whitespace.", f"参数 {argument} 为空或只有空白。"
    return ToolError(
        "INVALID_ARGUMENT",
        ctx.text(en=en, zh=zh),
        hint=ctx.text(
            en="A memory needs some text; to remove one, use delete_memory.",
            zh="记忆需要有文字内容；要删除记忆，请用 delete_memory。",
        ),
        details={"argument": argument},
    )


def _update_mode(
    ctx: ToolContext, content: str | None, old_string: str | None, new_string: str | None, append: bool
) -> Literal["patch", "append", "replace"] | None:
    if old_string is not None or new_string is not None:
        if old_string is None or new_string is None:
            missing = "old_string" if old_string is None else "new_string"
            raise _invalid_combination(
                ctx,
                f"A patch needs both old_string and new_string ({missing} is missing).",
                f"补丁需要同时提供 old_string 和 new_string（缺少 {missing}）。",
                missing,
            )
        if content is not None or append:
            raise _invalid_combination(
                ctx,
                "A patch (old_string/new_string) cannot be combined with content or append.",
                "补丁（old_string/new_string）不能与 content 或 append 同时使用。",
                "content" if content is not None else "append",
            )
        if old_string == "":
            raise _invalid_combination(
                ctx, "old_string must not be empty.", "old_string 不能为空。", "old_string"
            )
        return "patch"
    if append:
        if content is None:
            raise _invalid_combination(
                ctx,
                "append=true needs content (the text to add).",
                "append=true 需要提供 content（要追加的文本）。",
                "content",
            )
        return "append"
    return "replace" if content is not None else None


def update_memory(
    ctx: ToolContext,
    uri: UriArg,
    content: Annotated[
        str | None,
        Field(description="New full content, or with append=true the text to add", max_length=MAX_CONTENT),
    ] = None,
    old_string: Annotated[
        str | None,
        Field(description="Patch: text to replace; must occur exactly once", max_length=MAX_CONTENT),
    ] = None,
    new_string: Annotated[
        str | None, Field(description="Patch: the replacement text", max_length=MAX_CONTENT)
    ] = None,
    append: Annotated[bool, Field(description="Append content to the end instead of replacing")] = False,
    priority: OptionalPriority = None,
    disclosure: Annotated[
        str | None, Field(description="New trigger condition", max_length=MAX_DISCLOSURE)
    ] = None,
    status: Annotated[
        Literal["active", "deprecated", "archived"] | None,
        Field(description="New status: active, deprecated or archived"),
    ] = None,
    tags: Annotated[
        list[Tag] | None,
        Field(
            description="The memory's new tags, replacing the old ones ([] removes them all); "
            "versioned like content",
            max_length=32,
        ),
    ] = None,
) -> UpdateMemoryResult:
    """Change a memory; every change makes a new version (rollback_memory undoes it). Modes: patch
    (old_string + new_string; old_string must occur exactly once, else CONFLICT), append (append=true +
    content), replace (content), or metadata only (priority, disclosure, status, tags). Content modes may
    carry metadata too."""
    from hostd_memory.store import Change, NothingChanged, PatchConflict

    mode = _update_mode(ctx, content, old_string, new_string, append)
    if mode is None and priority is None and disclosure is None and status is None and tags is None:
        raise _invalid_combination(
            ctx,
            "Nothing to update: give content, a patch, or metadata (priority, disclosure, status, tags).",
            "没有要更新的内容：请提供 content、补丁或元数据（priority、disclosure、status、tags）。",
            "content",
        )
    target = _writable(ctx, uri, "uri")
    new_tags = _tags(ctx, tags)
    edit: Callable[[str], tuple[str, str]] | None = None
    if mode == "patch":
        assert old_string is not None and new_string is not None

        def edit(current: str) -> tuple[str, str]:
            occurrences = current.count(old_string)
            if occurrences != 1:
                raise PatchConflict(occurrences)
            patched = current.replace(old_string, new_string, 1)
            if not patched.strip():
                raise _blank_content(ctx, "new_string")
            return patched, "patch"
    elif mode == "append":
        addition = content or ""

        def edit(current: str) -> tuple[str, str]:
            joiner = "\n" if current and addition and not current.endswith("\n") else ""
            return current + joiner + addition, "append"
    elif mode == "replace":
        replacement = content or ""
        if not replacement.strip():
            raise _blank_content(ctx, "content")

        def edit(current: str) -> tuple[str, str]:
            return replacement, "replace"

    store = _store(ctx)
    with _store_errors(ctx):
        try:
            memory, kind = store.update(
                str(target),
                edit=edit,
                change=Change(priority=priority, disclosure=disclosure, status=status, tags=new_tags),
                author=ctx.member,
            )
        except NothingChanged:
            current, _ = store.resolve(str(target))
            return UpdateMemoryResult(
                uri=current.uri,
                mode=mode or "metadata",
                previous_version=current.version,
                memory=_record(current),
            ).with_message(
                ctx.text(
                    en=f"{current.uri} already holds this; nothing changed "
                    f"(still version {current.version}).",
                    zh=f"{current.uri} 已是该内容，未作改动（仍为版本 {current.version}）。",
                )
            )
    return UpdateMemoryResult(
        uri=memory.uri,
        mode=cast(UpdateMode, kind),
        previous_version=memory.version - 1,
        memory=_record(memory),
    ).with_message(
        ctx.text(
            en=f"Updated {memory.uri} ({kind}); now version {memory.version}.",
            zh=f"已更新 {memory.uri}（{kind}），当前版本 {memory.version}。",
        )
    )


def delete_memory(
    ctx: ToolContext,
    uri: UriArg,
    force: Annotated[
        bool, Field(description="Remove for good with all versions and aliases (cannot be undone)")
    ] = False,
) -> DeleteMemoryResult:
    """Delete a memory. By default a soft delete: hidden from read, search, list and boot, versions kept,
    and rollback_memory restores it. force=true removes it with its versions and aliases for good.
    Deleting an alias URI removes only the alias."""
    parsed = _writable(ctx, uri, "uri")
    store = _store(ctx)
    with _store_errors(ctx):
        target = store.remove_alias(str(parsed))
        if target is not None:
            return DeleteMemoryResult(
                uri=str(parsed), action="alias_removed", target_uri=target
            ).with_message(
                ctx.text(
                    en=f"Removed the alias {parsed}; the memory {target} is unchanged.",
                    zh=f"已删除别名 {parsed}；记忆 {target} 未受影响。",
                )
            )
        if force:
            memory, versions, aliases = store.purge(str(parsed))
            return DeleteMemoryResult(
                uri=memory.uri, action="removed", removed_versions=versions, removed_aliases=aliases
            ).with_message(
                ctx.text(
                    en=f"Removed {memory.uri} for good, with {versions} version(s) "
                    f"and {len(aliases)} alias(es).",
                    zh=f"已彻底删除 {memory.uri}，包括 {versions} 个版本和 {len(aliases)} 个别名。",
                )
            )
        memory = store.soft_delete(str(parsed), author=ctx.member)
    return DeleteMemoryResult(uri=memory.uri, action="soft_deleted", memory=_record(memory)).with_message(
        ctx.text(
            en=f"Deleted {memory.uri} (soft: rollback_memory to version {memory.version - 1} restores it).",
            zh=f"已删除 {memory.uri}（软删除：rollback_memory 回滚到版本 {memory.version - 1} 即可恢复）。",
        )
    )


# --- search and preload ------------------------------------------------------------------------


def search_memory(
    ctx: ToolContext,
    query: Annotated[
        str,
        Field(
            description="Words to find, Chinese or English; any length, even one character. "
            "Taken as plain text (quotes, *, OR are not operators)",
            min_length=1,
            max_length=1_000,
        ),
    ],
    domain: DomainArg = None,
    limit: Annotated[int, Field(description="Most hits to return (1-100)", ge=1, le=100)] = 10,
    priority_min: PriorityMin = None,
    priority_max: PriorityMax = None,
    tags: TagsFilter = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    updated_after: UpdatedAfter = None,
    updated_before: UpdatedBefore = None,
) -> SearchMemoryResult:
    """Full-text search over memory URI paths, contents and disclosures, ranked by BM25: memories holding
    every term first, then those holding some. Works for Chinese and English, including one- and
    two-character queries. Each hit has a snippet around the match. Filters: domain, priority, tags (all of
    them), creation and change times. Deleted memories are never returned."""
    from hostd_memory import search as search_text
    from hostd_memory.store import Filters

    _priority_range(ctx, priority_min, priority_max)
    times = _time_bounds(
        ctx,
        created_after=created_after,
        created_before=created_before,
        updated_after=updated_after,
        updated_before=updated_before,
    )
    filters = Filters(
        domain=_domain(ctx, domain),
        priority_min=priority_min,
        priority_max=priority_max,
        tags=tuple(_tags(ctx, tags) or ()),
        created_after=times["created_after"],
        created_before=times["created_before"],
        updated_after=times["updated_after"],
        updated_before=times["updated_before"],
    )
    plan = search_text.plan_query(query)
    if plan.empty:
        stripped = query.strip()
        if not stripped:
            raise ToolError(
                "INVALID_ARGUMENT",
                ctx.text(en="The query is empty.", zh="查询为空。"),
                hint=ctx.text(en="Give some words to look for.", zh="请给出要查找的词。"),
                details={"argument": "query"},
            )
        plan = search_text.QueryPlan(terms=[stripped], strict_scan=[stripped])
    with _store_errors(ctx):
        hits = _store(ctx).search(plan, filters, limit)
    shown = [
        SearchHit(
            uri=h.memory.uri,
            priority=h.memory.priority,
            status=cast(Status, h.memory.status),
            disclosure=clip(h.memory.disclosure, 300)[0],
            aliases=h.memory.aliases,
            tags=h.memory.tags,
            snippet=search_text.snippet(h.memory.content, plan.terms),
            score=round(h.score, 4),
            matched="any_term" if h.stage == "any_term" else "all_terms",
            updated_at=h.memory.updated_at,
        )
        for h in hits
    ]
    taken, cut = fill_within_budget(shown, _budget(ctx))
    return SearchMemoryResult(
        query=query, terms=plan.terms, count=len(taken), hits=taken, truncated=cut
    ).with_message(
        ctx.text(
            en=f"{len(taken)} memor{'y' if len(taken) == 1 else 'ies'} found for {query!r}.",
            zh=f"找到 {len(taken)} 条与 {query!r} 相关的记忆。",
        )
    )


def preload_memory(
    ctx: ToolContext,
    context_type: Annotated[
        Literal["file", "directory", "error", "intent"],
        Field(
            description="What context_data is: file or directory path, error message, or the user's intent"
        ),
    ],
    context_data: Annotated[
        str, Field(description="The path, error text or intent", min_length=1, max_length=20_000)
    ],
) -> PreloadMemoryResult:
    """Load memories worth having before working on something: the core memories (priority <= 2) and
    related ones, each with why it matched. file: memories mentioning the path, its name or folders;
    directory: its folders; error: its key terms (numbers, addresses, paths stripped); intent: its
    words. Every type also matches memories whose disclosure fits the context."""
    from hostd_memory.preload import related_memories

    store = _store(ctx)
    budget = _budget(ctx)
    with _store_errors(ctx):
        core_rows = store.core_memories(None, 30)
        found, terms = related_memories(
            store, context_type, context_data, exclude={m.id for m in core_rows}, text=ctx.text
        )
    core, core_cut = fill_within_budget([_core(m, 1_500) for m in core_rows], budget // 2)
    related_items = [
        PreloadItem(uri=m.uri, priority=m.priority, tags=m.tags, reasons=reasons, preview=_preview(m.content))
        for m, reasons in found
    ]
    related, related_cut = fill_within_budget(related_items, budget - sum(size_of(c) for c in core))
    return PreloadMemoryResult(
        context_type=context_type,
        search_terms=terms,
        core=core,
        related=related,
        truncated=core_cut or related_cut or len(core_rows) >= 30,
    ).with_message(
        ctx.text(
            en=f"{len(core)} core and {len(related)} related memories for this {context_type}.",
            zh=f"为该 {context_type} 加载了 {len(core)} 条核心记忆和 {len(related)} 条相关记忆。",
        )
    )


# --- sessions, lists, stats ----------------------------------------------------------------------


def _slug(title: str) -> str:
    slug = re.sub(r"[^\w]+", "-", title.lower(), flags=re.UNICODE).strip("-_")
    return slug[:60].strip("-_") or "session"


def save_session(
    ctx: ToolContext,
    title: Annotated[str | None, Field(description="Title of the session", max_length=200)] = None,
    summary: Annotated[
        str | None,
        Field(
            description="Summary of the session; when given, also saved as a memory "
            "at session://YYYY-MM-DD/<slug>",
            max_length=MAX_CONTENT,
        ),
    ] = None,
) -> SaveSessionResult:
    """Record the current session. With a summary, also create a session memory at
    session://YYYY-MM-DD/<slug> (a numeric suffix keeps same-day titles apart). Returns the session
    record and the memory."""
    import datetime

    clean_title = " ".join((title or "").split())
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    if not clean_title:
        clean_title = ctx.text(en=f"Session {today}", zh=f"会话 {today}")
    memory_spec = None
    body = (summary or "").strip()
    if body:
        uri = MemoryUri("session", f"{today}/{_slug(clean_title)}")
        memory_spec = (uri, f"# {clean_title}\n\n{body}", 5)
    with _store_errors(ctx):
        session_id, stamp, memory = _store(ctx).save_session(
            clean_title, body, memory_spec, author=ctx.member
        )
    session = SessionRecord(
        id=session_id,
        title=clean_title,
        summary=body,
        created_at=stamp,
        memory_uri=memory.uri if memory else None,
    )
    if memory is None:
        message = ctx.text(
            en=f"Recorded session {session_id} ({clean_title}); no summary, so no memory.",
            zh=f"已记录会话 {session_id}（{clean_title}）；没有摘要，因此未创建记忆。",
        )
    else:
        message = ctx.text(
            en=f"Recorded session {session_id} and saved its summary at {memory.uri}.",
            zh=f"已记录会话 {session_id}，摘要已保存到 {memory.uri}。",
        )
    return SaveSessionResult(session=session, memory=_record(memory) if memory else None).with_message(
        message
    )


def list_memories(
    ctx: ToolContext,
    domain: DomainArg = None,
    status: Annotated[
        Literal["active", "deprecated", "archived"] | None,
        Field(description="Only this status (default: all but deleted)"),
    ] = None,
    limit: Annotated[int, Field(description="Most memories per page (1-100)", ge=1, le=100)] = 20,
    priority_min: PriorityMin = None,
    priority_max: PriorityMax = None,
    cursor: CursorArg = None,
    tags: TagsFilter = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    updated_after: UpdatedAfter = None,
    updated_before: UpdatedBefore = None,
    linked_to: Annotated[
        str | None,
        Field(
            description="Only memories linked to or from this memory (either direction; an alias works too)",
            min_length=1,
            max_length=600,
        ),
    ] = None,
    author: AuthorFilter = None,
) -> ListMemoriesResult:
    """List memories, most important first (priority 0 first), then most recently updated. Filters: domain,
    status, inclusive priority bounds, tags (all of them), creation and change times, links to or from a
    memory, the member who wrote the current version (author). A truncated answer has next_cursor for the
    next page."""
    from hostd_memory.store import Filters

    _priority_range(ctx, priority_min, priority_max)
    times = _time_bounds(
        ctx,
        created_after=created_after,
        created_before=created_before,
        updated_after=updated_after,
        updated_before=updated_before,
    )
    store = _store(ctx)
    linked_id = None
    if linked_to is not None:
        linked_uri = _parse(ctx, linked_to, "linked_to")
        with _store_errors(ctx):
            linked_id = store.resolve(str(linked_uri))[0].id
    filters = Filters(
        domain=_domain(ctx, domain),
        status=status,
        priority_min=priority_min,
        priority_max=priority_max,
        tags=tuple(_tags(ctx, tags) or ()),
        linked_to=linked_id,
        created_after=times["created_after"],
        created_before=times["created_before"],
        updated_after=times["updated_after"],
        updated_before=times["updated_before"],
        author=_author(ctx, author),
    )
    signature = fingerprint(
        filters.domain,
        status,
        priority_min,
        priority_max,
        limit,
        *filters.tags,
        *times.values(),
        linked_id,
        *([filters.author] if filters.author is not None else []),  # cursors from before stay valid
    )
    after = _cursor_position(ctx, cursor, "list", signature)
    with _store_errors(ctx):
        items, last, more = _collect(
            lambda a, n: store.list_page(filters, a, n),
            _list_key,
            _listed,
            after,
            budget=_budget(ctx),
            max_items=limit,
        )
    return ListMemoriesResult(
        count=len(items),
        memories=items,
        truncated=more,
        next_cursor=encode_cursor("list", signature, last) if more else None,
    ).with_message(_paged_message(ctx, len(items), more, en="memories", zh="条记忆"))


def get_memory_stats(ctx: ToolContext) -> MemoryStatsResult:
    """Totals by status, by domain and by tag (the 100 most used), access totals and the most read
    memories, the number of versions, aliases, links and sessions, and the database's size on disk."""
    with _store_errors(ctx):
        stats = _store(ctx).stats()
    total = sum(count for status, count in stats["by_status"].items() if status != "deleted")
    result = MemoryStatsResult(
        total=total,
        by_status=stats["by_status"],
        by_domain=stats["by_domain"],
        total_accesses=stats["total_accesses"],
        most_read=[MostRead(uri=u, access_count=c) for u, c in stats["most_read"]],
        version_count=stats["version_count"],
        alias_count=stats["alias_count"],
        session_count=stats["session_count"],
        database_bytes=stats["database_bytes"],
        by_tag=stats["by_tag"],
        tag_count=stats["tag_count"],
        link_count=stats["link_count"],
    )
    return result.with_message(
        ctx.text(
            en=f"{total} memories in {len(stats['by_domain'])} domain(s).",
            zh=f"共 {total} 条记忆，分布在 {len(stats['by_domain'])} 个域。",
        )
    )


# --- export / import ---------------------------------------------------------------------------


def export_memories(
    ctx: ToolContext,
    domain: DomainArg = None,
    include_versions: Annotated[bool, Field(description="Include every version of each memory")] = False,
    include_relations: Annotated[
        bool, Field(description="Include aliases and the URIs each memory mentions")
    ] = False,
    output_path: Annotated[
        str | None,
        Field(
            description="Write the document to this JSON file (inside the "
            "allowed roots) instead of answering with it",
            min_length=1,
            max_length=4096,
        ),
    ] = None,
    overwrite: Annotated[bool, Field(description="Replace output_path if it exists")] = False,
    cursor: CursorArg = None,
) -> ExportMemoriesResult:
    """Export memories (all but deleted, optionally one domain) as a JSON document with a format name and
    version, under 'document'; import_memories takes it back. Large exports come in pages (next_cursor),
    or whole into a file with output_path (inside the allowed roots; an existing file only with
    overwrite=true)."""
    from hostd_memory import transfer
    from hostd_memory.store import Filters, mentioned_relations, now_iso

    filters = Filters(domain=_domain(ctx, domain))
    store = _store(ctx)

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

    document = transfer.document_header(filters.domain, include_versions, include_relations, now_iso())
    if output_path is not None:
        return _export_to_file(ctx, store, filters, entry, document, output_path, overwrite)
    signature = fingerprint(filters.domain, include_versions, include_relations)
    after = _cursor_position(ctx, cursor, "export", signature)
    with _store_errors(ctx):
        memories, last, more = _collect(
            lambda a, n: store.export_page(filters, int(a or 0), n),
            lambda m: m.id,
            entry,
            after,
            budget=_budget(ctx) - len(json.dumps(document)),
            max_items=100_000,
            size=lambda item: len(json.dumps(item, ensure_ascii=False)) + 2,
        )
    document["memories"] = memories
    result = ExportMemoriesResult(
        count=len(memories),
        document=document,
        truncated=more,
        next_cursor=encode_cursor("export", signature, last) if more else None,
    )
    return result.with_message(
        _paged_message(ctx, len(memories), more, en="memories exported", zh="条记忆已导出")
    )


def _export_to_file(
    ctx: ToolContext,
    store: MemoryStore,
    filters: Filters,
    entry: Callable[[MemoryRow], Any],
    document: dict[str, Any],
    output_path: str,
    overwrite: bool,
) -> ExportMemoriesResult:
    from hostd_fs import atomic_write, resolve_beneath

    target = resolve_beneath(output_path, ctx.roots(), allow_missing=True, expect="file")
    if target.exists() and not overwrite:
        raise ToolError(
            "ALREADY_EXISTS",
            ctx.text(en=f"{target} already exists.", zh=f"{target} 已存在。"),
            hint=ctx.text(
                en="Pass overwrite=true to replace it, or choose another output_path.",
                zh="传入 overwrite=true 以覆盖，或换一个 output_path。",
            ),
            details={"argument": "output_path", "path": str(target)},
        )
    memories: list[Any] = []
    last = 0
    with _store_errors(ctx):
        while True:
            rows = store.export_page(filters, last, 200)
            memories.extend(entry(m) for m in rows)
            if len(rows) < 200:
                break
            last = rows[-1].id
    document["memories"] = memories
    written = atomic_write(target, json.dumps(document, ensure_ascii=False, indent=1))
    return ExportMemoriesResult(
        count=len(memories), output_path=str(target), bytes_written=written
    ).with_message(
        ctx.text(
            en=f"Exported {len(memories)} memories to {target}.",
            zh=f"已将 {len(memories)} 条记忆导出到 {target}。",
        )
    )


# The largest file import_memories reads from input_path.
MAX_INPUT_BYTES = 256 * 1024 * 1024


def _input_document(ctx: ToolContext, input_path: str) -> tuple[Path, str]:
    """The file at input_path (inside the roots) as text, read beneath the root's folder descriptor
    (a folder swapped for a symlink meanwhile is refused), without blocking on a FIFO."""
    from hostd_fs import FsError, read_beneath, resolve_beneath

    rooted = resolve_beneath(input_path, ctx.roots(), allow_missing=False, expect="file")
    target = rooted.path
    try:
        raw = read_beneath(rooted, max_bytes=MAX_INPUT_BYTES)
    except FsError as exc:
        if exc.reason != "FILE_TOO_LARGE":
            raise
        size = target.stat().st_size if target.exists() else MAX_INPUT_BYTES + 1
        raise ToolError(
            "TOO_LONG",
            ctx.text(
                en=f"{target} holds {size} bytes; import reads at most {MAX_INPUT_BYTES} bytes.",
                zh=f"{target} 有 {size} 字节；导入最多读取 {MAX_INPUT_BYTES} 字节。",
            ),
            hint=ctx.text(
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
            ctx.text(
                en=f"{target} is not UTF-8 text (byte {exc.start}).",
                zh=f"{target} 不是 UTF-8 文本（第 {exc.start} 字节）。",
            ),
            hint=ctx.text(
                en="Give a file written by export_memories or by the official memory server (JSONL).",
                zh="请给出由 export_memories 或官方 memory 服务器写出的文件（JSONL）。",
            ),
            details={"argument": "input_path", "byte": exc.start},
        ) from None


def _unknown_file(ctx: ToolContext, target: Path) -> ToolError:
    from hostd_memory import transfer

    return ToolError(
        "INVALID_ARGUMENT",
        ctx.text(
            en=f"{target} is neither an export of this server nor a file of the official memory server.",
            zh=f"{target} 既不是本服务导出的文件，也不是官方 memory 服务器的文件。",
        ),
        hint=ctx.text(
            en=f"Give a JSON document with format '{transfer.FORMAT_NAME}' (what export_memories writes), or "
            "the JSONL file of @modelcontextprotocol/server-memory (its MEMORY_FILE_PATH): one entity or "
            "relation per line.",
            zh=f"请给出 format 为 '{transfer.FORMAT_NAME}' 的 JSON 文档（export_memories 写出的文件），或 "
            "@modelcontextprotocol/server-memory 的 JSONL 文件（其 MEMORY_FILE_PATH）：每行一个实体或关系。",
        ),
        details={"argument": "input_path"},
    )


def _graph_file_error(ctx: ToolContext, target: Path, problems: list[dict[str, Any]]) -> ToolError:
    lines = ", ".join(str(p["line"]) for p in problems[:10])
    more = "..." if len(problems) > 10 else ""
    return ToolError(
        "INVALID_ARGUMENT",
        ctx.text(
            en=f"{target} has {len(problems)} malformed line(s) (line {lines}{more}); nothing was imported.",
            zh=f"{target} 有 {len(problems)} 行格式错误（第 {lines}{more} 行）；未导入任何内容。",
        ),
        hint=ctx.text(
            en='Each line must be {"type": "entity", "name", "entityType", "observations": [...]} or '
            '{"type": "relation", "from", "to", "relationType"}; fix or remove the lines named in '
            "details.lines and import again.",
            zh='每行必须是 {"type": "entity", "name", "entityType", "observations": [...]} 或 '
            '{"type": "relation", "from", "to", "relationType"}；'
            "请修正或删除 details.lines 所列的行后重新导入。",
        ),
        details={"argument": "input_path", "lines": problems},
    )


def import_memories(
    ctx: ToolContext,
    data: Annotated[
        dict[str, Any] | None,
        Field(
            description="An export document (format 'hostd-memory-export'), or the "
            "whole answer of export_memories; or give input_path instead"
        ),
    ] = None,
    strategy: Annotated[
        Literal["skip", "overwrite", "merge"],
        Field(
            description="For URIs that exist: skip them, overwrite them (as a new version), or "
            "merge (append missing content, keep the more important priority, add tags)"
        ),
    ] = "skip",
    input_path: Annotated[
        str | None,
        Field(
            description="Instead of data: a file inside the allowed roots, either what export_memories wrote "
            "or the JSONL file of the official @modelcontextprotocol/server-memory (detected by its shape)",
            min_length=1,
            max_length=4096,
        ),
    ] = None,
) -> ImportMemoriesResult:
    """Import an export document (data), or a file (input_path): an export, or the official memory server's
    JSONL knowledge graph (entity -> memory entity://<name> with its type as a tag and observations as
    content; relation -> link). Everything is checked first, then applied in one transaction; reports how
    many memories were created, skipped, overwritten, merged or left unchanged, links added, and each item
    that could not be imported (and why). Importing the same input twice changes nothing."""
    from hostd_memory import transfer
    from hostd_memory.store import ImportReport

    if (data is None) == (input_path is None):
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en="Give exactly one of data and input_path.", zh="data 与 input_path 必须且只能给出一个。"
            ),
            hint=ctx.text(
                en="data takes what export_memories answered; input_path a file inside the allowed roots.",
                zh="data 接收 export_memories 的结果；input_path 接收允许目录内的文件。",
            ),
            details={"argument": "data" if data is None else "input_path"},
        )
    graph: Any = None
    target: Path | None = None
    if input_path is not None:
        target, text = _input_document(ctx, input_path)
        if transfer.looks_like_graph(text):
            try:
                graph = transfer.official_graph_document(text)
            except transfer.GraphFileError as exc:
                raise _graph_file_error(ctx, target, exc.problems) from None
            data = graph.document
        else:
            try:
                data = json.loads(text)
            except ValueError:
                data = None
            if not isinstance(data, dict):
                raise _unknown_file(ctx, target)
    assert data is not None
    try:
        document, original_version = transfer.load_document(data)
    except transfer.DocumentError as exc:
        argument = "data" if input_path is None else "input_path"
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"{argument} is not an importable document ({exc.problem} at {exc.where}).",
                zh=f"{argument} 不是可导入的文档（{exc.where} 处：{exc.problem}）。",
            ),
            hint=ctx.text(
                en=f"Pass what export_memories returned: an object with format "
                f"'{transfer.FORMAT_NAME}', version 1-{transfer.FORMAT_VERSION} and a list of memories.",
                zh=f"请传入 export_memories 的结果：format 为 '{transfer.FORMAT_NAME}'、version 为 "
                f"1-{transfer.FORMAT_VERSION}、并含 memories 列表的对象。",
            ),
            details={"argument": argument, "problem": exc.problem, "where": exc.where},
        ) from None
    items, problems = transfer.check_items(document, ctx.member)
    report = ImportReport()
    with _store_errors(ctx):
        _store(ctx).import_items(items, strategy, report, author=ctx.member)
    found = [*problems, *report.errors]
    if graph is not None:
        for problem in found:
            problem["line"] = _graph_line_of(graph, problem)
        found += graph.problems
    errors = sorted(
        (_import_problem(ctx, p) for p in found),
        key=lambda e: (e.index if e.index is not None else -1, e.line or 0),
    )
    result = ImportMemoriesResult(
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
        ctx.text(
            en=f"Imported: {result.created} created, {result.skipped} skipped, "
            f"{result.overwritten} overwritten, {result.merged} merged, "
            f"{result.unchanged} unchanged, {result.links_added} link(s) added, {len(errors)} error(s).",
            zh=f"导入完成：新建 {result.created}，跳过 {result.skipped}，"
            f"覆盖 {result.overwritten}，合并 {result.merged}，"
            f"未变 {result.unchanged}，新增链接 {result.links_added}，错误 {len(errors)}。",
        )
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


def _import_problem(ctx: ToolContext, problem: dict[str, Any]) -> ImportProblem:
    kind = str(problem["problem"]).partition(":")[0]
    cycle = problem.get("cycle")
    return ImportProblem(
        index=problem.get("index"),
        uri=problem.get("uri"),
        code=_IMPORT_PROBLEM_CODES.get(kind, "INVALID_ARGUMENT"),
        field=problem.get("field"),
        line=problem.get("line"),
        problem=problem["problem"],
        message=_import_problem_text(ctx, problem["problem"], problem.get("field"), cycle),
        cycle=[ImportItemRef(**member) for member in cycle] if cycle else None,
    )


def _import_problem_text(
    ctx: ToolContext, problem: str, field: str | None, cycle: list[dict[str, Any]] | None = None
) -> str:
    kind, _, detail = problem.partition(":")
    name = field or "?"
    members = ", ".join(f"{m['index']} ({m['uri']})" for m in cycle or [])
    texts = {
        "invalid_uri": (
            f"invalid URI in {name} ({_uri_problem(ctx, detail)})",
            f"{name} 中的 URI 无效（{_uri_problem(ctx, detail)}）",
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
        "alias_cycle": (
            f"the aliases of items {members} name each other in a cycle; none of them was imported",
            f"条目 {members} 的别名互相指向，构成循环；这些条目均未导入",
        ),
    }
    en, zh = texts.get(kind, (f"{name} is invalid ({kind})", f"{name} 无效（{kind}）"))
    return ctx.text(en=en, zh=zh)


# --- aliases and versions ------------------------------------------------------------------------


def add_alias(
    ctx: ToolContext,
    target_uri: Annotated[
        str,
        Field(
            description="URI of the existing memory (an alias of it works too)", min_length=1, max_length=600
        ),
    ],
    alias_uri: Annotated[
        str, Field(description="The new URI that will also lead to the memory", min_length=1, max_length=600)
    ],
) -> AddAliasResult:
    """Give a memory another URI (e.g. user://profile for core://agent/my_user). The target must exist; the
    alias must not exist as a memory or an alias. An alias of an alias leads to the real memory; cycles
    are impossible."""
    target = _writable(ctx, target_uri, "target_uri")
    alias = _writable(ctx, alias_uri, "alias_uri")
    if alias == target:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(en="alias_uri is the same URI as target_uri.", zh="alias_uri 与 target_uri 相同。"),
            hint=ctx.text(en="Give the alias a different URI.", zh="请为别名使用不同的 URI。"),
            details={"argument": "alias_uri"},
        )
    with _store_errors(ctx):
        memory = _store(ctx).add_alias(str(target), str(alias))
    return AddAliasResult(alias_uri=str(alias), target_uri=memory.uri, memory=_record(memory)).with_message(
        ctx.text(en=f"{alias} now leads to {memory.uri}.", zh=f"{alias} 现在指向 {memory.uri}。")
    )


LinkEndArg = Annotated[
    str, Field(description="URI of a memory (an alias leads to its memory)", min_length=1, max_length=600)
]


def link_memories(
    ctx: ToolContext, from_uri: LinkEndArg, to_uri: LinkEndArg, relation: RelationArg
) -> LinkMemoriesResult:
    """Link one memory to another with a relation name in free text ('depends on', 'contradicts', '参考').
    Links join the memories themselves: an alias links its memory, and renaming through aliases keeps
    them. read_memory shows links both ways; list_memories(linked_to=...) lists a memory's neighbours.
    Linking again is harmless (created: false); cycles are allowed, a memory linked to itself is not."""
    source_uri = _writable(ctx, from_uri, "from_uri")
    target_uri = _writable(ctx, to_uri, "to_uri")
    name = _relation(ctx, relation)
    with _store_errors(ctx):
        source, target, created = _store(ctx).link(str(source_uri), str(target_uri), name)
    result = LinkMemoriesResult(from_uri=source.uri, to_uri=target.uri, relation=name, created=created)
    if not created:
        return result.with_message(
            ctx.text(
                en=f"{source.uri} already links to {target.uri} ({name}); nothing changed.",
                zh=f"{source.uri} 已链接到 {target.uri}（{name}），未作改动。",
            )
        )
    return result.with_message(
        ctx.text(
            en=f"Linked {source.uri} to {target.uri} ({name}).",
            zh=f"已将 {source.uri} 链接到 {target.uri}（{name}）。",
        )
    )


def unlink_memories(
    ctx: ToolContext,
    from_uri: LinkEndArg,
    to_uri: LinkEndArg,
    relation: Annotated[
        str | None,
        Field(
            description="The relation to remove; omitted: every link from from_uri to to_uri",
            min_length=1,
            max_length=100,
        ),
    ] = None,
) -> UnlinkMemoriesResult:
    """Remove the link from one memory to another (one relation, or all of them between the two in that
    direction). Works when either memory is soft-deleted too. NOT_FOUND when there is no such link."""
    source_uri = _writable(ctx, from_uri, "from_uri")
    target_uri = _writable(ctx, to_uri, "to_uri")
    name = _relation(ctx, relation) if relation is not None else None
    with _store_errors(ctx):
        source, target, removed = _store(ctx).unlink(str(source_uri), str(target_uri), name)
    return UnlinkMemoriesResult(from_uri=source.uri, to_uri=target.uri, removed=removed).with_message(
        ctx.text(
            en=f"Removed {len(removed)} link(s) from {source.uri} to {target.uri}.",
            zh=f"已删除从 {source.uri} 到 {target.uri} 的 {len(removed)} 个链接。",
        )
    )


def get_memory_versions(ctx: ToolContext, uri: UriArg, limit: HistoryLimit = 10) -> MemoryVersionsResult:
    """A memory's version history, newest first (the current version included): each version's time, change
    note (created, patch, append, replace, metadata, status, rollback, import), size and a preview."""
    parsed = _memory_uri(ctx, uri, "uri")
    with _store_errors(ctx):
        memory, versions, total = _store(ctx).versions(str(parsed), limit=limit)
    summaries, _ = fill_within_budget([_version_summary(v) for v in versions], _budget(ctx))
    return MemoryVersionsResult(
        uri=memory.uri, current_version=memory.version, total=total, versions=summaries
    ).with_message(
        ctx.text(
            en=f"{memory.uri} is at version {memory.version}; {total} version(s) in all.",
            zh=f"{memory.uri} 当前为版本 {memory.version}，共 {total} 个版本。",
        )
    )


def list_rollbacks(ctx: ToolContext, uri: UriArg, limit: HistoryLimit = 10) -> ListRollbacksResult:
    """The versions a memory can be rolled back to (every version but the current), newest first, each
    with what a rollback would change against the current state (content lines added/removed, priority,
    disclosure, tags)."""
    import difflib

    parsed = _memory_uri(ctx, uri, "uri")
    with _store_errors(ctx):
        memory, versions, total = _store(ctx).versions(str(parsed), limit=limit + 1)
    total -= 1  # the current version is no target
    current_lines = memory.content.splitlines()
    options = []
    for version in versions:
        if version.current:
            continue
        added = removed = 0
        if version.content != memory.content:
            for line in difflib.ndiff(current_lines, version.content.splitlines()):
                added += line.startswith("+ ")
                removed += line.startswith("- ")
        summary = _version_summary(version)
        options.append(
            RollbackOption(
                **summary.model_dump(),
                content_changed=version.content != memory.content,
                lines_added=added,
                lines_removed=removed,
                priority_change=f"{memory.priority} -> {version.priority}"
                if version.priority != memory.priority
                else None,
                disclosure_changed=version.disclosure != memory.disclosure,
                tags_changed=version.tags != memory.tags,
            )
        )
    options, _ = fill_within_budget(options, _budget(ctx))
    return ListRollbacksResult(
        uri=memory.uri, current_version=memory.version, total=total, rollbacks=options
    ).with_message(
        ctx.text(
            en=f"{memory.uri}: {len(options)} version(s) to roll back to (current {memory.version}).",
            zh=f"{memory.uri}：可回滚的版本 {len(options)} 个（当前版本 {memory.version}）。",
        )
    )


def rollback_memory(
    ctx: ToolContext,
    uri: UriArg,
    version: Annotated[
        int, Field(description="The version to restore (see list_rollbacks)", ge=1, le=MAX_VERSION)
    ],
) -> RollbackMemoryResult:
    """Restore a version's content, priority and disclosure as a new version (history is never rewritten,
    so a rollback can itself be rolled back). Also restores a soft-deleted memory. When the memory already
    holds that state (e.g. the current version), nothing is written and changed is false."""
    parsed = _writable(ctx, uri, "uri")
    with _store_errors(ctx):
        memory, restored, changed = _store(ctx).rollback(str(parsed), version, author=ctx.member)
    result = RollbackMemoryResult(
        uri=memory.uri,
        restored_version=restored.version,
        new_version=memory.version,
        changed=changed,
        memory=_record(memory),
    )
    if not changed:
        return result.with_message(
            ctx.text(
                en=f"{memory.uri} already holds version {version}'s state; nothing changed "
                f"(still version {memory.version}).",
                zh=f"{memory.uri} 已是版本 {version} 的状态，未作改动（仍为版本 {memory.version}）。",
            )
        )
    return result.with_message(
        ctx.text(
            en=f"{memory.uri} restored to version {version}'s state as version {memory.version}.",
            zh=f"{memory.uri} 已恢复为版本 {version} 的状态，新版本为 {memory.version}。",
        )
    )


NO_NEWLINE_MARK = "\\ No newline at end of file\n"


def _unified_diff(old: str, new: str, fromfile: str, tofile: str) -> str:
    """A unified diff ``patch`` applies: difflib leaves a last line without a newline unterminated,
    which glues it to the next diff line, so each such line gets the marker diff(1) writes. Lines
    end at a line feed only, as patch reads them (str.splitlines also splits at CR, U+2028, ...)."""
    import difflib

    def lines_of(text: str) -> list[str]:
        *whole, last = text.split("\n")
        return [f"{line}\n" for line in whole] + ([last] if last else [])

    lines = difflib.unified_diff(lines_of(old), lines_of(new), fromfile=fromfile, tofile=tofile)
    return "".join(line if line.endswith("\n") else f"{line}\n{NO_NEWLINE_MARK}" for line in lines)


def diff_versions(
    ctx: ToolContext,
    uri: UriArg,
    version1: Annotated[int, Field(description="The first (older) version", ge=1, le=MAX_VERSION)],
    version2: Annotated[int, Field(description="The second (newer) version", ge=1, le=MAX_VERSION)],
) -> DiffVersionsResult:
    """Compare two versions of a memory: both full contents and a unified diff from version1 to version2."""
    parsed = _memory_uri(ctx, uri, "uri")
    with _store_errors(ctx):
        memory, first, second = _store(ctx).version_pair(str(parsed), version1, version2)
    diff = _unified_diff(
        first.content, second.content, f"{memory.uri}@v{version1}", f"{memory.uri}@v{version2}"
    )
    share = max(500, _budget(ctx) // 3)
    content1, cut1 = clip(first.content, share)
    content2, cut2 = clip(second.content, share)
    diff_text, cut3 = clip(diff, share)
    return DiffVersionsResult(
        uri=memory.uri,
        version1=version1,
        version2=version2,
        content1=content1,
        content2=content2,
        author1=first.author,
        author2=second.author,
        diff=diff_text,
        identical=first.content == second.content,
        truncated=cut1 or cut2 or cut3,
    ).with_message(
        ctx.text(
            en=f"{memory.uri}: version {version1} and {version2} "
            f"{'have the same content' if first.content == second.content else 'differ'}.",
            zh=f"{memory.uri}：版本 {version1} 与 {version2} "
            f"{'内容相同' if first.content == second.content else '内容不同'}。",
        )
    )


ALL_TOOLS: list[tuple[Callable[..., Any], dict[str, bool]]] = [
    (read_memory, {"read_only": False, "destructive": False}),
    (create_memory, {"destructive": False}),
    (update_memory, {"destructive": False}),
    (delete_memory, {"destructive": True}),
    (search_memory, {"read_only": True}),
    (preload_memory, {"read_only": True}),
    (save_session, {"destructive": False}),
    (list_memories, {"read_only": True}),
    (get_memory_stats, {"read_only": True}),
    # Export may overwrite an existing file (overwrite=true), like deep-thinking's export_session.
    (export_memories, {"destructive": True, "uses_roots": True}),
    (import_memories, {"destructive": True, "uses_roots": True}),
    (add_alias, {"destructive": False}),
    (link_memories, {"destructive": False, "idempotent": True}),
    (unlink_memories, {"destructive": True}),
    (get_memory_versions, {"read_only": True}),
    (rollback_memory, {"destructive": False}),
    (diff_versions, {"read_only": True}),
    (list_rollbacks, {"read_only": True}),
]
