"""The export document: its format, how older versions are migrated, how imports are checked.

The document is plain JSON, so it travels through an MCP answer (``export_memories``'s
``document``) as well as a file. Format history:

- version 1 (pre-release builds): memories under ``items``, times as ``created``/``updated``,
  no aliases, no versions;
- version 2 (current): memories under ``memories`` with their times, version number, access
  count and, on request, their aliases (``include_relations``) and every version
  (``include_versions``).
"""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from hostd_memory.models import MAX_COUNT, MAX_VERSION
from hostd_memory.store import ImportItem, MemoryRow, VersionRow
from hostd_memory.uris import InvalidUri, parse_uri

FORMAT_NAME = "hostd-memory-export"
FORMAT_VERSION = 2
MAX_IMPORT_ITEMS = 200_000


class DocumentError(ValueError):
    """The document as a whole cannot be imported; ``where`` says which part."""

    def __init__(self, problem: str, where: str) -> None:
        super().__init__(f"{problem} at {where}")
        self.problem = problem
        self.where = where


# Every field check below fails as a pydantic error whose location names the field, so a bad item
# is reported with its index and field and none of it is stored (SQLite would refuse these values
# only mid-transaction, and not as the user's mistake).


def _encodable(text: str) -> str:
    """Text SQLite can store: UTF-8, so no lone surrogate (JSON's "\\ud800" decodes to one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise PydanticCustomError(
            "invalid_unicode", "text holds a lone surrogate (not valid Unicode)"
        ) from None
    return text


def _has_text(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError("blank_content", "content is empty or only whitespace")
    return text


def _utc_time(value: str) -> str:
    """An ISO 8601 time in the store's own spelling (UTC, microseconds, 'Z').

    A naive time is taken as UTC. A time that leaves the calendar once moved to UTC
    (0001-01-01T00:00+05:00) is refused like any other bad time.
    """
    try:
        parsed = datetime.datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=datetime.UTC)
        utc = parsed.astimezone(datetime.UTC)
    except (ValueError, OverflowError):
        raise PydanticCustomError("invalid_time", "not an ISO 8601 time within years 1-9999 in UTC") from None
    return utc.isoformat(timespec="microseconds").replace("+00:00", "Z")


Text = Annotated[str, AfterValidator(_encodable)]
Content = Annotated[str, AfterValidator(_encodable), AfterValidator(_has_text)]
Time = Annotated[str, AfterValidator(_encodable), AfterValidator(_utc_time)]
Version = Annotated[int, Field(ge=1, le=MAX_VERSION)]


class ExportedVersion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    version: Version
    content: Text
    priority: int = Field(ge=0, le=10)
    disclosure: Text = ""
    status: Literal["active", "deprecated", "archived", "deleted"] = "active"
    change: Text = Field(default="import", max_length=32)
    change_note: Text = Field(default="", max_length=500)
    created_at: Time


class ExportedMemory(BaseModel):
    model_config = ConfigDict(extra="ignore")

    uri: Text
    content: Content
    priority: int = Field(default=5, ge=0, le=10)
    disclosure: Text = ""
    status: Literal["active", "deprecated", "archived"] = "active"
    access_count: int = Field(default=0, ge=0, le=MAX_COUNT)
    created_at: Time | None = None
    updated_at: Time | None = None
    version: Version | None = None
    aliases: list[Text] = Field(default_factory=list)
    versions: list[ExportedVersion] | None = None
    relations: dict[str, Any] | None = None  # derived from content; informative only


class ExportDocument(BaseModel):
    model_config = ConfigDict(extra="ignore")

    format: Literal["hostd-memory-export"]
    version: Literal[2]
    exported_at: str | None = None
    domain: str | None = None
    include_versions: bool = False
    include_relations: bool = False
    memories: list[dict[str, Any]] = Field(max_length=MAX_IMPORT_ITEMS)


def _migrate_v1(document: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: ``items`` became ``memories``; ``created``/``updated`` gained ``_at``."""
    items = document.get("items")
    if not isinstance(items, list):
        raise DocumentError("missing_memories", "items")
    memories = []
    for item in items:
        if isinstance(item, dict):
            item = dict(item)
            for old, new in (("created", "created_at"), ("updated", "updated_at")):
                if old in item:
                    item.setdefault(new, item.pop(old))
        memories.append(item)
    migrated = {k: v for k, v in document.items() if k != "items"}
    migrated.update(version=2, memories=memories)
    return migrated


MIGRATIONS = {1: _migrate_v1}


def unwrap(data: dict[str, Any]) -> dict[str, Any]:
    """The document inside ``data``: itself, or the ``document`` of an ``export_memories`` answer."""
    inner = data.get("document")
    if "format" not in data and isinstance(inner, dict):
        return inner
    return data


def load_document(data: dict[str, Any]) -> tuple[ExportDocument, int]:
    """Check the document's shape (migrating older versions) and return it with its original version."""
    document = unwrap(data)
    if document.get("format") != FORMAT_NAME:
        raise DocumentError("unknown_format", "format")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        raise DocumentError("unknown_version", "version")
    original = version
    while version < FORMAT_VERSION:
        document = MIGRATIONS[version](document)
        version = document["version"]
    try:
        return ExportDocument.model_validate(document), original
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        raise DocumentError(first["type"], ".".join(str(p) for p in first["loc"]) or "document") from None


def _echo(value: Any) -> str | None:
    """The item's URI as the document gave it, safe to put in an answer (or None if not text)."""
    if not isinstance(value, str):
        return None
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def _problem(index: int, raw: Any, problem: str, field: str | None, **extra: Any) -> dict[str, Any]:
    uri = raw.get("uri") if isinstance(raw, dict) else None
    return {"index": index, "uri": _echo(uri), "problem": problem, "field": field, **extra}


def _check_item(index: int, raw: Any, seen: set[str]) -> ImportItem:
    """One memory of the document, validated and normalised; raises what is wrong with it."""
    exported = ExportedMemory.model_validate(raw)
    uri = parse_uri(exported.uri)
    if uri.is_system:
        raise InvalidUri("reserved_domain", exported.uri)
    if str(uri) in seen:
        raise DocumentError("duplicate_uri", "uri")
    aliases = []
    for number, alias_text in enumerate(exported.aliases):
        try:
            alias = parse_uri(alias_text)
            if alias.is_system:
                raise InvalidUri("reserved_domain", alias_text)
        except InvalidUri as exc:
            raise DocumentError(f"invalid_uri:{exc.reason}", f"aliases.{number}") from None
        aliases.append(str(alias))
    versions = [
        VersionRow(
            v.version, v.content, v.priority, v.disclosure, v.status, v.change, v.change_note, v.created_at
        )
        for v in exported.versions or []
    ]
    numbers = [v.version for v in versions]
    if len(set(numbers)) != len(numbers):
        raise DocumentError("duplicate_version", "versions")
    if versions and exported.version is not None and exported.version < max(numbers):
        raise DocumentError("version_behind_history", "version")
    return ImportItem(
        uri=uri,
        content=exported.content,
        priority=exported.priority,
        disclosure=exported.disclosure,
        status=exported.status,
        created_at=exported.created_at,
        updated_at=exported.updated_at,
        version=exported.version,
        access_count=exported.access_count,
        aliases=[a for a in aliases if a != str(uri)],
        versions=versions,
        index=index,
    )


def check_items(document: ExportDocument) -> tuple[list[ImportItem], list[dict[str, Any]]]:
    """Every memory of the document checked on its own: the good ones, and what was wrong with the rest.

    Each problem names the item's index, its URI as given, the field at fault and a problem code
    (``<pydantic error type>:<field>`` for a bad value). An item with any problem is left out whole.
    """
    items: list[ImportItem] = []
    problems: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, raw in enumerate(document.memories):
        try:
            item = _check_item(index, raw, seen)
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or None
            problems.append(_problem(index, raw, f"{first['type']}:{where}", where))
            continue
        except InvalidUri as exc:
            problems.append(_problem(index, raw, f"invalid_uri:{exc.reason}", "uri"))
            continue
        except DocumentError as exc:
            problems.append(_problem(index, raw, exc.problem, exc.where))
            continue
        seen.add(str(item.uri))
        items.append(item)
    in_cycles = _alias_cycles(items)
    for cycle in in_cycles:
        members = [{"index": i.index, "uri": str(i.uri)} for i in cycle]
        for item in cycle:
            problems.append(
                _problem(item.index, {"uri": str(item.uri)}, "alias_cycle", "aliases", cycle=members)
            )
    if in_cycles:
        left_out = {id(item) for cycle in in_cycles for item in cycle}
        items = [item for item in items if id(item) not in left_out]
        problems.sort(key=lambda p: p["index"])
    return items, problems


def _alias_cycles(items: list[ImportItem]) -> list[list[ImportItem]]:
    """Groups of items whose aliases name each other's URIs in a cycle (a -> b -> a), in document order.

    Importing one of them would turn the next one's URI into an alias before that item is stored,
    so which of them "wins" would depend on their order; none is imported and all are reported.
    The groups are the strongly connected components (Tarjan's algorithm, iterative: a document
    may hold 200,000 items) of the graph "item -> the item its alias names".
    """
    by_uri = {str(item.uri): position for position, item in enumerate(items)}
    edges = [sorted({by_uri[a] for a in item.aliases if a in by_uri}) for item in items]
    order: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    groups: list[list[ImportItem]] = []
    for root in range(len(items)):
        if root in order or not edges[root]:
            continue
        work = [(root, 0)]
        while work:
            node, next_edge = work.pop()
            if next_edge == 0:
                order[node] = low[node] = len(order)
                stack.append(node)
                on_stack.add(node)
            if next_edge < len(edges[node]):
                work.append((node, next_edge + 1))
                target = edges[node][next_edge]
                if target not in order:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], order[target])
                continue
            if work:  # hand this node's low link to the node that reached it
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == order[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append([items[m] for m in sorted(group)])
    return sorted(groups, key=lambda group: group[0].index)


def exported_memory(
    memory: MemoryRow, *, versions: list[VersionRow] | None, relations: dict[str, Any] | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "uri": memory.uri,
        "content": memory.content,
        "priority": memory.priority,
        "disclosure": memory.disclosure,
        "status": memory.status,
        "access_count": memory.access_count,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "version": memory.version,
    }
    if relations is not None:
        entry["aliases"] = list(memory.aliases)
        entry["relations"] = relations
    if versions is not None:
        entry["versions"] = [
            {
                "version": v.version,
                "content": v.content,
                "priority": v.priority,
                "disclosure": v.disclosure,
                "status": v.status,
                "change": v.change,
                "change_note": v.change_note,
                "created_at": v.created_at,
            }
            for v in versions
        ]
    return entry


def document_header(
    domain: str | None, include_versions: bool, include_relations: bool, stamp: str
) -> dict[str, Any]:
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "exported_at": stamp,
        "domain": domain,
        "include_versions": include_versions,
        "include_relations": include_relations,
        "memories": [],
    }
