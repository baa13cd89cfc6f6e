"""The export document: its format, how older versions are migrated, how imports are checked.

The document is plain JSON, so it travels through an MCP answer (``export_memories``'s
``document``) as well as a file. Format history:

- version 1 (pre-release builds): memories under ``items``, times as ``created``/``updated``,
  no aliases, no versions;
- version 2: memories under ``memories`` with their times, version number, access count and,
  on request, their aliases (``include_relations``) and every version (``include_versions``);
- version 3 (current): adds ``tags`` (on memories and versions) and ``links`` (outgoing:
  ``{"to": uri, "relation": name}``). A version 2 document is a version 3 document without
  them; a build that knows only version 2 refuses a version 3 export instead of silently
  dropping its tags and links.

  Optional fields added to version 3 later need no new format version: an older build ignores
  them and keeps everything else. So far: ``author`` on each memory (its current version) and on
  each version, the team member who wrote it. An import keeps the authors a document carries
  (``null``: from before members were recorded) and records the importing member where the
  field is absent (older exports, the official server's files).

``import_memories`` also reads the JSONL file of the official ``@modelcontextprotocol/server-memory``
(``official_graph_document``): entities become memories, relations become links.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from hostd_memory.models import MAX_COUNT, MAX_VERSION, MEMBER_NAME_PATTERN
from hostd_memory.store import (
    BadLabel,
    ImportItem,
    MemoryRow,
    VersionRow,
    normalise_relation,
    normalise_tags,
    utc_time,
)
from hostd_memory.uris import InvalidUri, MemoryUri, parse_uri

FORMAT_NAME = "hostd-memory-export"
FORMAT_VERSION = 3
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
    """An ISO 8601 time in the store's own spelling (see ``store.utc_time``)."""
    try:
        return utc_time(value)
    except ValueError:
        raise PydanticCustomError("invalid_time", "not an ISO 8601 time within years 1-9999 in UTC") from None


def _tags(values: list[str]) -> list[str]:
    try:
        return normalise_tags(values)
    except BadLabel as exc:
        raise PydanticCustomError("invalid_tag", "invalid tag ({reason})", {"reason": exc.reason}) from None


def _relation(value: str) -> str:
    try:
        return normalise_relation(value)
    except BadLabel as exc:
        raise PydanticCustomError(
            "invalid_relation", "invalid relation name ({reason})", {"reason": exc.reason}
        ) from None


# Text SQLite can store (not hostd.Text: this module speaks no language).
StoredText = Annotated[str, AfterValidator(_encodable)]
Content = Annotated[str, AfterValidator(_encodable), AfterValidator(_has_text)]
Time = Annotated[str, AfterValidator(_encodable), AfterValidator(_utc_time)]
Version = Annotated[int, Field(ge=1, le=MAX_VERSION)]
# Each tag is checked by normalise_tags; the list's own bound keeps a hostile document cheap to refuse.
Tags = Annotated[list[StoredText], Field(max_length=1_000), AfterValidator(_tags)]


def _member_name(value: str) -> str:
    if not re.match(MEMBER_NAME_PATTERN, value):
        raise PydanticCustomError("invalid_member_name", "not a team member's name")
    return value


Author = Annotated[str, AfterValidator(_member_name)] | None


class ExportedLink(BaseModel):
    model_config = ConfigDict(extra="ignore")

    to: StoredText
    relation: Annotated[StoredText, AfterValidator(_relation)]


class ExportedVersion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    version: Version
    content: StoredText
    priority: int = Field(ge=0, le=10)
    disclosure: StoredText = ""
    status: Literal["active", "deprecated", "archived", "deleted"] = "active"
    change: StoredText = Field(default="import", max_length=32)
    change_note: StoredText = Field(default="", max_length=500)
    created_at: Time
    tags: Tags = Field(default_factory=list)
    author: Author = None  # see _author_of: absent and null differ


class ExportedMemory(BaseModel):
    model_config = ConfigDict(extra="ignore")

    uri: StoredText
    content: Content
    priority: int = Field(default=5, ge=0, le=10)
    disclosure: StoredText = ""
    status: Literal["active", "deprecated", "archived"] = "active"
    access_count: int = Field(default=0, ge=0, le=MAX_COUNT)
    created_at: Time | None = None
    updated_at: Time | None = None
    version: Version | None = None
    aliases: list[StoredText] = Field(default_factory=list)
    versions: list[ExportedVersion] | None = None
    relations: dict[str, Any] | None = None  # derived from content; informative only
    tags: Tags = Field(default_factory=list)
    links: list[ExportedLink] = Field(default_factory=list, max_length=10_000)
    author: Author = None  # see _author_of: absent and null differ


class ExportDocument(BaseModel):
    model_config = ConfigDict(extra="ignore")

    format: Literal["hostd-memory-export"]
    version: Literal[3]
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


def _migrate_v2(document: dict[str, Any]) -> dict[str, Any]:
    """Version 2 -> 3: nothing moves; tags and links are simply absent."""
    return {**document, "version": 3}


MIGRATIONS = {1: _migrate_v1, 2: _migrate_v2}


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


def _author_of(part: ExportedMemory | ExportedVersion, importer: str | None) -> str | None:
    """The author a document gives (``null`` included: written before members were recorded), else
    the importing member: a document from before authors were exported says nothing either way."""
    return part.author if "author" in part.model_fields_set else importer


def _check_item(
    index: int, raw: Any, seen: set[str], importer: str | None, notes: list[dict[str, Any]]
) -> ImportItem:
    """One memory of the document, validated and normalised; raises what is wrong with it.

    What is left out of an item that is still imported (an alias naming the item itself) is
    appended to ``notes``."""
    exported = ExportedMemory.model_validate(raw)
    uri = parse_uri(exported.uri)
    if uri.is_system:
        raise InvalidUri("reserved_domain", exported.uri)
    if str(uri) in seen:
        raise DocumentError("duplicate_uri", "uri")
    aliases = []
    itself: list[dict[str, Any]] = []
    for number, alias_text in enumerate(exported.aliases):
        try:
            alias = parse_uri(alias_text)
            if alias.is_system:
                raise InvalidUri("reserved_domain", alias_text)
        except InvalidUri as exc:
            raise DocumentError(f"invalid_uri:{exc.reason}", f"aliases.{number}") from None
        if str(alias) == str(uri):
            itself.append(_problem(index, raw, "alias_to_itself", f"aliases.{number}"))
            continue
        aliases.append(str(alias))
    versions = [
        VersionRow(
            v.version,
            v.content,
            v.priority,
            v.disclosure,
            v.status,
            v.change,
            v.change_note,
            v.created_at,
            tags=v.tags,
            author=_author_of(v, importer),
        )
        for v in exported.versions or []
    ]
    numbers = [v.version for v in versions]
    if len(set(numbers)) != len(numbers):
        raise DocumentError("duplicate_version", "versions")
    if versions and exported.version is not None and exported.version < max(numbers):
        raise DocumentError("version_behind_history", "version")
    links = []
    for number, link in enumerate(exported.links):
        try:
            target = parse_uri(link.to)
        except InvalidUri as exc:
            raise DocumentError(f"invalid_uri:{exc.reason}", f"links.{number}.to") from None
        links.append((str(target), link.relation))
    notes.extend(itself)
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
        aliases=aliases,
        versions=versions,
        index=index,
        tags=exported.tags,
        links=links,
        author=_author_of(exported, importer),
    )


def check_items(
    document: ExportDocument, importer: str | None
) -> tuple[list[ImportItem], list[dict[str, Any]]]:
    """Every memory of the document checked on its own: the good ones, and what was wrong with the rest.

    ``importer`` (the calling member) is the author of whatever the document gives no author for.

    Each problem names the item's index, its URI as given, the field at fault and a problem code
    (``<pydantic error type>:<field>`` for a bad value). An item with any problem is left out whole.
    """
    items: list[ImportItem] = []
    problems: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, raw in enumerate(document.memories):
        try:
            item = _check_item(index, raw, seen, importer, problems)
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
    memory: MemoryRow,
    *,
    versions: list[VersionRow] | None,
    relations: dict[str, Any] | None,
    links: list[tuple[str, str]] | None = None,
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
        "tags": list(memory.tags),
        "author": memory.author,
    }
    if links:
        entry["links"] = [{"to": uri, "relation": relation} for uri, relation in links]
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
                "tags": list(v.tags),
                "author": v.author,
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


# --- the official memory server's knowledge graph --------------------------------------------

GRAPH_DOMAIN = "entity"
# Characters an entity name may hold that a URI path segment may not (or that would change its
# meaning: '/', '%'), written as %XX so that every name has its own URI and the name can be read
# back from it.
_ESCAPED_IN_NAMES = frozenset('%/\\?#<>"`|')


class GraphFileError(ValueError):
    """Lines of a knowledge-graph file that are not entities or relations; nothing is imported."""

    def __init__(self, problems: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(problems)} bad line(s)")
        self.problems = problems


@dataclass
class GraphDocument:
    """A knowledge graph turned into an import document, with the file line of each part."""

    document: dict[str, Any]
    entity_lines: list[int] = field(default_factory=list)  # per memory of the document
    link_lines: list[list[int]] = field(default_factory=list)  # per memory, per link
    problems: list[dict[str, Any]] = field(default_factory=list)  # relations that could not be placed


def entity_uri(name: str) -> str:
    """``entity://<name>``, each character a path may not hold written as %XX (UTF-8)."""

    def escaped(ch: str) -> str:
        if (
            ch in _ESCAPED_IN_NAMES
            or ch.isspace()
            or ord(ch) < 0x20
            or 0x7F <= ord(ch) <= 0x9F
            or (0x200B <= ord(ch) <= 0x200F or ch in "\u2028\u2029\ufeff")
        ):
            return "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
        return ch

    path = "".join(escaped(ch) for ch in name)
    if path in (".", ".."):
        path = path.replace(".", "%2E")
    return str(MemoryUri(GRAPH_DOMAIN, path))


def looks_like_graph(text: str) -> bool:
    """Whether the first non-blank line is an official-server entity or relation."""
    for line in text.splitlines():
        if line.strip():
            try:
                first = json.loads(line)
            except ValueError:
                return False
            return isinstance(first, dict) and first.get("type") in ("entity", "relation")
    return False


def _graph_line(line: str) -> tuple[str, dict[str, Any]]:
    """One line's kind and fields; raises ValueError with a stable problem word."""
    try:
        item = json.loads(line)
    except ValueError:
        raise ValueError("not_json") from None
    if not isinstance(item, dict) or item.get("type") not in ("entity", "relation"):
        raise ValueError("not_entity_or_relation")
    if item["type"] == "entity":
        name, kind, observations = item.get("name"), item.get("entityType"), item.get("observations", [])
        if not isinstance(name, str) or not name.strip():
            raise ValueError("bad_name")
        if not isinstance(kind, str):
            raise ValueError("bad_entity_type")
        if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
            raise ValueError("bad_observations")
        return "entity", item
    for key in ("from", "to", "relationType"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise ValueError(f"bad_{key}")
    return "relation", item


def official_graph_document(text: str, *, max_problems: int = 50) -> GraphDocument:
    """The official server's JSONL as an import document: each entity a memory at entity_uri(name)
    (observations as content, one a line, the name when there are none; its entity type as a tag),
    each relation a link of its source. Any malformed line refuses the whole file (GraphFileError,
    every bad line named), so nothing of a damaged file is half-imported."""
    problems: list[dict[str, Any]] = []
    entities: list[tuple[int, dict[str, Any]]] = []
    relations: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            kind, item = _graph_line(line)
            if kind == "entity":
                tags = normalise_tags([item["entityType"]]) if item["entityType"].strip() else []
                item = {**item, "tags": tags}
            else:
                item = {**item, "relation": normalise_relation(item["relationType"])}
        except BadLabel as exc:
            problems.append({"line": number, "problem": f"bad_label:{exc.reason}"})
            continue
        except ValueError as exc:
            problems.append({"line": number, "problem": str(exc)})
            continue
        (entities if kind == "entity" else relations).append((number, item))
    if problems:
        raise GraphFileError(problems[:max_problems])
    if len(entities) > MAX_IMPORT_ITEMS:
        raise GraphFileError([{"line": entities[MAX_IMPORT_ITEMS][0], "problem": "too_many_entities"}])
    graph = GraphDocument(document={"format": FORMAT_NAME, "version": FORMAT_VERSION, "memories": []})
    position: dict[str, int] = {}
    for number, item in entities:
        observations = [o for o in item.get("observations", []) if o.strip()]
        position.setdefault(item["name"], len(graph.document["memories"]))
        graph.document["memories"].append(
            {
                "uri": entity_uri(item["name"]),
                "content": "\n".join(observations) or item["name"],
                "tags": item["tags"],
                "links": [],
            }
        )
        graph.entity_lines.append(number)
        graph.link_lines.append([])
    for number, item in relations:
        source = position.get(item["from"])
        if source is None:
            graph.problems.append(
                {
                    "index": None,
                    "line": number,
                    "uri": entity_uri(item["from"]),
                    "problem": "link_source_missing",
                    "field": "from",
                }
            )
            continue
        graph.document["memories"][source]["links"].append(
            {"to": entity_uri(item["to"]), "relation": item["relation"]}
        )
        graph.link_lines[source].append(number)
    return graph
