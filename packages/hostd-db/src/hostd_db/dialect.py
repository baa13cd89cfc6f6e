"""What a unit of work is handed (``Connection``, ``Cursor``) and the spellings that differ
between SQLite and PostgreSQL (``Dialect``): the vocabulary both the schema and the databases
speak, so neither imports the other for it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = ["POSTGRES", "SQLITE", "Connection", "Cursor", "Dialect", "DialectName"]

#: The two engines a plugin's schema is written for.
DialectName = Literal["sqlite", "postgres"]


class Cursor(Protocol):
    """A statement's rows (tuples, or ``sqlite3.Row``s that index and unpack as tuples)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = ...) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What a unit of work gets: ``?`` placeholders on both engines."""

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...


@dataclass(frozen=True)
class Dialect:
    """The spellings that differ between SQLite and PostgreSQL, written once."""

    name: DialectName

    @property
    def is_postgres(self) -> bool:
        return self.name == "postgres"

    @property
    def locks_rows(self) -> bool:
        """Whether a write must lock the rows it reads to change (PostgreSQL); SQLite's write
        transaction already holds the whole file."""
        return self.is_postgres

    def position(self, needle: str, haystack: str) -> str:
        """SQL for the 1-based position of ``needle`` in ``haystack`` (0 when absent)."""
        if self.is_postgres:
            return f"strpos({haystack}, {needle})"
        return f"instr({haystack}, {needle})"

    def lock_rows(self, *, of: str | None = None, skip_locked: bool = False) -> str:
        """Appended to a SELECT: hold its rows until the transaction ends (SQLite's write
        transaction already holds the whole file, so nothing there)."""
        if not self.is_postgres:
            return ""
        target = f" OF {of}" if of else ""
        return f" FOR UPDATE{target}{' SKIP LOCKED' if skip_locked else ''}"

    def ids_in(self, column: str, ids: Sequence[object]) -> tuple[str, object]:
        """A condition 'column is one of ids' with one parameter, whatever the number of ids."""
        if self.is_postgres:
            return f"{column} = ANY(?)", list(ids)
        return f"{column} IN (SELECT value FROM json_each(?))", json.dumps(list(ids))

    def group_concat(self, expression: str, separator_sql: str) -> str:
        """An aggregate joining ``expression`` with a separator (``string_agg`` / ``group_concat``)."""
        if self.is_postgres:
            return f"string_agg({expression}, {separator_sql})"
        return f"group_concat({expression}, {separator_sql})"

    @staticmethod
    def insert_ignoring_duplicates(table: str, columns: str, placeholders: str) -> str:
        """An INSERT that skips a row whose key is already there (both speak ``ON CONFLICT``)."""
        return f"INSERT INTO {table} ({columns}) VALUES ({placeholders}) ON CONFLICT DO NOTHING"


SQLITE = Dialect("sqlite")
POSTGRES = Dialect("postgres")
