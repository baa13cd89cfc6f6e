"""The tool functions: typed arguments (the input schema) and a ``ToolOutput`` (the output schema)."""

from __future__ import annotations

from typing import Annotated

from hostd.paging import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, encode_cursor, int_position
from pydantic import Field

from hostd import Text, ToolContext
from hostd_notes.models import NoteListOutput, NoteOutput
from hostd_notes.store import NoteStore

LISTING = "list_notes"


def add_note(
    ctx: ToolContext[None],
    title: Annotated[str, Field(description="A title no other note has", min_length=1, max_length=200)],
    body: Annotated[str, Field(description="The note's text", max_length=10_000)] = "",
) -> NoteOutput:
    """Add a note."""
    note = NoteStore(ctx.database()).add(title, body, ctx.member)
    message = Text(en="Note {id} added.", zh="已添加笔记 {id}。").format(id=note.id)
    return NoteOutput(note=note).with_message(message)


def list_notes(ctx: ToolContext[None], limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> NoteListOutput:
    """List the notes, oldest first."""
    after = int_position(decode_cursor(cursor, LISTING, {})) or 0
    notes, total = NoteStore(ctx.database()).page(after, limit + 1)
    more = len(notes) > limit
    notes = notes[:limit]
    next_cursor = encode_cursor(LISTING, {}, notes[-1].id) if more else None
    message = Text(en="{shown} of {total} notes.", zh="共 {total} 条笔记，显示 {shown} 条。")
    return NoteListOutput(notes=notes, total=total, next_cursor=next_cursor, truncated=more).with_message(
        message.format(shown=len(notes), total=total)
    )
