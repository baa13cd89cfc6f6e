"""The tables, written once for both databases (``hostd_db.Schema``), and their migrations.

Every operation a busy list repeats -- creating a task, changing a status, finding the next
task -- is an index seek, so it costs the same with 10,000 tasks as with 100:

- ``tasks(status, priority, seq, task_id)`` serves the "next pending task" walk and status-filtered lists;
- ``tasks(priority, seq)`` serves unfiltered lists in urgency order;
- the primary key of ``task_dependencies`` (task_id, depends_on) lets the dependency check be an
  indexed ``NOT EXISTS`` per candidate, never a load of the whole list;
- ``tasks(parent_id, status)`` finds a parent's open subtasks (get_next_task hands out leaf work)
  and ``task_dependencies(depends_on)`` a task's dependents (delete, get_task, cycle checks);
- ``tasks(created_by, priority, seq)`` and ``tasks(claimed_by, priority, seq)`` serve list_tasks'
  member filters in list order;
- labels, notes and history sit in their own tables keyed by task; the search index (SQLite:
  the FTS5 table ``task_search``, rowid = seq; PostgreSQL: a ``tsvector`` column with a GIN
  index) holds each task's text, kept in step by every write (see ``search``).

``seq`` is the rowid: insertion order under the write lock, hence "oldest first". A deleted task
leaves ``tasks`` (so no list, count or index walk pays for it); its last record stays in
``deleted_tasks`` and its history in ``task_history``, so get_task can still explain it and its id
is never handed out again.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from hostd_db import (
    AddColumn,
    Column,
    ColumnType,
    Connection,
    Dialect,
    Index,
    Only,
    Operation,
    Schema,
    Table,
    utc_now,
    utc_stamp,
)

from hostd_tasks.rules import LEASE_SECONDS_DEFAULT
from hostd_tasks.search import indexed_text
from hostd_tasks.transfer import stored_origin

TEXT, KEY, MOMENT = ColumnType.TEXT, ColumnType.KEY, ColumnType.MOMENT
STATUS_CHECK = "status IN ('pending', 'in_progress', 'completed', 'failed', 'blocked')"
TASK = "tasks (task_id)"

_VERSION_1: list[Operation] = [
    Table(
        "tasks",
        (
            Column("seq", ColumnType.SERIAL),
            Column("task_id", KEY, not_null=True, unique=True),
            Column("title", TEXT, not_null=True),
            Column("description", TEXT, not_null=True, default="''"),
            Column("status", TEXT, not_null=True, check=STATUS_CHECK),
            Column("priority", ColumnType.SMALLINT, not_null=True, check="priority IN (0, 1, 2)"),
            Column("linked_session_id", TEXT),
            Column("created_at", MOMENT, not_null=True),
            Column("updated_at", MOMENT, not_null=True),
        ),
    ),
    Index("tasks_by_status", "tasks", "status, priority, seq"),
    Index("tasks_by_urgency", "tasks", "priority, seq"),
    Index("tasks_by_session", "tasks", "linked_session_id", where="linked_session_id IS NOT NULL"),
    Table(
        "task_dependencies",
        (
            Column("task_id", KEY, not_null=True, references=TASK),
            Column("depends_on", KEY, not_null=True, references=TASK),
            Column("position", ColumnType.INTEGER, not_null=True),
        ),
        primary_key=("task_id", "depends_on"),
        without_rowid=True,
    ),
]


def _history_of_tasks_already_stored(conn: Connection, dialect: Dialect) -> None:
    """Every task stored before version 2 gets its 'created' history entry, so each task's history
    starts where the task did."""
    conn.execute(
        "INSERT INTO task_history (task_id, event, at, details) "
        """SELECT task_id, 'created', created_at, '{"recorded_at_upgrade": true}' FROM tasks ORDER BY seq"""
    )


def _index_tasks_already_stored(conn: Connection, dialect: Dialect) -> None:
    """The FTS5 index of the tasks already stored, filled with text rewritten in Python (CJK
    bigrams, see ``search``)."""
    conn.executemany(
        "INSERT INTO task_search (rowid, body) VALUES (?, ?)",
        [
            (seq, indexed_text(title, description))
            for seq, title, description in conn.execute(
                "SELECT seq, title, description FROM tasks"
            ).fetchall()
        ],
    )


# Subtasks, acceptance, labels, notes, history, deletion tombstones, text search.
_VERSION_2: list[Operation] = [
    AddColumn("tasks", Column("parent_id", KEY, references=TASK)),
    AddColumn("tasks", Column("acceptance", TEXT, not_null=True, default="''")),
    Index("tasks_by_parent", "tasks", "parent_id, status"),
    Index("task_dependencies_by_target", "task_dependencies", "depends_on, task_id"),
    Table(
        "task_labels",
        (Column("task_id", KEY, not_null=True, references=TASK), Column("label", KEY, not_null=True)),
        primary_key=("task_id", "label"),
        without_rowid=True,
    ),
    Index("task_labels_by_label", "task_labels", "label, task_id"),
    Table(
        "task_notes",
        (
            Column("seq", ColumnType.SERIAL),
            Column("task_id", KEY, not_null=True, references=TASK),
            Column("text", TEXT, not_null=True),
            Column("at", MOMENT, not_null=True),
        ),
    ),
    Index("task_notes_by_task", "task_notes", "task_id, seq"),
    # No foreign key: a deleted task's history outlives it.
    Table(
        "task_history",
        (
            Column("seq", ColumnType.SERIAL),
            Column("task_id", KEY, not_null=True),
            Column("event", TEXT, not_null=True),
            Column("at", MOMENT, not_null=True),
            Column("actor", TEXT),
            Column("details", TEXT, not_null=True, default="'{}'"),
        ),
    ),
    Index("task_history_by_task", "task_history", "task_id, seq"),
    Table(
        "deleted_tasks",
        (
            Column("task_id", KEY, primary_key=True),
            Column("record", TEXT, not_null=True),
            Column("deleted_at", MOMENT, not_null=True),
        ),
        without_rowid=True,
    ),
    # The search index: SQLite's FTS5 table (rowid = seq), PostgreSQL's tsvector column with a GIN index.
    Only(
        "sqlite",
        "CREATE VIRTUAL TABLE task_search USING fts5 (body, tokenize = 'unicode61 remove_diacritics 2', "
        "prefix = '1 2')",
        _index_tasks_already_stored,
    ),
    Only(
        "postgres",
        "ALTER TABLE tasks ADD COLUMN search tsvector NOT NULL DEFAULT ''::tsvector",
        "CREATE INDEX tasks_search ON tasks USING gin (search)",
    ),
    _history_of_tasks_already_stored,
]

# Team members: who created a task and who claimed it; tasks from before stay null (unknown), as do
# their history entries' ``actor``. Indexed in list order for list_tasks' filters.
_VERSION_3: list[Operation] = [
    AddColumn("tasks", Column("created_by", KEY)),
    AddColumn("tasks", Column("claimed_by", KEY)),
    Index("tasks_by_creator", "tasks", "created_by, priority, seq"),
    Index("tasks_by_claimer", "tasks", "claimed_by, priority, seq"),
]


def _leases_of_tasks_already_claimed(conn: Connection, dialect: Dialect) -> None:
    """Tasks in_progress before leases get a lease of the default length from the upgrade (by the
    database's clock), so work an agent dropped before the upgrade comes back too; ``claim_count``
    counts the claims the history records (``claimed``, or a status move to in_progress)."""
    if dialect.is_postgres:
        conn.execute(
            "UPDATE tasks SET lease_expires_at = now() + make_interval(secs => ?), lease_seconds = ? "
            "WHERE status = 'in_progress'",
            (LEASE_SECONDS_DEFAULT, LEASE_SECONDS_DEFAULT),
        )
    else:
        conn.execute(
            "UPDATE tasks SET lease_expires_at = ?, lease_seconds = ? WHERE status = 'in_progress'",
            (utc_stamp(utc_now() + timedelta(seconds=LEASE_SECONDS_DEFAULT)), LEASE_SECONDS_DEFAULT),
        )
    claims: dict[str, int] = {}
    for task_id, event, details in conn.execute(
        "SELECT task_id, event, details FROM task_history WHERE event IN ('claimed', 'status')"
    ).fetchall():
        if event == "claimed" or json.loads(str(details)).get("to") == "in_progress":
            claims[str(task_id)] = claims.get(str(task_id), 0) + 1
    conn.executemany(
        "UPDATE tasks SET claim_count = ? WHERE task_id = ?", [(n, t) for t, n in claims.items()]
    )


# Leases: a claim lapses at ``lease_expires_at`` (set exactly while a task is in_progress) unless
# renewed by ``lease_seconds`` more; ``claim_count`` and ``expired_claims`` count claims and the
# ones that lapsed; ``lease_lost_by`` is the member whose lease lapsed last (their late updates
# are refused once someone else holds the task). Indexed on the expiry, so finding the leases that
# have lapsed is a seek, never a scan of the work in progress.
_VERSION_4: list[Operation] = [
    AddColumn("tasks", Column("lease_expires_at", MOMENT)),
    AddColumn("tasks", Column("lease_seconds", ColumnType.INTEGER)),
    AddColumn("tasks", Column("claim_count", ColumnType.INTEGER, not_null=True, default="0")),
    AddColumn("tasks", Column("expired_claims", ColumnType.INTEGER, not_null=True, default="0")),
    AddColumn("tasks", Column("lease_lost_by", KEY)),
    Index("tasks_by_lease", "tasks", "lease_expires_at", where="lease_expires_at IS NOT NULL"),
    _leases_of_tasks_already_claimed,
]

# The status index carries the task id, so a walk of one status that checks labels, dependencies
# or subtasks by task id reads the index alone, never the task rows (the board's label filter read
# every pending task's row: 30-50 ms at 10,000 tasks on SQLite).
_VERSION_5: list[Operation] = [
    *(Only(dialect, "DROP INDEX tasks_by_status") for dialect in ("sqlite", "postgres")),
    Index("tasks_by_status", "tasks", "status, priority, seq, task_id"),
]

# ``hostd db copy`` of a member's list whose task id the team database already holds for another
# task copies it under a new id: the id it got, per (local id, creation time), so the next copy
# of the same list finds it there and changes nothing. Unused by a list in its own file.
_VERSION_6: list[Operation] = [
    Table(
        "copied_tasks",
        (
            Column("local_id", KEY, not_null=True),
            Column("created_at", TEXT, not_null=True),  # the local task's, as the copy spells it
            Column("task_id", KEY, not_null=True, unique=True),
        ),
        primary_key=("local_id", "created_at"),
        without_rowid=True,
    ),
]

# Imported tasks remember where they came from (``import_tasks``): the origin key an export gives each
# task (its first store's id and creation time), so importing the same document again finds them
# instead of creating them twice. One seek on the primary key per task of a document.
_VERSION_7: list[Operation] = [
    Table(
        "task_origins",
        (Column("origin", KEY, primary_key=True), Column("task_id", KEY, not_null=True)),
        without_rowid=True,
    ),
    Index("task_origins_by_task", "task_origins", "task_id"),
]

#: Columns whose times SQLite keeps as text (PostgreSQL's are ``timestamptz``, which has no spelling).
_STAMP_COLUMNS = (
    ("tasks", "created_at"),
    ("tasks", "updated_at"),
    ("tasks", "lease_expires_at"),
    ("task_notes", "at"),
    ("task_history", "at"),
    ("deleted_tasks", "deleted_at"),
)
#: A deleted task's stored record: its times, and each note's.
_RECORD_STAMPS = ("created_at", "updated_at", "lease_expires_at")


def _old_stamp(value: object) -> str | None:
    """``value`` in ``hostd_db.utc_stamp``'s spelling when it is a time spelled ``+00:00``, else None."""
    if not isinstance(value, str) or not value.endswith("+00:00"):
        return None
    try:
        return utc_stamp(datetime.fromisoformat(value))
    except ValueError:
        return None


def _record_in_one_spelling(text: str) -> str | None:
    """A deleted task's record (JSON) with its times rewritten; None when none needed it."""
    try:
        record = json.loads(text)
    except ValueError:  # a damaged record is reported when it is read, as before
        return None
    if not isinstance(record, dict):
        return None
    changed = False
    for holder, key in [
        *((record, name) for name in _RECORD_STAMPS),
        *((note, "at") for note in record.get("notes") or [] if isinstance(note, dict)),
    ]:
        stamp = _old_stamp(holder.get(key))
        if stamp is not None:
            holder[key] = stamp
            changed = True
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) if changed else None


def _one_time_spelling(conn: Connection, dialect: Dialect) -> None:
    """Every stored time in ``hostd_db.utc_stamp``'s spelling (``...Z``): the store compares and
    orders times as text on SQLite (``lease_expires_at < ?``), so the old ``+00:00`` ones are
    rewritten, not mixed. Text columns holding a time are text on both databases: the creation
    times ``hostd db copy`` keyed the ids it gave by, the native origins of imported tasks (and the
    history entries naming them) and the times in deleted tasks' records."""
    if not dialect.is_postgres:
        for table, column in _STAMP_COLUMNS:
            conn.execute(
                f"UPDATE {table} SET {column} = substr({column}, 1, length({column}) - 6) || 'Z' "
                f"WHERE {column} LIKE '%+00:00'"
            )
    # Primary keys: a row whose rewritten key another row holds already is the same entry twice.
    for local_id, created in conn.execute(
        "SELECT local_id, created_at FROM copied_tasks WHERE created_at LIKE '%+00:00'"
    ).fetchall():
        stamp = _old_stamp(created)
        if stamp is None:
            continue
        if conn.execute(
            "SELECT 1 FROM copied_tasks WHERE local_id = ? AND created_at = ?", (local_id, stamp)
        ).fetchone():
            conn.execute(
                "DELETE FROM copied_tasks WHERE local_id = ? AND created_at = ?", (local_id, created)
            )
        else:
            conn.execute(
                "UPDATE copied_tasks SET created_at = ? WHERE local_id = ? AND created_at = ?",
                (stamp, local_id, created),
            )
    for (origin,) in conn.execute("SELECT origin FROM task_origins WHERE origin LIKE '%+00:00'").fetchall():
        new = stored_origin(str(origin))
        if new == origin:
            continue
        if conn.execute("SELECT 1 FROM task_origins WHERE origin = ?", (new,)).fetchone() is not None:
            conn.execute("DELETE FROM task_origins WHERE origin = ?", (origin,))
        else:
            conn.execute("UPDATE task_origins SET origin = ? WHERE origin = ?", (new, origin))
    for seq, details in conn.execute(
        "SELECT seq, details FROM task_history WHERE event = 'imported' AND details LIKE '%+00:00%'"
    ).fetchall():
        entry = json.loads(str(details))
        if isinstance(entry, dict) and isinstance(entry.get("origin"), str):
            entry["origin"] = stored_origin(entry["origin"])
            rewritten = json.dumps(entry, ensure_ascii=False)
            conn.execute("UPDATE task_history SET details = ? WHERE seq = ?", (rewritten, seq))
    for task_id, record in conn.execute(
        "SELECT task_id, record FROM deleted_tasks WHERE record LIKE '%+00:00%'"
    ).fetchall():
        record_now = _record_in_one_spelling(str(record))
        if record_now is not None:
            conn.execute("UPDATE deleted_tasks SET record = ? WHERE task_id = ?", (record_now, task_id))


# One spelling of a time in every store and answer (``hostd_db.utc_stamp``'s ``Z``, issue 37): the
# times stored before, spelled ``+00:00``, are rewritten (``_one_time_spelling``).
_VERSION_8: list[Operation] = [_one_time_spelling]

#: What only one database holds: SQLite's FTS5 table (and the tables FTS5 keeps it in), PostgreSQL's
#: ``tsvector`` column. Everything else is the same on both (``test_tasks_schema``).
SQLITE_ONLY_TABLES = "task_search"
POSTGRES_ONLY_COLUMNS = {"tasks": ["search"]}


def schema(database_file: str) -> Schema:
    """The tasks' tables; without a team database they live in ``database_file`` in the data folder.

    Each migration runs once per database, in order: add new ones at the end and never edit one,
    since existing tasks.db files and team databases have already run it.
    """
    return Schema(
        migrations=[
            _VERSION_1,
            _VERSION_2,
            _VERSION_3,
            _VERSION_4,
            _VERSION_5,
            _VERSION_6,
            _VERSION_7,
            _VERSION_8,
        ],
        sqlite_file=database_file,
        # Releases before the shared schema numbered the team database's migrations on their own:
        # their 1 is version 2 here (everything up to search), their 2 is version 3 (members).
        postgres_versions={1: 2, 2: 3},
    )
