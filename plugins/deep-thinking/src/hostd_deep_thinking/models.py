"""The plugin's settings, the records the deep-thinking tools answer with, and the identifier
rules they share.

Stored documents are plain dicts (see ``store/documents.py``); these pydantic models describe
what leaves the plugin, so the host can publish a complete ``outputSchema`` for every tool.
"""

from __future__ import annotations

from typing import Any, Literal

from hostd.paging import Page
from pydantic import BaseModel, ConfigDict, Field

from hostd import ID_PATTERN, Text, ToolOutput

#: DESIGN.md's rule for identifiers that become file names: no '/', never '.' or '..'.
SESSION_ID_PATTERN = ID_PATTERN
#: A backup's file name as the store writes it; never a path.
BACKUP_NAME_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$"
#: A team member's name, as the host's tokens file allows it (the same rule as identifiers).
MEMBER_NAME_PATTERN = ID_PATTERN
#: The issue's rule for branch identifiers.
BRANCH_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"

#: A session never holds more thoughts than this, and totals are never raised past it.
MAX_THOUGHTS = 1000
MAX_THOUGHT_CHARS = 10_000
#: Limits of the optional thought labels (``stage``, ``tags``).
MAX_STAGE_CHARS = 64
MAX_TAG_CHARS = 32
MAX_TAGS = 16
#: How far ``needsMoreThoughts`` raises the total.
NEEDS_MORE_STEP = 10


class Settings(BaseModel):
    """``plugins.deep-thinking`` in the config."""

    model_config = ConfigDict(extra="forbid")
    compact_every: int = Field(
        default=256,
        ge=1,
        le=1000,
        description="Fold a session's journal into its document after this many thoughts",
    )
    sync_interval_seconds: float = Field(
        default=1.0,
        gt=0,
        le=1.0,
        description="Journal writes are fsynced at most this long after they answer",
    )
    templates_dir: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="Folder of user templates (*.yaml, *.yml, *.json); relative to the plugin's data "
        "folder; default: templates/ in it",
    )


ThoughtType = Literal["regular", "revision", "branch"]
SessionStatus = Literal["active", "completed", "archived"]


class Notice(BaseModel):
    """A warning attached to an answer: the call succeeded, but something deserves a look."""

    code: str = Field(description="Stable UPPER_SNAKE code, e.g. DANGLING_REFERENCE")
    message: Text = Field(description="The warning in the server's language")


class Adjustment(BaseModel):
    """One raise of a session's planned total of thoughts."""

    time: str = Field(description="When the raise happened (ISO 8601, UTC)")
    from_total: int = Field(description="The total before the raise")
    to_total: int = Field(description="The total after the raise")
    reason: Literal["needs_more_thoughts", "thought_number_exceeds_total", "client_raised_total"] = Field(
        description="Why the total was raised"
    )
    sequence: int = Field(description="Sequence number of the thought that caused the raise")


class ThoughtRecord(BaseModel):
    """One stored thought: the spec's Thought fields plus the server's own sequence number."""

    sequence: int = Field(description="The server's own number for this thought, unique in the session")
    thought_number: int = Field(description="The client's label (thoughtNumber); labels may repeat")
    content: str
    type: ThoughtType
    is_revision: bool = False
    revises_thought: int | None = Field(default=None, description="Label of the revised thought")
    revises_sequence: int | None = Field(
        default=None, description="Sequence number of the revised thought; null when the label was not found"
    )
    branch_from_thought: int | None = Field(default=None, description="Label the branch starts from")
    branch_from_sequence: int | None = Field(
        default=None, description="Sequence number the branch starts from; null when the label was not found"
    )
    branch_id: str | None = None
    total_thoughts: int = Field(description="The total answered for this thought")
    next_thought_needed: bool
    needs_more_thoughts: bool = False
    timestamp: str = Field(description="When the thought was stored (ISO 8601, UTC)")
    stage: str | None = Field(default=None, description="The thinking stage the client gave (free text)")
    tags: list[str] = Field(default_factory=list, description="The tags the client gave")
    by: str | None = Field(
        default=None,
        description="The member who added the thought; null for thoughts from before members were recorded",
    )


class TemplateStep(BaseModel):
    """One planned step of a thinking template."""

    index: int = Field(description="1-based position; the thoughtNumber that should address this step")
    title: str
    guidance: str = Field(description="What this step asks the thinker to do")


class TemplateInfo(BaseModel):
    """A thinking template, built in or from the user's templates folder."""

    template_id: str
    name: str
    description: str
    steps: list[TemplateStep]
    source: Literal["built_in", "user"] = Field(default="built_in", description="Where it comes from")
    file: str | None = Field(default=None, description="A user template's file")


class InvalidTemplate(BaseModel):
    """A user template file that cannot be used, and why."""

    file: str
    field: str = Field(description="The field at fault, e.g. steps.2.title; (file) for the file itself")
    problem: Text


class SessionSummary(BaseModel):
    """A session without its thoughts: what lists, status changes and the index carry."""

    session_id: str
    name: str
    description: str = ""
    status: SessionStatus
    created_at: str
    updated_at: str
    thought_count: int
    total_thoughts: int | None = Field(default=None, description="The latest planned total")
    template_id: str | None = None
    is_default: bool = Field(default=False, description="Started implicitly by a call without session_id")
    created_by: str | None = Field(
        default=None,
        description="The member who created the session; null for sessions from before members were recorded",
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    branches: list[str] = Field(default_factory=list)


class LinkedTask(BaseModel):
    """A task of the tasks plugin linked to this session."""

    task_id: str
    title: str
    status: str
    priority: str


# --- tool outputs --------------------------------------------------------------------------


def inline_definitions(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every ``#/$defs/`` reference replaced by the definition itself.

    Clients validate each result against the output schema; resolving references is most of
    that cost, and ``sequential_thinking`` answers often.
    """
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref")
            if isinstance(reference, str) and reference.startswith("#/$defs/"):
                return resolve(dict(definitions[reference.removeprefix("#/$defs/")]))
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


class DefaultSessionChange(BaseModel):
    """Why a call without session_id did not go to the current default session."""

    previous_session_id: str = Field(description="The default session the thought could not go to")
    reason: Literal["archived", "deleted"] = Field(description="What happened to it")


class ThoughtOutput(ToolOutput):
    """The official server's fields first, then what durable sessions add."""

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return inline_definitions(super().model_json_schema(*args, **kwargs))

    thoughtNumber: int
    totalThoughts: int
    nextThoughtNeeded: bool
    branches: list[str] = Field(description="Branch ids of the session, in the order they appeared")
    thoughtHistoryLength: int = Field(description="Thoughts stored in the session")
    session_id: str
    session_created: bool = Field(description="True when this call started the session")
    thought_type: ThoughtType
    sequence: int = Field(description="The server's sequence number of this thought")
    adjustments: list[Adjustment] = Field(description="Raises of the total made by this call")
    warnings: list[Notice]
    next_step: TemplateStep | None = Field(
        default=None, description="For template sessions: the step the next thought should address"
    )
    default_session_changed: DefaultSessionChange | None = Field(
        default=None,
        description="Set when a call without session_id found the default session archived or deleted "
        "and started a new default session instead",
    )


class SessionOutput(ToolOutput):
    session: SessionSummary


class GetSessionOutput(Page):
    session: SessionSummary
    thoughts: list[ThoughtRecord] = Field(description="One page of thoughts, in sequence order")
    adjustments: list[Adjustment]
    linked_tasks: list[LinkedTask] | None = Field(
        description="Tasks linked to this session; null when the tasks plugin is not loaded"
    )
    warnings: list[Notice]
    matching_thoughts: int = Field(
        description="Thoughts passing the stage/tags filter (all thoughts without a filter)"
    )


class ListSessionsOutput(Page):
    sessions: list[SessionSummary] = Field(description="One page of sessions, newest first")
    total: int = Field(description="Sessions matching the filter (on every page), damaged ones included")
    unreadable_sessions: list[str] = Field(
        description="Ids of listed sessions whose files are damaged (get_session says what is wrong)"
    )
    warnings: list[Notice]


class DeleteSessionOutput(ToolOutput):
    session_id: str
    deleted: bool
    backup: str | None = Field(
        description="The backup taken before deleting (a file in the plugin's data folder)"
    )
    backup_id: str | None = Field(description="That backup's name, for restore_session's backup argument")
    restore_call: dict[str, Any] | None = Field(
        description="The restore_session arguments that bring the session back; null without a backup"
    )


class RestoreSessionOutput(ToolOutput):
    session: SessionSummary
    restored_from: str = Field(description="The backup the session was restored from")
    replaced: bool = Field(description="True when a live session of that id was replaced (after a backup)")
    backups: list[str] = Field(description="The session's backups now kept, newest first")


class UpdateStatusOutput(ToolOutput):
    session: SessionSummary
    previous_status: SessionStatus


class Progress(BaseModel):
    thought_count: int
    current_thought_number: int | None
    total_thoughts: int | None
    percent: float | None = Field(description="current_thought_number / total_thoughts, in percent")


class ResumeOutput(ToolOutput):
    session: SessionSummary
    last_thought: ThoughtRecord | None
    progress: Progress
    adjustments: list[Adjustment]
    next_call: dict[str, Any] = Field(description="The exact arguments for the next sequential_thinking call")
    next_step: TemplateStep | None
    reactivated: bool = Field(description="True when the session was completed and is active again")


class TemplatesOutput(ToolOutput):
    templates: list[TemplateInfo] = Field(description="Built-in templates first, then the user's")
    templates_folder: str = Field(description="Where user templates are read from (*.yaml, *.yml, *.json)")
    invalid_templates: list[InvalidTemplate] = Field(
        description="User template files left out, each with the field at fault"
    )


class ExportOutput(ToolOutput):
    session_id: str
    format: str
    content: str | None = Field(description="The document, when no output_path was given")
    output_path: str | None = Field(description="The file written, when output_path was given")
    bytes_written: int | None


class ImportOutput(ToolOutput):
    session: SessionSummary
    replaced: bool = Field(description="True when an existing session was overwritten (after a backup)")
    warnings: list[Notice]


class VisualizeOutput(ToolOutput):
    session_id: str
    format: str
    diagram: str


class ThoughtHit(BaseModel):
    """One thought found by search_thoughts."""

    session_id: str
    session_name: str
    thought_number: int = Field(description="The client's label of the thought")
    sequence: int = Field(description="The server's sequence number (get_session's thoughts carry it)")
    type: ThoughtType
    branch_id: str | None
    stage: str | None
    tags: list[str]
    snippet: str = Field(description="The thought's text around the first match")
    score: float = Field(description="Relevance (BM25; higher is better)")


class SearchOutput(Page):
    query: str
    terms: list[str] = Field(description="The words the query was split into")
    matched: Literal["all_terms", "any_term"] = Field(
        description="all_terms: every hit holds every term; any_term: none held all, so hits hold some"
    )
    hits: list[ThoughtHit] = Field(description="Best first (one page)")


class StageSpan(BaseModel):
    """A run of consecutive thoughts in one stage (from their ``stage``, else the template's steps)."""

    stage: str
    source: Literal["stage", "template"] = Field(
        description="stage: the thoughts' own stage; template: a step"
    )
    first_sequence: int
    last_sequence: int
    thought_count: int


class Conclusion(BaseModel):
    """The last thought of the main line (branch_id null) or of a branch."""

    branch_id: str | None
    thought_number: int
    sequence: int
    text: str = Field(description="The thought's text (shortened)")
    final: bool = Field(description="True when that thought said no further thought is needed")


class RevisionNote(BaseModel):
    """A revision and what it replaced."""

    sequence: int
    thought_number: int
    revises_thought: int | None
    revises_sequence: int | None
    original: str | None = Field(description="The revised thought's text (shortened); null when not found")
    replacement: str = Field(description="The revision's text (shortened)")


class SummaryCounts(BaseModel):
    thoughts: int
    main_line: int
    branches: int
    revisions: int
    dangling_references: int
    adjustments: int = Field(description="Raises of the planned total")


class SummaryOutput(ToolOutput):
    session_id: str
    summarizer: Literal["sampling", "structural"] = Field(
        description="sampling: the client's model wrote summary; structural: built from the session alone"
    )
    model: str | None = Field(description="The client's model, when it wrote the summary")
    summary: str = Field(description="Markdown, in the server's language")
    stages: list[StageSpan]
    conclusions: list[Conclusion]
    revisions: list[RevisionNote]
    open_branches: list[str] = Field(description="Branches whose last thought asked for more")
    counts: SummaryCounts
    warnings: list[Notice]
