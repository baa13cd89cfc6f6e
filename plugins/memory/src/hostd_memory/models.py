"""The plugin's settings and the typed answers of its tools (their outputSchema).

A memory's record always travels under the key ``memory``: the envelope keeps ``status``,
``message`` and ``metadata`` for itself.
"""

from __future__ import annotations

from typing import Any, Literal

from hostd.paging import Page
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from hostd import ID_PATTERN, Text, ToolOutput

Status = Literal["active", "deprecated", "archived", "deleted"]
UpdateMode = Literal["patch", "append", "replace", "metadata", "status"]

# A team member's name, as the host's tokens file allows it (the id rule of DESIGN.md).
MEMBER_NAME_PATTERN = ID_PATTERN
AUTHOR_DESCRIPTION = (
    "The team member who wrote {what} (the caller's member name: the HTTP token's owner, else the "
    "local login name); null for versions from before members were recorded"
)

# The highest version number the version tools accept, and so the highest an import may bring in.
MAX_VERSION = 10_000_000
# The largest count an import may bring in: every JSON reader holds it exactly (2**53 - 1), far
# below SQLite's limit, so counting on from it never overflows.
MAX_COUNT = 2**53 - 1


class Settings(BaseModel):
    """The ``plugins.memory`` section of the config."""

    model_config = ConfigDict(extra="forbid")

    database: str = Field(
        default="memory.db",
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$",
        description="File name of the SQLite database inside the plugin's data folder",
    )
    max_answer_chars: int = Field(
        default=20_000,
        ge=2_000,
        le=1_000_000,
        # Spelled like every other limit (max_<what>_<unit>); the old key is still read.
        validation_alias=AliasChoices("max_answer_chars", "answer_budget"),
        description="Largest answer in characters; longer listings and contents come in pages with a cursor",
    )


# --- records -------------------------------------------------------------------------------


class MemoryRecord(BaseModel):
    id: int
    uri: str
    domain: str
    path: str
    aliases: list[str]
    tags: list[str] = Field(description="Normalised tags (case-folded), sorted")
    priority: int = Field(description="0 is most important, 10 least")
    disclosure: str = Field(description="When to bring this memory up")
    status: Status
    access_count: int
    last_accessed_at: str | None
    created_at: str
    updated_at: str
    version: int
    author: str | None = Field(description=AUTHOR_DESCRIPTION.format(what="the current version"))


class ListedMemory(BaseModel):
    """A memory in a listing: its record, its size and the start of its content."""

    memory: MemoryRecord
    size: int = Field(description="Content length in characters")
    preview: str


class CoreMemory(ListedMemory):
    content: str
    content_truncated: bool = Field(
        description="True when content was cut to fit; read_memory gives all of it"
    )


class VersionSummary(BaseModel):
    version: int
    current: bool
    created_at: str
    change: str = Field(description="created, patch, append, replace, metadata, status, rollback or import")
    change_note: str
    priority: int
    disclosure: str
    status: Status
    tags: list[str]
    size: int
    preview: str
    author: str | None = Field(description=AUTHOR_DESCRIPTION.format(what="this version"))


class MentionedUri(BaseModel):
    uri: str
    exists: bool


class Link(BaseModel):
    uri: str = Field(description="The memory at the other end")
    relation: str


class RelatedMemory(BaseModel):
    uri: str
    priority: int
    tags: list[str]
    shared_tags: list[str] = Field(description="Rare tags both memories carry")
    shared_terms: list[str] = Field(description="Rare terms both memories hold")
    preview: str


class Relations(BaseModel):
    aliases: list[str]
    mentions: list[MentionedUri] = Field(description="URIs this memory's content mentions")
    mentioned_by: list[str] = Field(description="Memories whose content mentions this one")
    links_to: list[Link] = Field(default_factory=list, description="Links from this memory (link_memories)")
    linked_from: list[Link] = Field(default_factory=list, description="Links from other memories to this one")
    related: list[RelatedMemory] = Field(
        default_factory=list, description="A few memories sharing rare tags or terms with this one"
    )


class IndexEntry(BaseModel):
    uri: str
    priority: int


class IndexGroup(BaseModel):
    domain: str
    memories: list[IndexEntry]


class SessionRecord(BaseModel):
    id: int
    title: str
    summary: str
    created_at: str
    memory_uri: str | None


class SearchHit(BaseModel):
    uri: str
    priority: int
    status: Status
    disclosure: str
    aliases: list[str]
    tags: list[str]
    snippet: str
    score: float = Field(description="BM25 score; lower is a better match")
    matched: Literal["all_terms", "any_term"] = Field(
        description="all_terms: every query term occurs; any_term: only some do (ranked after)"
    )
    updated_at: str


class PreloadItem(BaseModel):
    uri: str
    priority: int
    tags: list[str]
    reasons: list[Text] = Field(description="Why this memory fits the context")
    preview: str


class RollbackOption(VersionSummary):
    content_changed: bool = Field(description="Whether rolling back to this version changes the content")
    lines_added: int = Field(description="Lines the rollback would add to the current content")
    lines_removed: int = Field(description="Lines the rollback would remove from the current content")
    priority_change: str | None = Field(description="'current -> restored' when the priority would change")
    disclosure_changed: bool
    tags_changed: bool = Field(description="Whether rolling back to this version changes the tags")


class MostRead(BaseModel):
    uri: str
    access_count: int


class ImportItemRef(BaseModel):
    index: int = Field(description="Position of the item in the document's memories")
    uri: str


class ImportProblem(BaseModel):
    index: int | None = Field(default=None, description="Position of the item in the document's memories")
    uri: str | None
    code: str = Field(description="INVALID_ARGUMENT (the item is wrong), ALREADY_EXISTS or CONFLICT")
    field: str | None = Field(default=None, description="The item's field at fault, e.g. versions.0.content")
    line: int | None = Field(
        default=None, description="For a file of the official memory server: the line at fault (from 1)"
    )
    problem: str
    message: Text
    cycle: list[ImportItemRef] | None = Field(
        default=None, description="For alias_cycle: the items whose aliases name each other in a cycle"
    )


# --- answers -------------------------------------------------------------------------------


class ReadMemoryOutput(Page):
    uri: str = Field(description="The URI read, normalised")
    kind: Literal["memory", "boot", "index", "recent"]
    via_alias: str | None = Field(default=None, description="The alias the URI was, when it was one")
    memory: MemoryRecord | None = None
    content: str | None = None
    content_offset: int = Field(default=0, description="Where this page of the content starts")
    content_length: int | None = Field(default=None, description="The whole content's length")
    recent_versions: list[VersionSummary] = Field(default_factory=list)
    relations: Relations | None = None
    memories: list[CoreMemory] | list[ListedMemory] | None = None
    index: list[IndexGroup] | None = None


class SimilarMemory(BaseModel):
    """A memory very like the one just created."""

    uri: str
    similarity: float = Field(description="How alike the two texts are, 0 to 1 (1: the same words)")


class CreateMemoryOutput(ToolOutput):
    uri: str
    id: int
    created_at: str
    memory: MemoryRecord
    similar: list[SimilarMemory] = Field(
        default_factory=list,
        description="Memories that already say nearly the same (most alike first): update one of them "
        "rather than keep two",
    )


class UpdateMemoryOutput(ToolOutput):
    uri: str
    mode: UpdateMode
    previous_version: int
    memory: MemoryRecord


class DeleteMemoryOutput(ToolOutput):
    uri: str
    action: Literal["soft_deleted", "removed", "alias_removed"]
    target_uri: str | None = Field(default=None, description="For an alias: the memory it pointed to (kept)")
    memory: MemoryRecord | None = None
    removed_versions: int = 0
    removed_aliases: list[str] = Field(default_factory=list)


class SearchMemoryOutput(Page):
    query: str
    terms: list[str] = Field(description="The terms the query was split into")
    count: int
    hits: list[SearchHit]


class PreloadMemoryOutput(ToolOutput):
    context_type: Literal["file", "directory", "error", "intent"]
    search_terms: list[str]
    core: list[CoreMemory]
    related: list[PreloadItem]
    truncated: bool = False


class SaveSessionOutput(ToolOutput):
    session: SessionRecord
    memory: MemoryRecord | None = None


class ListMemoriesOutput(Page):
    count: int
    memories: list[ListedMemory]


class MemoryStatsOutput(ToolOutput):
    total: int = Field(description="Memories of every status but deleted")
    by_status: dict[str, int]
    by_domain: dict[str, int]
    total_accesses: int
    most_read: list[MostRead]
    version_count: int
    alias_count: int
    session_count: int
    database_bytes: int
    by_tag: dict[str, int] = Field(description="Memories per tag, the 100 most used tags")
    tag_count: int = Field(description="Distinct tags in use")
    link_count: int


class ExportMemoriesOutput(Page):
    count: int = Field(description="Memories in this answer (or in the file)")
    document: dict[str, Any] | None = Field(
        default=None, description="The export document (absent when written)"
    )
    output_path: str | None = None
    bytes_written: int | None = None


class ImportMemoriesOutput(ToolOutput):
    strategy: Literal["skip", "overwrite", "merge"]
    format_version: int = Field(description="The document's format version (older ones are migrated)")
    created: int
    skipped: int
    overwritten: int
    merged: int
    unchanged: int = Field(
        description="Existing memories the item would not change (overwrite or merge): no new version"
    )
    links_added: int = Field(default=0, description="Links that were not there before")
    source: Literal["hostd-memory-export", "official-memory-graph"] = Field(
        default="hostd-memory-export", description="What the input was, detected by its shape"
    )
    input_path: str | None = None
    errors: list[ImportProblem]


class AddAliasOutput(ToolOutput):
    alias_uri: str
    target_uri: str
    memory: MemoryRecord


class MemoryVersionsOutput(Page):
    uri: str
    current_version: int
    total: int
    versions: list[VersionSummary]


class ListRollbacksOutput(Page):
    uri: str
    current_version: int
    total: int = Field(description="How many versions there are to roll back to (all but the current)")
    rollbacks: list[RollbackOption] = Field(description="Earlier versions, newest first (never the current)")


class RollbackMemoryOutput(ToolOutput):
    uri: str
    restored_version: int
    new_version: int = Field(description="The memory's version now (unchanged when changed is false)")
    changed: bool = Field(
        description="False when the memory already held that version's state: nothing was written"
    )
    memory: MemoryRecord


class DiffVersionsOutput(ToolOutput):
    uri: str
    version1: int
    version2: int
    content1: str
    content2: str
    author1: str | None = Field(description=AUTHOR_DESCRIPTION.format(what="version1"))
    author2: str | None = Field(description=AUTHOR_DESCRIPTION.format(what="version2"))
    diff: str = Field(description="Unified diff from version1 to version2")
    identical: bool
    truncated: bool = Field(description="True when contents or diff were cut to fit the answer budget")


class LinkMemoriesOutput(ToolOutput):
    from_uri: str
    to_uri: str
    relation: str = Field(description="The relation name as stored (normalised)")
    created: bool = Field(description="False when the link was already there (nothing changed)")


class UnlinkMemoriesOutput(ToolOutput):
    from_uri: str
    to_uri: str
    removed: list[str] = Field(description="The relation names of the links removed")
