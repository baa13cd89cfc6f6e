"""What the tools need from a sessions store, whichever backend holds the sessions.

``files.SessionStore`` (the data folder, the default) and ``postgres.PostgresSessionStore``
(the team database) both provide ``SessionBackend``, with the same rules; ``Searcher`` is
what ``search_thoughts`` asks (the SQLite index beside the files, or the PostgreSQL store).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from hostd_deep_thinking.store.documents import SessionState

if TYPE_CHECKING:
    from hostd_deep_thinking.search import Hit, Query

#: What ``append`` asks to plan the next thought: given the session as stored right now, the thought
#: to store (its ``seq`` is ``state.last_seq + 1``) and the raise of the total it causes, if any.
Plan = Callable[[SessionState], tuple[dict[str, Any], dict[str, Any] | None]]
#: Where a session stands in ``list_summaries`` (newest first): its update time, then its id.
ListingKey = tuple[str, str]

#: Backups kept per session (the file store's files, the team database's rows).
BACKUPS_KEPT = 10
#: Sessions each process keeps in memory.
CACHED_SESSIONS = 64
#: ... and at most this much of their documents (sizes on disk), the last one used always kept.
CACHED_DOCUMENT_BYTES = 32 * 1024 * 1024
#: Ends the name of the backup a delete takes, so a restore finds it among later backups.
DELETED_LABEL = "-deleted"


class WouldBlock(Exception):
    """A non-blocking append found work that should not run on the event loop (wait, load, create)."""


@dataclass(frozen=True)
class Appended:
    """What one ``append`` did, copied under the lock so other threads cannot change it."""

    thought: dict[str, Any]
    adjustment: dict[str, Any] | None
    created: bool
    thought_count: int
    branches: list[str]
    template_id: str | None
    max_regular_label: int
    notes: list[dict[str, Any]]
    compaction_due: bool = False

    @classmethod
    def of(
        cls,
        state: SessionState,
        thought: dict[str, Any],
        adjustment: dict[str, Any] | None,
        *,
        created: bool,
        notes: list[dict[str, Any]],
        compaction_due: bool = False,
    ) -> Appended:
        """The report of an append just applied to ``state``: what the tools show of the session,
        copied out of it here, in one place for both stores."""
        return cls(
            thought=thought,
            adjustment=adjustment,
            created=created,
            thought_count=len(state.thoughts),
            branches=list(state.branches),
            template_id=state.meta.get("template_id"),
            max_regular_label=state.max_regular_label,
            notes=notes,
            compaction_due=compaction_due,
        )


@dataclass(frozen=True, kw_only=True)
class SessionListing:
    """What ``list_summaries`` is asked: the filters and the page, one value every store layer passes on."""

    limit: int
    status: str | None = None
    created_by: str | None = None
    after: ListingKey | None = None
    """The (updated_at, session_id) the previous page ended at; ``None`` for the first page."""


@dataclass(frozen=True)
class SummaryPage:
    """One page of ``list_summaries``: session summaries newest first, after the position asked for."""

    rows: list[dict[str, Any]]
    total: int
    """Sessions matching the filters, on every page."""
    more: bool
    """Whether sessions follow this page."""


class SessionBackend(Protocol):
    """What the tools need from a sessions store: ``SessionStore`` (files, the default) and
    ``postgres.PostgresSessionStore`` (the team database) both provide it, with the same rules."""

    def load(self, session_id: str) -> SessionState | None: ...
    def exists(self, session_id: str) -> bool: ...
    def create(self, document: dict[str, Any], *, replace: bool = False) -> SessionState: ...
    def append(
        self,
        session_id: str,
        plan: Plan,
        *,
        create: Callable[[], dict[str, Any]] | None = None,
        blocking: bool = True,
    ) -> Appended: ...
    def compact(self, session_id: str) -> SessionState: ...
    def update_meta(
        self, session_id: str, change: Callable[[SessionState], Any]
    ) -> tuple[SessionState, Any]: ...
    def delete(self, session_id: str) -> str | None: ...
    def backup_id(self, session_id: str, kept: str) -> str | None: ...
    def backup_names(self, session_id: str) -> list[str]: ...
    def deleted_sessions(self) -> list[tuple[str, dict[str, Any], str]]: ...
    def restore(
        self, session_id: str, backup_name: str | None = None, *, replace: bool = False
    ) -> tuple[SessionState, str, bool]: ...
    def list_summaries(self, listing: SessionListing) -> SummaryPage:
        """Sessions newest first (by update time, then id) that come after ``after``, at most ``limit``."""
        ...

    def session_lock(self, session_id: str) -> AbstractContextManager[None]: ...
    def default_session(self, member: str) -> str | None: ...
    def set_default_session(self, member: str, session_id: str) -> None: ...
    def close(self) -> None: ...


class Searcher(Protocol):
    """Full-text search over a store's thoughts: ``search_index.SearchIndex`` beside the files, or the
    PostgreSQL store itself."""

    def search(self, query: Query, session_id: str | None, limit: int) -> tuple[list[Hit], bool, bool]: ...
