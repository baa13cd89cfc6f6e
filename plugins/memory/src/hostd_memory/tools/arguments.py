"""The tools' shared arguments: their types (the descriptions are what the model reads) and the
checks the schema cannot make (URIs, tags, relation names, times, ranges), each refusing with
INVALID_ARGUMENT (or PERMISSION_DENIED / NOT_FOUND for a system URI) that names the argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

from pydantic import Field
from typing_extensions import TypeAliasType

from hostd import Text, ToolError
from hostd_memory.models import MEMBER_NAME_PATTERN
from hostd_memory.uris import VALID_FORM, InvalidUri, MemoryUri, parse_domain, parse_uri

if TYPE_CHECKING:
    from hostd_memory.store import Filters

MAX_CONTENT = 2_000_000

MAX_DISCLOSURE = 2_000

UriArg = Annotated[str, Field(description="Memory URI, e.g. project://config", min_length=1, max_length=600)]

PriorityArg = Annotated[
    int, Field(description="0 most important; 0-2 core, 3-5 normal, 6-10 low", ge=0, le=10)
]

OptionalPriority = Annotated[int | None, Field(description="New priority, 0 most important", ge=0, le=10)]

PriorityMin = Annotated[int | None, Field(description="Priority at least", ge=0, le=10)]

PriorityMax = Annotated[int | None, Field(description="Priority at most", ge=0, le=10)]

DomainArg = Annotated[
    str | None, Field(description="Only this domain, e.g. project", min_length=1, max_length=70)
]

# Tags: the schema bounds what a client may send; store.normalise_tags then folds case and width,
# collapses whitespace and refuses control characters and commas (the same limits: 64 and 32).
TAG_EXAMPLE = '["rust", "部署", "on call"]'

Tag = Annotated[str, Field(min_length=1, max_length=64)]

TagsArg = Annotated[
    list[Tag] | None,
    Field(
        description="Tags, e.g. " + TAG_EXAMPLE,
        max_length=32,
    ),
]

TagsFilter = Annotated[
    list[Tag] | None,
    Field(description="Only memories with all these tags", max_length=32),
]

AuthorFilter = Annotated[
    str | None,
    Field(
        description="Only memories whose current version this member wrote",
        min_length=1,
        max_length=64,
    ),
]

TIME_EXAMPLE = "2026-05-01, 2026-05-01T09:30:00 or 2026-05-01T09:30:00+08:00"

# One shared definition (``$defs``) for the four time filters, so its help is paid for once.
Time = TypeAliasType(
    "Time",
    Annotated[
        str,
        Field(
            description="ISO 8601 (UTC without a zone), e.g. 2026-05-01T09:30:00+08:00",
            min_length=1,
            max_length=64,
        ),
    ],
)

CreatedAfter = Annotated[Time | None, Field(description="Created at or after")]

CreatedBefore = Annotated[Time | None, Field(description="Created before")]

UpdatedAfter = Annotated[Time | None, Field(description="Last changed at or after")]

UpdatedBefore = Annotated[Time | None, Field(description="Last changed before")]

RelationArg = Annotated[
    str,
    Field(
        description="Free text, e.g. 'depends on', '参考'",
        min_length=1,
        max_length=100,
    ),
]


def uri_problem(reason: str) -> Text:
    """What is wrong with a URI, from ``InvalidUri.reason``."""
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
    en, zh = texts.get(reason, (f"it is not valid ({reason})", f"无效（{reason}）"))
    return Text(en=en, zh=zh)


def uri_argument(text: str, argument: str) -> MemoryUri:
    try:
        return parse_uri(text)
    except InvalidUri as exc:
        problem = uri_problem(exc.reason)
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en=f"Invalid URI in '{argument}': {problem.en}.",
                zh=f"参数 '{argument}' 的 URI 无效：{problem.zh}。",
            ),
            hint=Text(
                en=f"Use the form {VALID_FORM}.",
                zh="格式为 domain://path/to/memory（域名：小写字母、数字和 '-'；路径：一个或多个段）。",
            ),
            details={"argument": argument, "reason": exc.reason, "valid_form": VALID_FORM},
        ) from None


def writable_uri(text: str, argument: str) -> MemoryUri:
    uri = uri_argument(text, argument)
    if uri.is_system:
        raise ToolError(
            "PERMISSION_DENIED",
            Text(
                en=f"{uri} is in the reserved system:// domain, which is read-only.",
                zh=f"{uri} 属于保留的 system:// 域，只读。",
            ),
            hint=Text(
                en="Use another domain, e.g. project://, user://, core://.",
                zh="请使用其他域名，例如 project://、user://、core://。",
            ),
            details={"argument": argument, "uri": str(uri)},
        )
    return uri


def memory_uri(text: str, argument: str) -> MemoryUri:
    """A URI naming a memory (not a system view), for the history tools."""
    uri = uri_argument(text, argument)
    if uri.is_system:
        raise ToolError(
            "NOT_FOUND",
            Text(
                en=f"{uri} is a system view, not a memory: it has no versions.",
                zh=f"{uri} 是系统视图而非记忆，没有版本。",
            ),
            hint=Text(en="Read it with read_memory.", zh="请用 read_memory 读取。"),
            details={"argument": argument, "uri": str(uri)},
        )
    return uri


def domain_filter(domain: str | None) -> str | None:
    if domain is None:
        return None
    try:
        return parse_domain(domain)
    except InvalidUri:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en=f"Invalid domain {domain!r}: only lowercase letters, digits and '-'.",
                zh=f"域名 {domain!r} 无效：只能包含小写字母、数字和 '-'。",
            ),
            hint=Text(
                en="Give the part before '://', e.g. project.", zh="请给出 '://' 之前的部分，例如 project。"
            ),
            details={"argument": "domain"},
        ) from None


def author_filter(author: str | None) -> str | None:
    """A member name to filter by, or INVALID_ARGUMENT naming ``author`` (no member has such a name)."""
    if author is None or re.match(MEMBER_NAME_PATTERN, author):
        return author
    raise ToolError(
        "INVALID_ARGUMENT",
        Text(
            en=f"author {author[:80]!r} is not a member name.",
            zh=f"author {author[:80]!r} 不是有效的成员名。",
        ),
        hint=Text(
            en="Give a member's name as the tokens file lists it (letters, digits, '_', '-', '.'; "
            "not starting with '.'), e.g. alice.",
            zh="请给出令牌文件中的成员名（字母、数字、'_'、'-'、'.'，不以 '.' 开头），例如 alice。",
        ),
        details={"argument": "author"},
    )


def check_priority_range(low: int | None, high: int | None) -> None:
    if low is not None and high is not None and low > high:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en=f"priority_min ({low}) is greater than priority_max ({high}).",
                zh=f"priority_min（{low}）大于 priority_max（{high}）。",
            ),
            hint=Text(
                en="Both bounds are inclusive, 0-10, with priority_min <= priority_max.",
                zh="两个边界都包含在内，取值 0-10，且 priority_min <= priority_max。",
            ),
            details={"argument": "priority_min", "priority_min": low, "priority_max": high},
        )


def label_problem(reason: str) -> Text:
    """What is wrong with a tag or relation name, from ``BadLabel.reason``."""
    texts = {
        "empty": ("it is empty or only whitespace", "为空或只有空白"),
        "too_long": ("it is too long once normalised", "规范化后过长"),
        "too_many": ("there are more than 32 distinct tags", "不同的标签超过 32 个"),
        "bad_character": (
            "it holds a control character, a comma or invalid Unicode",
            "含有控制字符、逗号或无效的 Unicode",
        ),
    }
    en, zh = texts.get(reason, (f"it is not valid ({reason})", f"无效（{reason}）"))
    return Text(en=en, zh=zh)


def tag_list(values: list[str] | None, argument: str = "tags") -> list[str] | None:
    """The tags as the store keeps them, or INVALID_ARGUMENT naming the tag at fault."""
    from hostd_memory.store import BadLabel, normalise_tags

    if values is None:
        return None
    try:
        return normalise_tags(values)
    except BadLabel as exc:
        problem = label_problem(exc.reason)
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en=f"Invalid tag in '{argument}' ({exc.text!r}): {problem.en}.",
                zh=f"参数 '{argument}' 中的标签无效（{exc.text!r}）：{problem.zh}。",
            ),
            hint=Text(
                en=f"Give short labels, e.g. {TAG_EXAMPLE}: up to 32 tags of up to 64 characters each.",
                zh='请使用简短的标签，例如 ["后端", "部署", "值班"]：最多 32 个，每个最多 64 个字符。',
            ),
            details={"argument": argument, "reason": exc.reason},
        ) from None


def relation_name(relation: str) -> str:
    from hostd_memory.store import BadLabel, normalise_relation

    try:
        return normalise_relation(relation)
    except BadLabel as exc:
        problem = label_problem(exc.reason)
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en=f"Invalid relation name: {problem.en}.",
                zh=f"关系名称无效：{problem.zh}。",
            ),
            hint=Text(
                en="Name the relation in a few words, e.g. 'depends on' or 'contradicts'.",
                zh="请用几个词命名关系，例如 “依赖” 或 “矛盾”。",
            ),
            details={"argument": "relation", "reason": exc.reason},
        ) from None


def time_bounds(**bounds: str | None) -> dict[str, str | None]:
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
                Text(
                    en=f"{argument} is not an ISO 8601 date or time within the years 1-9999: {value[:80]!r}.",
                    zh=f"{argument} 不是 1-9999 年之间的 ISO 8601 日期或时间：{value[:80]!r}。",
                ),
                hint=Text(
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
                Text(
                    en=f"{kind}_after must be earlier than {kind}_before.",
                    zh=f"{kind}_after 必须早于 {kind}_before。",
                ),
                hint=Text(
                    en="The range is [after, before): after is included, before is not.",
                    zh="范围为 [after, before)：包含 after，不包含 before。",
                ),
                details={"argument": f"{kind}_after", f"{kind}_after": after, f"{kind}_before": before},
            )
    return parsed


def listing_filters(
    *,
    domain: str | None,
    priority_min: int | None,
    priority_max: int | None,
    tags: list[str] | None,
    created_after: str | None,
    created_before: str | None,
    updated_after: str | None,
    updated_before: str | None,
    author: str | None,
    status: str | None = None,
    linked_to: Callable[[], int] | None = None,
) -> Filters:
    """The store's ``Filters`` from the filter arguments ``list_memories`` and ``search_memory`` share,
    each checked as above (INVALID_ARGUMENT naming it). ``linked_to`` looks the linked memory up in
    the store; it runs after the range and time checks, before the rest, as ``list_memories`` did."""
    from hostd_memory.store import Filters

    check_priority_range(priority_min, priority_max)
    times = time_bounds(
        created_after=created_after,
        created_before=created_before,
        updated_after=updated_after,
        updated_before=updated_before,
    )
    linked_id = linked_to() if linked_to is not None else None
    return Filters(
        domain=domain_filter(domain),
        status=status,
        priority_min=priority_min,
        priority_max=priority_max,
        tags=tuple(tag_list(tags) or ()),
        linked_to=linked_id,
        created_after=times["created_after"],
        created_before=times["created_before"],
        updated_after=times["updated_after"],
        updated_before=times["updated_before"],
        author=author_filter(author),
    )
