"""The tables, on each database: SQLite's migrations and PostgreSQL's, which mirror them.

Every operation a busy list repeats -- creating a task, changing a status, finding the next
task -- is an index seek, so it costs the same with 10,000 tasks as with 100:

- ``tasks(status, priority, seq)`` serves the "next pending task" walk and status-filtered lists;
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

import sqlite3

from hostd_db import SqliteMigration

from hostd_tasks.store.search import indexed_text

# --- SQLite --------------------------------------------------------------------------------------

SQLITE_MIGRATIONS: list[SqliteMigration] = [
    """
    CREATE TABLE tasks (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL UNIQUE,
        title TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL
            CHECK (status IN ('pending', 'in_progress', 'completed', 'failed', 'blocked')),
        priority INTEGER NOT NULL CHECK (priority IN (0, 1, 2)),
        linked_session_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX tasks_by_status ON tasks (status, priority, seq);
    CREATE INDEX tasks_by_urgency ON tasks (priority, seq);
    CREATE INDEX tasks_by_session ON tasks (linked_session_id) WHERE linked_session_id IS NOT NULL;
    CREATE TABLE task_dependencies (
        task_id TEXT NOT NULL REFERENCES tasks (task_id),
        depends_on TEXT NOT NULL REFERENCES tasks (task_id),
        position INTEGER NOT NULL,
        PRIMARY KEY (task_id, depends_on)
    ) WITHOUT ROWID;
    """,
]


def _add_subtasks_labels_notes_history_and_search(conn: sqlite3.Connection) -> None:
    """Version 2: subtasks, acceptance, labels, notes, history, deletion tombstones, text search.

    A callable, not SQL, because the search index of the tasks already stored is filled with
    text rewritten in Python (CJK bigrams, see ``search``); every existing task also gets its
    'created' history entry, so each task's history starts where the task did.
    """
    for statement in (
        "ALTER TABLE tasks ADD COLUMN parent_id TEXT REFERENCES tasks (task_id)",
        "ALTER TABLE tasks ADD COLUMN acceptance TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX tasks_by_parent ON tasks (parent_id, status)",
        "CREATE INDEX task_dependencies_by_target ON task_dependencies (depends_on, task_id)",
        "CREATE TABLE task_labels (task_id TEXT NOT NULL REFERENCES tasks (task_id), label TEXT NOT NULL, "
        "PRIMARY KEY (task_id, label)) WITHOUT ROWID",
        "CREATE INDEX task_labels_by_label ON task_labels (label, task_id)",
        "CREATE TABLE task_notes (seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL REFERENCES tasks (task_id), "
        "text TEXT NOT NULL, at TEXT NOT NULL)",
        "CREATE INDEX task_notes_by_task ON task_notes (task_id, seq)",
        # No foreign key: a deleted task's history outlives it.
        "CREATE TABLE task_history (seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL, event TEXT NOT NULL, "
        "at TEXT NOT NULL, actor TEXT, details TEXT NOT NULL DEFAULT '{}')",
        "CREATE INDEX task_history_by_task ON task_history (task_id, seq)",
        "CREATE TABLE deleted_tasks (task_id TEXT PRIMARY KEY, record TEXT NOT NULL, "
        "deleted_at TEXT NOT NULL) WITHOUT ROWID",
        "CREATE VIRTUAL TABLE task_search USING fts5 (body, tokenize = 'unicode61 remove_diacritics 2', "
        "prefix = '1 2')",
        "INSERT INTO task_history (task_id, event, at, details) "
        """SELECT task_id, 'created', created_at, '{"recorded_at_upgrade": true}' FROM tasks ORDER BY seq""",
    ):
        conn.execute(statement)
    conn.executemany(
        "INSERT INTO task_search (rowid, body) VALUES (?, ?)",
        (
            (seq, indexed_text(title, description))
            for seq, title, description in conn.execute(
                "SELECT seq, title, description FROM tasks"
            ).fetchall()
        ),
    )


# Each migration runs once per database, in order, counted in PRAGMA user_version: add new ones at
# the end and never edit one, since existing tasks.db files have already run it.
SQLITE_MIGRATIONS.append(_add_subtasks_labels_notes_history_and_search)
# Version 3: team members. Who created a task and who claimed it; tasks from before stay null
# (unknown), as do their history entries' ``actor``. Indexed in list order for list_tasks' filters.
SQLITE_MIGRATIONS.append(
    """
    ALTER TABLE tasks ADD COLUMN created_by TEXT;
    ALTER TABLE tasks ADD COLUMN claimed_by TEXT;
    CREATE INDEX tasks_by_creator ON tasks (created_by, priority, seq);
    CREATE INDEX tasks_by_claimer ON tasks (claimed_by, priority, seq);
    """
)

# --- PostgreSQL (the team database) ----------------------------------------------------------

#: Each runs once per database, in order (recorded by hostd-db): add new ones at the end.
PG_MIGRATIONS: list[str] = [
    """
    CREATE TABLE tasks (
        seq bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        task_id text COLLATE "C" NOT NULL UNIQUE,
        title text NOT NULL,
        description text NOT NULL DEFAULT '',
        status text NOT NULL
            CHECK (status IN ('pending', 'in_progress', 'completed', 'failed', 'blocked')),
        priority smallint NOT NULL CHECK (priority IN (0, 1, 2)),
        linked_session_id text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        parent_id text COLLATE "C" REFERENCES tasks (task_id),
        acceptance text NOT NULL DEFAULT '',
        search tsvector NOT NULL DEFAULT ''::tsvector
    );
    CREATE INDEX tasks_by_status ON tasks (status, priority, seq);
    CREATE INDEX tasks_by_urgency ON tasks (priority, seq);
    CREATE INDEX tasks_by_session ON tasks (linked_session_id) WHERE linked_session_id IS NOT NULL;
    CREATE INDEX tasks_by_parent ON tasks (parent_id, status);
    CREATE INDEX tasks_search ON tasks USING gin (search);
    CREATE TABLE task_dependencies (
        task_id text COLLATE "C" NOT NULL REFERENCES tasks (task_id),
        depends_on text COLLATE "C" NOT NULL REFERENCES tasks (task_id),
        position integer NOT NULL,
        PRIMARY KEY (task_id, depends_on)
    );
    CREATE INDEX task_dependencies_by_target ON task_dependencies (depends_on, task_id);
    CREATE TABLE task_labels (
        task_id text COLLATE "C" NOT NULL REFERENCES tasks (task_id),
        label text COLLATE "C" NOT NULL,
        PRIMARY KEY (task_id, label)
    );
    CREATE INDEX task_labels_by_label ON task_labels (label, task_id);
    CREATE TABLE task_notes (
        seq bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        task_id text COLLATE "C" NOT NULL REFERENCES tasks (task_id),
        text text NOT NULL,
        at timestamptz NOT NULL
    );
    CREATE INDEX task_notes_by_task ON task_notes (task_id, seq);
    -- No foreign key: a deleted task's history outlives it.
    CREATE TABLE task_history (
        seq bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        task_id text COLLATE "C" NOT NULL,
        event text NOT NULL,
        at timestamptz NOT NULL,
        actor text,
        details text NOT NULL DEFAULT '{}'
    );
    CREATE INDEX task_history_by_task ON task_history (task_id, seq);
    CREATE TABLE deleted_tasks (
        task_id text COLLATE "C" PRIMARY KEY,
        record text NOT NULL,
        deleted_at timestamptz NOT NULL
    );
    """,
    # Team members: who created a task and who claimed it (null for tasks from before: unknown),
    # indexed in list order for list_tasks' filters. SQLite's version 3 is the same.
    """
    ALTER TABLE tasks ADD COLUMN created_by text COLLATE "C", ADD COLUMN claimed_by text COLLATE "C";
    CREATE INDEX tasks_by_creator ON tasks (created_by, priority, seq);
    CREATE INDEX tasks_by_claimer ON tasks (claimed_by, priority, seq);
    """,
]
