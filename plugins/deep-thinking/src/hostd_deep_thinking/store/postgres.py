"""Sessions in the team database (PostgreSQL): the same operations as ``store.SessionStore``, as rows.

``store.session_store`` picks it when ``storage`` is configured. Every ``client`` test of the
plugin runs on both stores, and ``tests/test_store_contract.py`` checks the two side by side.

Why it is built this way:

- The store is written against ``hostd_db.Database`` (``read``/``write``, ``?`` placeholders,
  rows as tuples), on the plugin's schema the host opened from ``schema``.
- Documents and thoughts are ``json`` (kept as sent; ``jsonb`` refuses ``\\u0000``, which a
  thought may hold), passed as JSON text (``_json``: ASCII, so the NUL-safe text layer leaves it
  as it is).
- A session is one row (its metadata, adjustments, the summary ``list_sessions`` shows and
  the columns it filters and sorts on) and its thoughts are rows keyed by
  ``(session_id, seq)``: sequence numbers are unique per session by the primary key.
- Appending locks the session's row (``SELECT ... FOR UPDATE``) and takes ``last_seq + 1``
  in the same transaction, so appends from any number of processes are numbered without
  gaps; a deadlock or serialization failure runs the whole append again (``Database.write``).
- Each process keeps the sessions it used (``generation`` changes whenever a session is
  replaced), so an append reads only the thoughts added since, not the whole session.
- Search: each thought row carries a ``tsvector`` built here in Python from the same words the
  SQLite FTS5 index holds (``search.words_text``: CJK runs as bigrams plus their last
  character; case and diacritics folded as FTS5's ``unicode61 remove_diacritics 2`` does),
  with the stage and tags at weight B. Queries are built the same way (a CJK term is the
  phrase of its bigrams, one character a prefix; words from three letters are prefixes), so
  1-2 character Chinese queries find what they find on SQLite. Lexemes are passed as quoted
  literals, never parsed by a text search configuration. Ranking is ``ts_rank`` divided by
  the log of the thought's length, so (as with BM25) a short thought about the query ranks
  above a long one mentioning it once.
- Backups are rows named as the file store names its files, newest ``BACKUPS_KEPT`` kept per
  session; a delete's backup ends in ``DELETED_LABEL`` so a restore finds it first.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from hostd_db import Connection, Database, utc_stamp

from hostd_deep_thinking.search import Hit, Query, search_queries, thought_words
from hostd_deep_thinking.store.backend import (
    BACKUPS_KEPT,
    CACHED_SESSIONS,
    DELETED_LABEL,
    Appended,
    Plan,
    SessionListing,
    SummaryPage,
    WouldBlock,
)
from hostd_deep_thinking.store.documents import SessionState, check_document, check_thought
from hostd_deep_thinking.store.refusals import (
    BackupNotFound,
    SessionExists,
    SessionNotFound,
    SessionUnreadable,
)

Conn = Connection


def _json(value: Any) -> str:
    """JSON text for a ``json`` column (``?::json``), not ``jsonb``: thoughts are stored verbatim, and
    ``jsonb`` refuses a NUL character. ASCII: escapes, never a raw NUL, pass the text layer unchanged."""
    return json.dumps(value)


def _state_columns(state: SessionState, summary: dict[str, Any]) -> tuple[str, str, int, str, Any, str]:
    """A session row's values that follow its state, in the order both writes list them: ``meta``,
    ``adjustments``, ``last_seq``, ``summary`` and the ``status`` and ``updated_at`` listings use."""
    return (
        _json(state.meta),
        _json(state.adjustments),
        state.last_seq,
        _json(summary),
        summary["status"],
        str(summary["updated_at"]),
    )


def _clone(state: SessionState) -> SessionState:
    """A copy an append may change without touching the cached state until it commits."""
    return SessionState(
        meta=copy.deepcopy(state.meta),
        thoughts=list(state.thoughts),
        adjustments=list(state.adjustments),
        latest_by_label=dict(state.latest_by_label),
        branches={branch: list(seqs) for branch, seqs in state.branches.items()},
        last_seq=state.last_seq,
        compacted_seq=state.compacted_seq,
        max_regular_label=state.max_regular_label,
    )


def _backup_name(seq: int, label: str = "") -> str:
    """Named as the file store names its backup files, so answers look the same on both backends."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{stamp}-s{seq:04d}{label}.json"


class PostgresSessionStore:
    """All sessions of a team, in the ``deep_thinking`` schema. Thread-safe; processes may share it."""

    def __init__(self, database: Database) -> None:
        assert database.dialect.is_postgres, "the session tables live only in the team database"
        self.database = database
        self._cache: OrderedDict[str, tuple[int, SessionState]] = OrderedDict()
        self._guard = threading.Lock()

    # --- the per-process cache ------------------------------------------------------------

    def _cached(self, session_id: str, generation: int) -> SessionState | None:
        with self._guard:
            entry = self._cache.get(session_id)
            if entry is None or entry[0] != generation:
                return None
            self._cache.move_to_end(session_id)
            return _clone(entry[1])

    def _remember(self, generation: int, state: SessionState) -> None:
        with self._guard:
            self._cache[state.session_id] = (generation, _clone(state))
            self._cache.move_to_end(state.session_id)
            while len(self._cache) > CACHED_SESSIONS:
                self._cache.popitem(last=False)

    def _forget(self, session_id: str) -> None:
        with self._guard:
            self._cache.pop(session_id, None)

    # --- reading rows ---------------------------------------------------------------------

    def _state(self, conn: Conn, session_id: str, *, lock: bool) -> tuple[int, SessionState] | None:
        """The session as the database holds it (its row locked when ``lock``), from the cache plus
        the thoughts added since; a row that fails the document checks is ``SessionUnreadable``."""
        row = conn.execute(
            "SELECT generation, meta, adjustments, last_seq FROM sessions WHERE session_id = ?"
            + (" FOR UPDATE" if lock else ""),
            (session_id,),
        ).fetchone()
        if row is None:
            return None
        generation, meta, adjustments, last_seq = row
        state = self._cached(session_id, int(generation)) or SessionState(meta={})
        # The row's metadata is current (another process may have changed the status); the
        # thoughts after the cached ones are read and applied on top.
        state.meta = dict(meta)
        try:
            check_document({**state.meta, "adjustments": adjustments, "thoughts": []})
            for (thought,) in conn.execute(
                "SELECT thought FROM thoughts WHERE session_id = ? AND seq > ? ORDER BY seq",
                (session_id, state.last_seq),
            ).fetchall():
                state.apply(check_thought(thought), None)
            state.adjustments = list(adjustments)
            state.last_seq = max(state.last_seq, int(last_seq))
        except (ValueError, KeyError, TypeError) as exc:
            raise SessionUnreadable(session_id, f"the session's rows are damaged ({exc})", None) from None
        state.compacted_seq = state.last_seq
        return int(generation), state

    # --- writing rows ---------------------------------------------------------------------

    @staticmethod
    def _save_meta(conn: Conn, state: SessionState) -> None:
        summary = state.summary()
        conn.execute(
            "UPDATE sessions SET meta = ?::json, adjustments = ?::json, last_seq = ?, summary = ?::json,"
            " status = ?, updated_at = ? WHERE session_id = ?",
            (*_state_columns(state, summary), state.session_id),
        )

    @staticmethod
    def _backup(conn: Conn, state: SessionState, label: str = "") -> str:
        """Keep the session's document as a backup row; only the newest ``BACKUPS_KEPT`` stay."""
        name = _backup_name(state.last_seq, label)
        conn.execute(
            "INSERT INTO backups (session_id, name, document) VALUES (?, ?, ?::json)"
            " ON CONFLICT (session_id, name) DO UPDATE SET document = EXCLUDED.document",
            (state.session_id, name, _json(state.to_document())),
        )
        conn.execute(
            "DELETE FROM backups WHERE session_id = ? AND name NOT IN ("
            " SELECT name FROM backups WHERE session_id = ? ORDER BY name DESC LIMIT ?)",
            (state.session_id, state.session_id, BACKUPS_KEPT),
        )
        return name

    def _install(
        self, conn: Conn, document: dict[str, Any], *, backup: bool = True
    ) -> tuple[int, SessionState]:
        """Write a whole session (replacing any rows of that id) and back it up, as the file store does."""
        state = SessionState.from_document(document)
        session_id = state.session_id
        conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
        generation = int(conn.execute("SELECT nextval('session_generations')").fetchone()[0])
        summary = state.summary()
        conn.execute(
            "INSERT INTO sessions (session_id, generation, meta, adjustments, last_seq, summary, status,"
            " updated_at, created_by) VALUES (?, ?, ?::json, ?::json, ?, ?::json, ?, ?, ?)",
            (session_id, generation, *_state_columns(state, summary), summary["created_by"]),
        )
        conn.executemany(
            "INSERT INTO thoughts (session_id, seq, thought, words) VALUES (?, ?, ?::json, ?::tsvector)",
            [
                (session_id, int(thought["seq"]), _json(thought), thought_words(thought))
                for thought in state.thoughts
            ],
        )
        if backup:
            self._backup(conn, state)
        return generation, state

    # --- the store's operations (as ``SessionStore``) ---------------------------------------

    def load(self, session_id: str) -> SessionState | None:
        found = self.database.read(lambda conn: self._state(conn, session_id, lock=False))
        if found is None:
            self._forget(session_id)
            return None
        self._remember(*found)
        return found[1]

    def exists(self, session_id: str) -> bool:
        def work(conn: Conn) -> bool:
            return (
                conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
                is not None
            )

        return self.database.read(work, snapshot=False)

    def create(self, document: dict[str, Any], *, replace: bool = False) -> SessionState:
        """Store a new session (or replace one, after a backup of it); returns its state."""
        session_id = document["session_id"]

        def work(conn: Conn) -> tuple[int, SessionState]:
            try:
                existing = self._state(conn, session_id, lock=True)
            except SessionUnreadable:
                if not replace:
                    raise
                existing = None  # damaged rows are replaced; there is nothing readable to back up
            if existing is not None and not replace:
                raise SessionExists(session_id)
            if existing is not None:
                self._backup(conn, existing[1])
            return self._install(conn, document)

        generation, state = self.database.write(work)
        self._remember(generation, state)
        return state

    def append(
        self,
        session_id: str,
        plan: Plan,
        *,
        create: Callable[[], dict[str, Any]] | None = None,
        blocking: bool = True,
    ) -> Appended:
        """Add one thought planned by ``plan(state)`` with the session's row locked (see the module doc).

        ``blocking=False`` (the event loop asking) is always ``WouldBlock``: every append is a
        database round trip, which belongs in a worker thread (``sequential_thinking`` sends
        team-database calls there directly).
        """
        if not blocking:
            raise WouldBlock

        def work(conn: Conn) -> tuple[int, SessionState, Appended]:
            found = self._state(conn, session_id, lock=True)
            created = False
            if found is None:
                if create is None:
                    raise SessionNotFound(session_id)
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (session_id,))
                found = self._state(conn, session_id, lock=True)  # created by another process meanwhile?
                if found is None:
                    found, created = self._install(conn, create()), True
            generation, state = found
            thought, adjustment = plan(state)
            thought["seq"] = state.last_seq + 1
            state.apply(thought, adjustment)
            conn.execute(
                "INSERT INTO thoughts (session_id, seq, thought, words) VALUES (?, ?, ?::json, ?::tsvector)",
                (session_id, thought["seq"], _json(thought), thought_words(thought)),
            )
            self._save_meta(conn, state)
            state.compacted_seq = state.last_seq
            appended = Appended.of(state, thought, adjustment, created=created, notes=[])
            return generation, state, appended

        generation, state, appended = self.database.write(work)
        self._remember(generation, state)
        return appended

    def compact(self, session_id: str) -> SessionState:
        """Nothing to fold on PostgreSQL (every thought is already a row); the session as it is."""
        state = self.load(session_id)
        if state is None:
            raise SessionNotFound(session_id)
        return state

    def update_meta(self, session_id: str, change: Callable[[SessionState], Any]) -> tuple[SessionState, Any]:
        """Change a session's metadata (status, ...) and back it up, as the file store's compaction does."""

        def work(conn: Conn) -> tuple[int, SessionState, Any]:
            found = self._state(conn, session_id, lock=True)
            if found is None:
                raise SessionNotFound(session_id)
            generation, state = found
            result = change(state)
            state.meta["updated_at"] = utc_stamp()
            self._save_meta(conn, state)
            self._backup(conn, state)
            return generation, state, result

        generation, state, result = self.database.write(work)
        self._remember(generation, state)
        return state, result

    def delete(self, session_id: str) -> str | None:
        """Back the session up (the backup's name ends in ``-deleted``), then remove it; returns that name."""

        def work(conn: Conn) -> str | None:
            try:
                found = self._state(conn, session_id, lock=True)
            except SessionUnreadable:
                conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
                return None
            if found is None:
                raise SessionNotFound(session_id)
            name = self._backup(conn, found[1], DELETED_LABEL)
            conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            return name

        try:
            return self.database.write(work)
        finally:
            self._forget(session_id)

    def backups(self, session_id: str) -> list[str]:
        """The session's backup names, oldest first (as the file store sorts its files)."""

        def work(conn: Conn) -> list[str]:
            rows = conn.execute("SELECT name FROM backups WHERE session_id = ? ORDER BY name", (session_id,))
            return [str(name) for (name,) in rows.fetchall()]

        return self.database.read(work, snapshot=False)

    def backup_names(self, session_id: str) -> list[str]:
        """The session's backups as ``restore_session`` names them, newest first."""
        return list(reversed(self.backups(session_id)))

    def backup_id(self, session_id: str, kept: str) -> str | None:
        """What ``delete`` returns is already the backup's name."""
        return kept

    def deleted_sessions(self) -> list[tuple[str, dict[str, Any], str]]:
        """Deleted sessions a restore brings back: id, the document their newest delete kept and
        that backup's name (as the file store answers); a session created again is not deleted."""

        def work(conn: Conn) -> list[tuple[str, dict[str, Any], str]]:
            rows = conn.execute(
                "SELECT DISTINCT ON (b.session_id) b.session_id, b.name, b.document FROM backups AS b"
                " WHERE b.name LIKE ? AND NOT EXISTS"
                " (SELECT 1 FROM sessions AS s WHERE s.session_id = b.session_id)"
                " ORDER BY b.session_id, b.name DESC",
                (f"%{DELETED_LABEL}.json",),
            ).fetchall()
            found = []
            for session_id, name, document in rows:
                try:
                    checked = check_document(document)
                except (ValueError, KeyError, TypeError):
                    continue
                if checked["session_id"] == session_id:
                    found.append((str(session_id), checked, str(name)))
            return found

        return self.database.read(work, snapshot=False)

    def session_lock(self, session_id: str) -> contextlib.nullcontext[None]:
        """Nothing to hold: ``load`` hands out a copy no other thread changes."""
        return contextlib.nullcontext()

    def restore(
        self, session_id: str, backup_name: str | None = None, *, replace: bool = False
    ) -> tuple[SessionState, str, bool]:
        """Bring a session back from a backup: the named one, else the one its last delete took, else
        the newest readable one. Returns the state, the backup's name and whether a live session was
        replaced (the same rules as the file store)."""

        def work(conn: Conn) -> tuple[int, SessionState, str, bool]:
            rows = conn.execute(
                "SELECT name, document FROM backups WHERE session_id = ? ORDER BY name", (session_id,)
            ).fetchall()
            names = [str(name) for name, _ in reversed(rows)]
            if backup_name is not None:
                chosen = [row for row in rows if row[0] == backup_name]
                if not chosen:
                    raise BackupNotFound(session_id, names, backup_name)
            else:
                chosen = sorted(
                    rows,
                    key=lambda row: (str(row[0]).removesuffix(".json").endswith(DELETED_LABEL), row[0]),
                    reverse=True,
                )
            for row in chosen:
                try:
                    document = check_document(row[1])
                except (ValueError, KeyError, TypeError) as exc:
                    if backup_name is not None:
                        raise SessionUnreadable(
                            session_id, f"backup {row[0]} is damaged ({exc})", None
                        ) from None
                    continue
                if document["session_id"] == session_id:
                    break
            else:
                raise BackupNotFound(session_id, names, backup_name)
            try:
                existing = self._state(conn, session_id, lock=True)
            except SessionUnreadable:
                if not replace:
                    raise
                existing = None
            replaced = (
                conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
                is not None
            )
            if existing is not None and not replace:
                raise SessionExists(session_id)
            if existing is not None:
                self._backup(conn, existing[1])
            generation, state = self._install(conn, copy.deepcopy(document))
            return generation, state, str(row[0]), replaced

        generation, state, name, replaced = self.database.write(work)
        self._remember(generation, state)
        return state, name, replaced

    # --- records (``hostd db copy`` into the team database: ``records``) -----------------------

    def find_record(self, conn: Conn, kind: str, key: str) -> dict[str, Any] | None:
        """The session's document, or the backup's, as this database holds it (None: absent)."""
        if kind == "sessions":
            try:
                found = self._state(conn, key, lock=True)
            except SessionUnreadable as exc:
                return {"unreadable": exc.problem}  # damaged rows differ from any session
            return None if found is None else found[1].to_document()
        session_id, name = json.loads(key)
        row = conn.execute(
            "SELECT document FROM backups WHERE session_id = ? AND name = ?", (session_id, name)
        ).fetchone()
        return None if row is None else dict(row[0])

    def import_record(self, conn: Conn, kind: str, key: str, document: dict[str, Any]) -> None:
        """Write a session (with its thoughts, no backup of it: its backups come as records) or a backup."""
        if kind == "sessions":
            self._install(conn, copy.deepcopy(document), backup=False)
            self._forget(key)
            return
        session_id, name = json.loads(key)
        conn.execute(
            "INSERT INTO backups (session_id, name, document) VALUES (?, ?, ?::json)",
            (session_id, name, _json(document)),
        )

    def list_summaries(self, listing: SessionListing) -> SummaryPage:
        """Sessions newest first with how many match, from the summary column (no thought is read);
        ``after`` is the (updated_at, session_id) the previous page ended at."""
        limit, after = listing.limit, listing.after
        filters = (("status", listing.status), ("created_by", listing.created_by))
        chosen = [(column, value) for column, value in filters if value is not None]
        where = ("WHERE " + " AND ".join(f"{column} = ?" for column, _ in chosen)) if chosen else ""
        parameters: list[Any] = [value for _, value in chosen]
        page_where, page_parameters = where, list(parameters)
        if after is not None:
            page_where = (where + " AND " if where else "WHERE ") + "(updated_at, session_id) < (?, ?)"
            page_parameters += list(after)

        def work(conn: Conn) -> SummaryPage:
            rows = conn.execute(
                f"SELECT summary FROM sessions {page_where} "
                "ORDER BY updated_at DESC, session_id DESC LIMIT ?",
                [*page_parameters, limit + 1],
            ).fetchall()
            summaries = [dict(summary) for (summary,) in rows]
            total = conn.execute(f"SELECT count(*) FROM sessions {where}", parameters).fetchone()
            return SummaryPage(
                rows=summaries[:limit], total=int(total[0]) if total else 0, more=len(summaries) > limit
            )

        return self.database.read(work)

    def search(self, query: Query, session_id: str | None, limit: int) -> tuple[list[Hit], bool, bool]:
        """Hits best first, whether more were found than ``limit``, and whether every term was required
        (as ``SearchIndex.search``): all terms first, any term when that finds nothing."""
        queries = search_queries(query)
        if queries is None:
            return [], False, True
        every, anyone = queries

        def matches(conn: Conn, expression: str) -> list[tuple[Any, ...]]:
            where = "t.words @@ q.query" + (" AND t.session_id = ?" if session_id else "")
            parameters: list[Any] = [expression, *([session_id] if session_id else []), limit + 1]
            return list(
                conn.execute(
                    "SELECT t.session_id, s.meta->>'name' AS name, t.seq, t.thought,"
                    " ts_rank(t.words, q.query, 1) AS score"
                    " FROM thoughts t JOIN sessions s USING (session_id), CAST(? AS tsquery) AS q(query)"
                    f" WHERE {where} ORDER BY score DESC, t.session_id, t.seq LIMIT ?",
                    parameters,
                )
            )

        def work(conn: Conn) -> tuple[list[tuple[Any, ...]], bool]:
            rows = matches(conn, every)
            if not rows and len(query.terms) > 1:
                return matches(conn, anyone), False
            return rows, True

        rows, strict = self.database.read(work)
        hits = []
        for found_in, name, seq, thought, score in rows[:limit]:
            hits.append(
                Hit(
                    session_id=str(found_in),
                    session_name=str(name or found_in),
                    sequence=int(seq),
                    thought_number=int(thought["thought_number"]),
                    kind=str(thought.get("type") or "regular"),
                    branch_id=thought.get("branch_id"),
                    stage=thought.get("stage"),
                    tags=[str(tag) for tag in thought.get("tags") or []],
                    content=str(thought["content"]),
                    score=float(score),
                )
            )
        return hits, len(rows) > limit, strict

    def default_session(self, member: str) -> str | None:
        """The member's default session, else the team's one of before members were recorded."""

        def work(conn: Conn) -> str | None:
            row = conn.execute(
                "SELECT COALESCE((SELECT session_id FROM member_default_session WHERE member = ?),"
                " (SELECT session_id FROM default_session))",
                (member,),
            ).fetchone()
            return None if row is None or row[0] is None else str(row[0])

        return self.database.read(work, snapshot=False)

    def set_default_session(self, member: str, session_id: str) -> None:
        def work(conn: Conn) -> None:
            conn.execute(
                "INSERT INTO member_default_session (member, session_id, since) VALUES (?, ?, ?)"
                " ON CONFLICT (member) DO UPDATE"
                " SET session_id = EXCLUDED.session_id, since = EXCLUDED.since",
                (member, session_id, utc_stamp()),
            )

        self.database.write(work)

    def close(self) -> None:
        with self._guard:
            self._cache.clear()
        self.database.close()
