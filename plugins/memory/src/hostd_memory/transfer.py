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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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


class ExportedVersion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    version: int = Field(ge=1)
    content: str
    priority: int = Field(ge=0, le=10)
    disclosure: str = ""
    status: Literal["active", "deprecated", "archived", "deleted"] = "active"
    change: str = Field(default="import", max_length=32)
    change_note: str = Field(default="", max_length=500)
    created_at: str


class ExportedMemory(BaseModel):
    model_config = ConfigDict(extra="ignore")

    uri: str
    content: str
    priority: int = Field(default=5, ge=0, le=10)
    disclosure: str = ""
    status: Literal["active", "deprecated", "archived"] = "active"
    access_count: int = Field(default=0, ge=0)
    created_at: str | None = None
    updated_at: str | None = None
    version: int | None = Field(default=None, ge=1)
    aliases: list[str] = Field(default_factory=list)
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


def _timestamp(value: str | None) -> str | None:
    """An ISO time in the store's own spelling (UTC, microseconds, 'Z'), or None."""
    if value is None:
        return None
    parsed = datetime.datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.astimezone(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def check_items(document: ExportDocument) -> tuple[list[ImportItem], list[dict[str, Any]]]:
    """Every memory of the document checked on its own: the good ones, and what was wrong with the rest."""
    items: list[ImportItem] = []
    problems: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, raw in enumerate(document.memories):
        uri_text = raw.get("uri") if isinstance(raw, dict) else None
        try:
            exported = ExportedMemory.model_validate(raw)
            uri = parse_uri(exported.uri)
            if uri.is_system:
                raise InvalidUri("reserved_domain", exported.uri)
            if str(uri) in seen:
                raise DocumentError("duplicate_uri", f"memories.{index}.uri")
            aliases = [str(parse_uri(a)) for a in exported.aliases]
            if any(parse_uri(a).is_system for a in aliases):
                raise InvalidUri("reserved_domain", "alias")
            versions = [
                VersionRow(
                    v.version,
                    v.content,
                    v.priority,
                    v.disclosure,
                    v.status,
                    v.change,
                    v.change_note,
                    _timestamp(v.created_at) or "",
                )
                for v in exported.versions or []
            ]
            numbers = [v.version for v in versions]
            if len(set(numbers)) != len(numbers):
                raise DocumentError("duplicate_version", f"memories.{index}.versions")
            if versions and exported.version is not None and exported.version < max(numbers):
                raise DocumentError("version_behind_history", f"memories.{index}.version")
            item = ImportItem(
                uri=uri,
                content=exported.content,
                priority=exported.priority,
                disclosure=exported.disclosure,
                status=exported.status,
                created_at=_timestamp(exported.created_at),
                updated_at=_timestamp(exported.updated_at),
                version=exported.version,
                access_count=exported.access_count,
                aliases=[a for a in aliases if a != str(uri)],
                versions=versions,
            )
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            problems.append({"index": index, "uri": uri_text, "problem": f"{first['type']}:{where}"})
            continue
        except InvalidUri as exc:
            problems.append({"index": index, "uri": uri_text, "problem": f"invalid_uri:{exc.reason}"})
            continue
        except DocumentError as exc:
            problems.append({"index": index, "uri": uri_text, "problem": exc.problem})
            continue
        except ValueError:
            problems.append({"index": index, "uri": uri_text, "problem": "invalid_time"})
            continue
        seen.add(str(uri))
        items.append(item)
    return items, problems


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
