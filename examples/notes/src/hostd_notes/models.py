"""The ``*Output`` models: their fields become the envelope's fields (a record nests under its name)."""

from __future__ import annotations

from hostd.paging import Page
from pydantic import BaseModel, Field

from hostd import ToolOutput


class Note(BaseModel):
    id: int = Field(description="The note's number, in the order notes were added")
    title: str
    body: str
    created_by: str = Field(description="The member who added it")
    created_at: str = Field(description="When, in UTC (ISO 8601)")


class NoteOutput(ToolOutput):
    note: Note


class NoteListOutput(Page):
    notes: list[Note]
    total: int = Field(description="How many notes there are in all")
