"""The store the tools reach on ``ctx.database()``: one class, written once for SQLite and PostgreSQL."""

from __future__ import annotations

from hostd_db import Connection, Database, utc_stamp

from hostd_notes.models import Note
from hostd_notes.store.refusals import title_taken

_COLUMNS = "seq, title, body, created_by, created_at"


def _note(row: tuple[int, str, str, str, str]) -> Note:
    seq, title, body, created_by, created_at = row
    return Note(id=seq, title=title, body=body, created_by=created_by, created_at=created_at)


class NoteStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    def add(self, title: str, body: str, member: str) -> Note:
        def work(conn: Connection) -> Note:
            # Checked inside the write (one writer per lock), so the refusal is never a race.
            if conn.execute("SELECT 1 FROM notes WHERE title = ?", (title,)).fetchone():
                raise title_taken(title)
            row = conn.execute(
                f"INSERT INTO notes (title, body, created_by, created_at) VALUES (?, ?, ?, ?) "
                f"RETURNING {_COLUMNS}",
                (title, body, member, utc_stamp()),
            ).fetchone()
            return _note(tuple(row))

        return self.database.write(work, lock="notes")

    def page(self, after: int, limit: int) -> tuple[list[Note], int]:
        """Up to ``limit`` notes after ``seq`` ``after``, oldest first, and how many there are."""

        def work(conn: Connection) -> tuple[list[Note], int]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM notes WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
            ).fetchall()
            total = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
            return [_note(tuple(row)) for row in rows], int(total)

        return self.database.read(work)
