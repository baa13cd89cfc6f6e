"""What the store reads and writes, as plain values: a memory and a version as rows, a
requested change, the filters the listings share, an import item and its report, and the
normalised spellings of tags, relation names and times.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hostd_db import utc_stamp

from hostd_memory.uris import MemoryUri


def utc_time(value: str) -> str:
    """An ISO 8601 time in the store's own spelling (UTC, microseconds, 'Z'), so stored times
    compare as text; raises ValueError.

    A naive time is taken as UTC. A time that leaves the calendar once moved to UTC
    (0001-01-01T00:00+05:00) is refused like any other bad time.
    """
    try:
        parsed = datetime.datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=datetime.UTC)
        utc = parsed.astimezone(datetime.UTC)
    except (ValueError, OverflowError):
        raise ValueError(value[:80]) from None
    return utc_stamp(utc)


# --- rows ----------------------------------------------------------------------------------


@dataclass
class MemoryRow:
    id: int
    uri: str
    domain: str
    path: str
    content: str
    priority: int
    disclosure: str
    status: str
    access_count: int
    last_accessed_at: str | None
    created_at: str
    updated_at: str
    version: int
    change: str
    change_note: str
    tags: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    author: str | None = None  # the member who wrote the current version (None: before members)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> MemoryRow:
        values = tuple(row)
        memory = cls(*values[:15])
        memory.tags = json.loads(values[15])
        memory.author = values[16]
        return memory


@dataclass
class VersionRow:
    version: int
    content: str
    priority: int
    disclosure: str
    status: str
    change: str
    change_note: str
    created_at: str
    tags: list[str] = field(default_factory=list)
    current: bool = False
    author: str | None = None  # the member who wrote this version (None: before members)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> VersionRow:
        values = tuple(row)
        version = cls(*values[:8])
        version.tags = json.loads(values[8])
        version.author = values[9]
        return version


@dataclass
class Change:
    """A requested change to a memory's state; None leaves that part as it is."""

    content: str | None = None
    priority: int | None = None
    disclosure: str | None = None
    status: str | None = None
    tags: list[str] | None = None  # normalised and sorted (see ``normalise_tags``)

    def changes_nothing(self, memory: MemoryRow) -> bool:
        """True when applying this would leave ``memory`` as it is (so no version is written)."""
        return (
            (self.content is None or self.content == memory.content)
            and (self.priority is None or self.priority == memory.priority)
            and (self.disclosure is None or self.disclosure == memory.disclosure)
            and (self.status is None or self.status == memory.status)
            and (self.tags is None or self.tags == memory.tags)
        )


MAX_TAG_LENGTH = 64
MAX_TAGS = 32
_TAG_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff,]")


MAX_RELATION_LENGTH = 100


class BadLabel(ValueError):
    """A tag or relation name that cannot be stored; ``reason`` is a stable word the tools translate."""

    def __init__(self, reason: str, text: str) -> None:
        super().__init__(f"{reason}: {text!r}")
        self.reason = reason
        self.text = text


def _label(text: str, limit: int) -> str:
    """NFKC, case-folded, inner whitespace as one space (Chinese kept as is); refused when empty,
    longer than ``limit``, or holding control characters, commas or lone surrogates."""
    import unicodedata

    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise BadLabel("bad_character", text[:80])
    label = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    if not label:
        raise BadLabel("empty", text[:80])
    if len(label) > limit:
        raise BadLabel("too_long", text[:80])
    if _TAG_FORBIDDEN.search(label):
        raise BadLabel("bad_character", text[:80])
    return label


def normalise_tag(text: str) -> str:
    """One spelling per tag, so 'Rust', ' rust ' and 'ＲＵＳＴ' are one tag."""
    return _label(text, MAX_TAG_LENGTH)


def normalise_relation(text: str) -> str:
    """One spelling per relation name ('Depends  on' is 'depends on')."""
    return _label(text, MAX_RELATION_LENGTH)


def normalise_tags(texts: Iterable[str]) -> list[str]:
    """The tags as stored: each normalised, duplicates dropped, sorted; at most ``MAX_TAGS``."""
    tags = sorted({normalise_tag(text) for text in texts})
    if len(tags) > MAX_TAGS:
        raise BadLabel("too_many", str(len(tags)))
    return tags


@dataclass
class Hit:
    memory: MemoryRow
    score: float
    stage: str  # "all_terms", "any_term" or "substring"


@dataclass
class ImportItem:
    """One memory of an import document, already validated and normalised."""

    uri: MemoryUri
    content: str
    priority: int
    disclosure: str
    status: str
    created_at: str | None
    updated_at: str | None
    version: int | None
    access_count: int
    aliases: list[str]
    versions: list[VersionRow]
    index: int = -1  # its position in the document's memories (-1: not from a document)
    tags: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (target URI, relation), outgoing
    author: str | None = None  # who wrote the current version (resolved by the importer: see transfer)


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # overwrite or merge would change nothing
    errors: list[dict[str, Any]] = field(default_factory=list)  # index, uri, problem, field, target
    links_added: int = 0


@dataclass
class Filters:
    """The filters search, list and export share."""

    domain: str | None = None
    status: str | None = None
    priority_min: int | None = None
    priority_max: int | None = None
    tags: tuple[str, ...] = ()  # every one of them (normalised)
    created_after: str | None = None  # times in the store's spelling (UTC, 'Z'); after: inclusive
    created_before: str | None = None  # before: exclusive
    updated_after: str | None = None
    updated_before: str | None = None
    linked_to: int | None = None  # a memory id: memories linked to or from it
    author: str | None = None  # memories whose current version this member wrote

    @property
    def only_visible(self) -> bool:
        """True when nothing but deleted memories is filtered out."""
        return not self.tags and all(
            v is None
            for v in (
                self.status,
                self.domain,
                self.priority_min,
                self.priority_max,
                self.created_after,
                self.created_before,
                self.updated_after,
                self.updated_before,
                self.linked_to,
                self.author,
            )
        )

    def sql(self, alias: str = "m") -> tuple[str, list[Any]]:
        clauses = [f"{alias}.status != 'deleted'"]
        params: list[Any] = []
        if self.status is not None:
            clauses.append(f"{alias}.status = ?")
            params.append(self.status)
        if self.domain is not None:
            clauses.append(f"{alias}.domain = ?")
            params.append(self.domain)
        if self.author is not None:
            clauses.append(f"{alias}.author = ?")
            params.append(self.author)
        if self.priority_min is not None:
            clauses.append(f"{alias}.priority >= ?")
            params.append(self.priority_min)
        if self.priority_max is not None:
            clauses.append(f"{alias}.priority <= ?")
            params.append(self.priority_max)
        for column, operator, value in (
            ("created_at", ">=", self.created_after),
            ("created_at", "<", self.created_before),
            ("updated_at", ">=", self.updated_after),
            ("updated_at", "<", self.updated_before),
        ):
            if value is not None:
                clauses.append(f"{alias}.{column} {operator} ?")
                params.append(value)
        for tag in self.tags:
            clauses.append(
                f"EXISTS (SELECT 1 FROM memory_tags t WHERE t.tag = ? AND t.memory_id = {alias}.id)"
            )
            params.append(tag)
        if self.linked_to is not None:
            clauses.append(
                f"{alias}.id IN (SELECT to_id FROM memory_links WHERE from_id = ? "
                "UNION SELECT from_id FROM memory_links WHERE to_id = ?)"
            )
            params += [self.linked_to, self.linked_to]
        return " AND ".join(clauses), params


@dataclass(frozen=True)
class RankQuery:
    """One full-text ranking the store asks an engine for: memories matching ``expression`` in
    ``table`` (``memory_words``, words and CJK bigrams; ``memory_fts``, substrings), under
    ``filters`` and an extra SQL condition on ``m`` with its parameters, the best ``limit``."""

    table: str
    expression: str
    filters: Filters
    limit: int
    extra: str = ""
    extra_params: Sequence[Any] = ()
    #: (``memory_words`` expression, weight) of each piece of the query, the weight its inverse
    #: document frequency: an engine whose own ranking ignores how rare a word is (PostgreSQL's
    #: ts_rank) ranks by the weights of the pieces a memory holds first. FTS5's BM25 needs none.
    weights: Sequence[tuple[str, float]] = ()
