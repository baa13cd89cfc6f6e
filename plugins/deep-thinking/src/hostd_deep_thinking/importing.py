"""Reading a session back in: a JSON export (``export_session(format='json')``) or a bare
session document in the spec's shape, checked field by field.

Anything that is not a session this plugin can store is ``ImportProblem`` (INVALID_ARGUMENT
naming the field), raised where it is found, and nothing is stored. Labels, members and
references are checked with the same rules a thought added live meets.
"""

from __future__ import annotations

from typing import Annotated, Any

from hostd_db import utc_stamp
from pydantic import BaseModel, Field, ValidationError

from hostd import Text, TextLength, ToolError, validation_reason
from hostd_deep_thinking.export import EXPORT_FORMAT
from hostd_deep_thinking.jsonshape import MAX_NESTING, shape_problem
from hostd_deep_thinking.models import (
    BRANCH_ID_PATTERN,
    MAX_STAGE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_THOUGHT_CHARS,
    MAX_THOUGHTS,
    MEMBER_NAME_PATTERN,
    SESSION_ID_PATTERN,
)
from hostd_deep_thinking.store import FORMAT_VERSION


class ImportedThought(BaseModel):
    """A thought as an import may carry it: the spec's fields, with what we can derive left optional."""

    seq: int | None = Field(default=None, ge=1)
    sequence: int | None = Field(default=None, ge=1)
    thought_number: int = Field(ge=1, le=MAX_THOUGHTS)
    # Counted with len(): pydantic's own check would keep a UTF-8 copy inside every thought.
    content: Annotated[str, TextLength(min_length=1, max_length=MAX_THOUGHT_CHARS)]
    type: str | None = None
    is_revision: bool = False
    revises_thought: int | None = Field(default=None, ge=1)
    branch_from_thought: int | None = Field(default=None, ge=1)
    branch_id: str | None = Field(default=None, pattern=BRANCH_ID_PATTERN)
    total_thoughts: int | None = Field(default=None, ge=1)
    next_thought_needed: bool = True
    needs_more_thoughts: bool = False
    timestamp: str | None = Field(default=None, max_length=64)
    stage: str | None = Field(default=None, min_length=1, max_length=MAX_STAGE_CHARS)
    tags: list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]] = Field(
        default_factory=list, max_length=MAX_TAGS
    )
    by: str | None = Field(default=None, pattern=MEMBER_NAME_PATTERN)


class ImportedAdjustment(BaseModel):
    time: str = Field(max_length=64)
    from_total: int
    to_total: int
    reason: str = Field(max_length=64)
    sequence: int


class ImportedSession(BaseModel):
    session_id: str = Field(pattern=SESSION_ID_PATTERN)
    name: str | None = Field(default=None, max_length=200)
    description: Annotated[str, TextLength(max_length=5000)] = ""
    created_at: str | None = Field(default=None, max_length=64)
    updated_at: str | None = Field(default=None, max_length=64)
    status: str = Field(default="active", pattern=r"^(active|completed|archived)$")
    metadata: dict[str, Any] = Field(default_factory=dict)
    template_id: str | None = Field(default=None, max_length=64)
    created_by: str | None = Field(default=None, pattern=MEMBER_NAME_PATTERN)
    total_thoughts: int | None = Field(default=None, ge=1)
    adjustments: list[ImportedAdjustment] = Field(default_factory=list)
    thoughts: list[ImportedThought] = Field(default_factory=list, max_length=MAX_THOUGHTS)


class ImportProblem(ToolError):
    """The data is not a session this plugin can import: INVALID_ARGUMENT naming the field at fault."""

    def __init__(self, field_name: str, en: str, zh: str) -> None:
        super().__init__(
            "INVALID_ARGUMENT",
            Text(
                en=f"The import is not a session: {field_name}: {en}.",
                zh=f"导入内容不是有效的会话：{field_name}：{zh}。",
            ),
            hint=Text(
                en="Pass a file written by export_session(format='json').",
                zh="请传入 export_session(format='json') 生成的文件。",
            ),
            details={"argument": "path_or_data", "field": field_name},
        )
        self.field = field_name


_JSON_KINDS = {list: ("array", "数组"), str: ("string", "字符串"), bool: ("boolean", "布尔值")}


def _not_an_object(raw: Any) -> ImportProblem:
    en_kind, zh_kind = _JSON_KINDS.get(
        type(raw), ("number" if raw is not None else "null", "数字" if raw is not None else "null")
    )
    return ImportProblem(
        "(root)",
        en=f"the document is a JSON {en_kind}, not an object",
        zh=f"文档是 JSON {zh_kind}，不是对象",
    )


def _unwrap_export(raw: dict[str, Any]) -> dict[str, Any]:
    """The session inside an export_session(format='json') wrapper, after checking its tag and version."""
    tag = raw.get("format")
    if tag != EXPORT_FORMAT:
        found_en = "it is missing" if tag is None else f"found {str(tag)[:80]!r}"
        found_zh = "缺少该字段" if tag is None else f"实际为 {str(tag)[:80]!r}"
        raise ImportProblem(
            "format",
            en=f"an export is tagged format '{EXPORT_FORMAT}'; {found_en}",
            zh=f"导出文件的 format 应为 '{EXPORT_FORMAT}'；{found_zh}",
        )
    version = raw.get("format_version", 1)
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ImportProblem(
            "format_version",
            en=f"unsupported format_version {str(version)[:40]!r} (this server reads {FORMAT_VERSION})",
            zh=f"不支持的 format_version {str(version)[:40]!r}（本服务读取 {FORMAT_VERSION}）",
        )
    session = raw.get("session")
    if not isinstance(session, dict):
        raise ImportProblem("session", en="the export holds no session object", zh="导出文件中没有会话对象")
    return session


def _validation_problem(exc: ValidationError) -> ImportProblem:
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "(root)"
    if first["type"] == "missing":
        return ImportProblem(where, en="missing", zh="缺少该字段")
    why = validation_reason(first)
    return ImportProblem(where, en=why.en, zh=why.zh)


def parse_import(raw: Any, session_id: str | None, *, importer: str | None = None) -> dict[str, Any]:
    """A stored session document from an export (any known version) or a bare spec-shaped session.

    The session keeps the ``created_by`` it carries; one without (an older export, another
    program's document) is recorded as created by ``importer``. Thoughts keep their ``by``, if any.
    Anything else is refused before a byte is stored: a document without a ``thoughts`` list
    (``{}``, another program's layout) is not an empty session.
    """
    if not isinstance(raw, dict):
        raise _not_an_object(raw)
    source = _unwrap_export(raw) if "format" in raw or "session" in raw else raw
    source = dict(source)
    if session_id is not None:
        source["session_id"] = session_id
    if not isinstance(source.get("thoughts"), list):
        raise ImportProblem(
            "thoughts",
            en='missing or not a list: a session lists its thoughts (an empty one has "thoughts": [])',
            zh='缺少该字段或不是列表：会话须列出其思考（空会话为 "thoughts": []）',
        )
    if len(source["thoughts"]) > MAX_THOUGHTS:
        raise ImportProblem(
            "thoughts", en=f"more than {MAX_THOUGHTS} thoughts", zh=f"思考超过 {MAX_THOUGHTS} 条"
        )
    problem = shape_problem(source.get("metadata", {}))
    if problem == "too_deep":
        raise ImportProblem(
            "metadata",
            en=f"nested deeper than {MAX_NESTING} levels",
            zh=f"嵌套超过 {MAX_NESTING} 层",
        )
    if problem == "not_finite":
        raise ImportProblem("metadata", en="holds NaN or Infinity", zh="含有 NaN 或 Infinity")
    if problem == "not_unicode":
        raise ImportProblem(
            "metadata",
            en="holds a lone surrogate (such as \\udc00), which is not valid Unicode",
            zh="含有单独的代理码点（如 \\udc00），不是有效的 Unicode",
        )
    try:
        session = ImportedSession.model_validate(source)
    except ValidationError as exc:
        raise _validation_problem(exc) from None
    now = utc_stamp()
    thoughts: list[dict[str, Any]] = []
    latest_by_label: dict[int, int] = {}
    last_seq = 0
    for item in session.thoughts:
        seq = item.seq or item.sequence or last_seq + 1
        if seq <= last_seq:
            raise ImportProblem(
                "thoughts",
                en=f"sequence numbers must increase (found {seq} after {last_seq})",
                zh=f"序号必须递增（{last_seq} 之后出现 {seq}）",
            )
        in_a_branch = item.branch_id is not None and item.branch_from_thought is not None
        kind = "revision" if item.is_revision else "branch" if in_a_branch else "regular"
        thoughts.append(
            {
                "seq": seq,
                "thought_number": item.thought_number,
                "content": item.content,
                "type": kind,
                "is_revision": item.is_revision,
                "revises_thought": item.revises_thought,
                "revises_seq": latest_by_label.get(item.revises_thought) if item.revises_thought else None,
                "branch_from_thought": item.branch_from_thought,
                "branch_from_seq": (
                    latest_by_label.get(item.branch_from_thought) if item.branch_from_thought else None
                ),
                "branch_id": item.branch_id,
                "total_thoughts": item.total_thoughts
                or max(item.thought_number, session.total_thoughts or 1),
                "next_thought_needed": item.next_thought_needed,
                "needs_more_thoughts": item.needs_more_thoughts,
                "timestamp": item.timestamp or now,
            }
        )
        if item.stage is not None:
            thoughts[-1]["stage"] = item.stage
        if item.tags:
            thoughts[-1]["tags"] = item.tags
        if item.by is not None:
            thoughts[-1]["by"] = item.by
        latest_by_label[item.thought_number] = seq
        last_seq = seq
    return {
        "format_version": FORMAT_VERSION,
        "session_id": session.session_id,
        "name": session.name or session.session_id,
        "description": session.description,
        "created_at": session.created_at or now,
        "updated_at": session.updated_at or now,
        "status": session.status,
        "metadata": session.metadata,
        "template_id": session.template_id,
        "is_default": False,
        "created_by": session.created_by or importer,
        "total_thoughts": session.total_thoughts or (thoughts[-1]["total_thoughts"] if thoughts else None),
        "last_seq": last_seq,
        "recovery_log": [],
        "adjustments": [item.model_dump() for item in session.adjustments],
        "thoughts": thoughts,
    }
