"""A session as the stores hold it: the document's shape, its in-memory state, the journal line.

Shared by both stores (files and the team database) and by the export/import code, so the
rules of what a stored session looks like live once. ``check_document`` is applied to every
document read, so a damaged or hand-edited file is a READ_ERROR, never an answer that fails
half-way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from hostd_db import utc_stamp

from hostd_deep_thinking.jsonshape import shape_problem

FORMAT_VERSION = 1


def document_chunks(document: dict[str, Any]) -> Iterator[bytes]:
    """The document as UTF-8 JSON (as ``json.dumps(ensure_ascii=False)`` writes it), in pieces of
    about ``CHUNK_BYTES``, for writing straight to its file: a 30 MB import is never whole in
    memory as text or as bytes (``json.dumps`` held every piece, the joined text and the bytes)."""
    buffer = bytearray()
    for piece in _DOCUMENT_ENCODER.iterencode(document):
        buffer += piece.encode("utf-8")
        if len(buffer) >= CHUNK_BYTES:
            yield bytes(buffer)
            buffer.clear()
    if buffer:
        yield bytes(buffer)


def file_chunks(path: Path) -> Iterator[bytes]:
    """The file's bytes in pieces of ``CHUNK_BYTES`` (a backup copied from a document just written)."""
    with path.open("rb") as file:
        while chunk := file.read(CHUNK_BYTES):
            yield chunk


#: The size of the pieces a document is written and copied in.
CHUNK_BYTES = 1024 * 1024
_DOCUMENT_ENCODER = json.JSONEncoder(ensure_ascii=False)


def encode_line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def journal_line(seq: int, thought: dict[str, Any], adjustment: dict[str, Any] | None) -> bytes:
    """One journal line; ``end`` repeats the sequence number so a reader can find it at the file's tail."""
    record: dict[str, Any] = {"seq": seq, "thought": thought}
    if adjustment is not None:
        record["adjustment"] = adjustment
    record["end"] = seq
    return encode_line(record)


@dataclass
class SessionState:
    """One session as this process knows it, and how far it has read the files."""

    meta: dict[str, Any]
    thoughts: list[dict[str, Any]] = field(default_factory=list)
    adjustments: list[dict[str, Any]] = field(default_factory=list)
    latest_by_label: dict[int, int] = field(default_factory=dict)
    branches: dict[str, list[int]] = field(default_factory=dict)
    last_seq: int = 0
    compacted_seq: int = 0
    doc_signature: tuple[int, int, int] | None = None
    journal_inode: int | None = None
    journal_offset: int = 0
    notes: list[dict[str, Any]] = field(default_factory=list)  # repairs not yet reported to a caller
    max_regular_label: int = 0

    @property
    def session_id(self) -> str:
        return str(self.meta["session_id"])

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> SessionState:
        meta = {key: value for key, value in document.items() if key not in ("thoughts", "adjustments")}
        state = cls(meta=meta)
        for thought in document.get("thoughts", []):
            state.apply(thought, None)
        state.adjustments = list(document.get("adjustments", []))
        state.last_seq = max(int(document.get("last_seq", 0)), state.last_seq)
        state.compacted_seq = state.last_seq
        return state

    def note(self, problem: str) -> None:
        """Record a repair: kept in the document's recovery log and reported to the current caller."""
        entry = {"time": utc_stamp(), "problem": problem, "recovered_from": "journal"}
        self.meta.setdefault("recovery_log", []).append(entry)
        self.notes.append(entry)

    def apply(self, thought: dict[str, Any], adjustment: dict[str, Any] | None) -> None:
        seq = int(thought["seq"])
        self.thoughts.append(thought)
        self.latest_by_label[int(thought["thought_number"])] = seq
        branch_id = thought.get("branch_id")
        if branch_id and thought.get("branch_from_thought") is not None:
            self.branches.setdefault(branch_id, []).append(seq)
        elif thought.get("type") == "regular":
            self.max_regular_label = max(self.max_regular_label, int(thought["thought_number"]))
        if adjustment is not None:
            self.adjustments.append(adjustment)
        self.last_seq = max(self.last_seq, seq)
        self.meta["total_thoughts"] = thought.get("total_thoughts", self.meta.get("total_thoughts"))
        stamp = thought.get("timestamp")
        if stamp and stamp > str(self.meta.get("updated_at", "")):
            self.meta["updated_at"] = stamp

    def to_document(self) -> dict[str, Any]:
        document = dict(self.meta)
        document["format_version"] = FORMAT_VERSION
        document["last_seq"] = self.last_seq
        document["adjustments"] = self.adjustments
        document["thoughts"] = self.thoughts
        return document

    def summary(self) -> dict[str, Any]:
        meta = self.meta
        return {
            "session_id": meta["session_id"],
            "name": meta.get("name", meta["session_id"]),
            "description": meta.get("description", ""),
            "status": meta.get("status", "active"),
            "created_at": meta.get("created_at", ""),
            "updated_at": meta.get("updated_at", ""),
            "thought_count": len(self.thoughts),
            "total_thoughts": meta.get("total_thoughts"),
            "template_id": meta.get("template_id"),
            "is_default": bool(meta.get("is_default", False)),
            "created_by": meta.get("created_by"),
            "metadata": meta.get("metadata", {}),
            "branches": list(self.branches),
        }


def new_document(
    session_id: str,
    *,
    name: str,
    description: str = "",
    metadata: dict[str, Any] | None = None,
    template_id: str | None = None,
    total_thoughts: int | None = None,
    is_default: bool = False,
    created_by: str | None = None,
) -> dict[str, Any]:
    """A new, empty session; ``created_by`` is the member creating it (None only for internal repairs)."""
    now = utc_stamp()
    return {
        "format_version": FORMAT_VERSION,
        "session_id": session_id,
        "name": name,
        "description": description,
        "created_at": now,
        "updated_at": now,
        "status": "active",
        "metadata": metadata or {},
        "template_id": template_id,
        "is_default": is_default,
        "created_by": created_by,
        "total_thoughts": total_thoughts,
        "last_seq": 0,
        "recovery_log": [],
        "adjustments": [],
        "thoughts": [],
    }


_STATUSES = ("active", "completed", "archived")
_THOUGHT_TYPES = ("regular", "revision", "branch")
_ADJUSTMENT_REASONS = ("needs_more_thoughts", "thought_number_exceeds_total", "client_raised_total")


def _expect(ok: bool, problem: str) -> None:
    if not ok:
        raise ValueError(problem)


def check_thought(thought: Any) -> dict[str, Any]:
    """A stored thought has the fields every answer shows, with their types; raises ValueError otherwise."""
    _expect(isinstance(thought, dict), "a thought is not an object")
    _expect(isinstance(thought.get("seq"), int), "a thought has no sequence number")
    _expect(isinstance(thought.get("thought_number"), int), "a thought has no thought_number")
    _expect(isinstance(thought.get("content"), str), f"thought #{thought['seq']} has no text")
    _expect(
        thought.get("type", "regular") in _THOUGHT_TYPES, f"thought #{thought['seq']} has an unknown type"
    )
    for name in ("branch_id", "timestamp", "stage", "by"):
        _expect(isinstance(thought.get(name) or "", str), f"thought #{thought['seq']}'s {name} is not text")
    tags = thought.get("tags", [])
    _expect(
        isinstance(tags, list) and all(isinstance(tag, str) for tag in tags),
        f"thought #{thought['seq']}'s tags are not a list of text",
    )
    for name in (
        "revises_thought",
        "branch_from_thought",
        "total_thoughts",
        "revises_seq",
        "branch_from_seq",
    ):
        _expect(
            isinstance(thought.get(name) or 0, int), f"thought #{thought['seq']}'s {name} is not a number"
        )
    return cast("dict[str, Any]", thought)


def check_document(document: Any) -> dict[str, Any]:
    """The shape a session document must have to be loaded and shown; raises ValueError otherwise.

    Checked in full when a document is read, so a damaged or hand-edited file is a READ_ERROR
    (or is rebuilt from a backup) instead of an answer that fails half-way.
    """
    _expect(isinstance(document, dict), "the document is not a JSON object")
    _expect(isinstance(document.get("session_id"), str), "the document has no session_id")
    _expect(document.get("status", "active") in _STATUSES, "the document's status is unknown")
    for name in ("name", "description", "created_at", "updated_at"):
        _expect(isinstance(document.get(name, ""), str), f"the document's {name} is not text")
    _expect(
        isinstance(document.get("total_thoughts") or 0, int), "the document's total_thoughts is not a number"
    )
    _expect(isinstance(document.get("template_id") or "", str), "the document's template_id is not text")
    _expect(isinstance(document.get("created_by") or "", str), "the document's created_by is not text")
    metadata = document.get("metadata", {})
    _expect(isinstance(metadata, dict), "the document's metadata is not an object")
    problem = shape_problem(metadata)
    _expect(problem is None, f"the document's metadata cannot be shown ({problem})")
    _expect(isinstance(document.get("thoughts", []), list), "the document's thoughts are not a list")
    for thought in document.get("thoughts", []):
        check_thought(thought)
    adjustments = document.get("adjustments", [])
    _expect(isinstance(adjustments, list), "the document's adjustments are not a list")
    for adjustment in adjustments:
        check_adjustment(adjustment)
    return cast("dict[str, Any]", document)


def check_adjustment(adjustment: Any) -> dict[str, Any]:
    """A recorded raise of the total, as answers show it; raises ValueError otherwise."""
    _expect(isinstance(adjustment, dict), "an adjustment is not an object")
    _expect(
        all(isinstance(adjustment.get(name), int) for name in ("from_total", "to_total", "sequence"))
        and isinstance(adjustment.get("time"), str)
        and adjustment.get("reason") in _ADJUSTMENT_REASONS,
        "an adjustment lacks its totals, time, reason or sequence",
    )
    return cast("dict[str, Any]", adjustment)
