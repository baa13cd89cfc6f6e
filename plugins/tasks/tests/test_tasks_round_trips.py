"""The store's reads on both databases: what a page or a task's answer holds, and (PostgreSQL) how
many statements it costs, counted rather than timed. A list page, a task, a task's details, the
statistics and the activity feed are one statement each on PostgreSQL (no transaction around
it); the answers are the same as SQLite's, a lapsed lease included: whichever read comes first
after the lapse shows the task pending."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostd_db import Database, TeamDatabaseSettings, open_database
from hostd_errors import CodedError
from hostd_tasks.models import TaskRecord
from hostd_tasks.store import TaskStore
from hostd_tasks.store.results import TaskEdit
from hostd_tasks.store.schema import schema


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskStore]:
    database: Database
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        team = TeamDatabaseSettings(url)
        database = open_database(schema("tasks.db"), "tasks", data_dir=tmp_path, team=team)
    else:
        database = open_database(schema("tasks.db"), "tasks", data_dir=tmp_path, team=None)
    try:
        yield TaskStore(database)
    finally:
        database.close()


def _create(store: TaskStore, task_id: str, **fields: Any) -> TaskRecord:
    return store.create(
        title=fields.pop("title", task_id),
        description="",
        priority=fields.pop("priority", "P1"),
        task_id=task_id,
        depends_on=fields.pop("depends_on", []),
        **fields,
    )


def _list(store: TaskStore, **filters: Any) -> Any:
    arguments: dict[str, Any] = {"status": None, "priority": None, "limit": 50, "after": None}
    return store.list_page(**(arguments | filters))


ODD_NOTES = ["nul\x00inside", "escape \ue000 and \ue000e0 literally", "中文 😀", ""]


def test_notes_and_labels_come_back_exactly_in_lists_and_details(store: TaskStore) -> None:
    _create(store, "a", labels=["zeta", "alpha", "中文"])
    for note in ODD_NOTES:
        store.update("a", TaskEdit(append_note=note or " "))
    _create(store, "b", depends_on=["a"])
    _create(store, "c", parent_id="a")
    listed = _list(store).tasks
    got = store.get("a")
    details = store.details("a")
    by_id = {task.task_id: task for task in listed}
    for record in (by_id["a"], got, details.task):
        assert record.labels == ["alpha", "zeta", "中文"]
        assert [note.text for note in record.notes] == [note or " " for note in ODD_NOTES]
        assert record.subtasks is not None
        assert record.subtasks.total == 1
    assert by_id["b"].depends_on == ["a"]
    assert by_id["b"].labels == []
    assert by_id["b"].notes == []
    assert [t.task_id for t in details.dependents] == ["b"]
    assert [t.task_id for t in details.subtasks] == ["c"]
    assert [(t.task_id, t.status) for t in store.details("b").depends_on] == [("a", "pending")]
    assert [entry.event for entry in details.history][:1] == ["created"]
    assert details.history_total == len(details.history) == 1 + len(ODD_NOTES)
    assert [entry.details for entry in details.history[1:3]] == [
        {"append_note": {"text": text}} for text in ODD_NOTES[:2]
    ]


def test_pages_totals_and_a_missing_parent_are_the_same_on_both(store: TaskStore) -> None:
    for n in range(5):
        _create(store, f"t{n}", priority="P0" if n == 3 else "P2")
    first = _list(store, limit=2)
    assert ([t.task_id for t in first.tasks], first.total) == (["t3", "t0"], 5)
    assert first.next_after is not None
    rest = _list(store, limit=10, after=first.next_after)
    assert ([t.task_id for t in rest.tasks], rest.total, rest.next_after) == (["t1", "t2", "t4"], 5, None)
    past_the_end = _list(store, limit=10, after=(2, 10**9))
    assert (past_the_end.tasks, past_the_end.total, past_the_end.next_after) == ([], 5, None)
    nothing = _list(store, status="failed")
    assert (nothing.tasks, nothing.total) == ([], 0)
    assert _list(store, parent_id="t0").total == 0
    store.delete("t4", drop_dependencies=False, even_if_in_progress=False)
    for parent in ("t4", "never"):
        with pytest.raises(CodedError) as refused:
            _list(store, parent_id=parent)
        assert refused.value.code == "NOT_FOUND"
        assert ("deleted_at" in refused.value.details) == (parent == "t4")
    with pytest.raises(CodedError) as missing:
        store.get("t4")
    assert missing.value.code == "NOT_FOUND"
    assert store.details("t4").deleted_at is not None


READS: dict[str, Callable[[TaskStore], TaskRecord]] = {
    "list": lambda store: next(t for t in _list(store).tasks if t.task_id == "w"),
    "get": lambda store: store.get("w"),
    "details": lambda store: store.details("w").task,
}


@pytest.mark.parametrize("read", READS)
def test_the_first_read_after_a_lease_lapsed_shows_the_task_pending(store: TaskStore, read: str) -> None:
    _create(store, "w")
    claimed = store.next_task(claim=True, by="alice", lease_seconds=600).task
    assert claimed is not None
    assert claimed.status == "in_progress"
    past = "2000-01-01T00:00:00.000000Z"
    store.database.write(lambda conn: conn.execute("UPDATE tasks SET lease_expires_at = ?", (past,)))
    shown = READS[read](store)
    assert (shown.status, shown.claimed_by, shown.lease_expires_at) == ("pending", None, None)
    assert (shown.claim_count, shown.expired_claims) == (1, 1)
    assert store.details("w").history[-1].event == "lease_expired"


def test_stats_and_activity_after_a_lapse_see_the_task_pending(store: TaskStore) -> None:
    _create(store, "old", priority="P2")
    _create(store, "w", priority="P0")
    _create(store, "broken", priority="P1")
    _create(store, "stuck", depends_on=["broken"])
    claimed = store.next_task(claim=True, by="alice", lease_seconds=600).task
    assert claimed is not None
    assert claimed.task_id == "w"
    store.set_status("broken", "in_progress", by="bob")
    store.set_status("broken", "failed", by="bob")
    past = "2000-01-01T00:00:00.000000Z"
    store.database.write(
        lambda conn: conn.execute("UPDATE tasks SET lease_expires_at = ? WHERE task_id = 'w'", (past,))
    )
    activity = store.activity(limit=2)
    stats = store.stats()
    assert [(entry.task_id, entry.event) for entry in activity] == [
        ("w", "lease_expired"),
        ("broken", "status"),
    ]
    assert (stats.total, stats.by_status["pending"], stats.by_status["in_progress"]) == (4, 3, 0)
    assert (stats.by_status["failed"], stats.by_priority["P0"], stats.by_priority["P1"]) == (1, 1, 2)
    assert (stats.waiting_on_dependencies, stats.stuck_behind_failed) == (1, 1)
    assert stats.oldest_pending_task_id == "old"  # the oldest, whatever its priority
    assert [entry.task_id for entry in store.activity(limit=5, by="bob")] == ["broken", "broken"]
    assert store.activity(limit=5, by="nobody") == []


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement and transaction psycopg sends from here on (BEGIN counted as ``BEGIN``)."""
    import psycopg

    sent: list[str] = []
    real_execute, real_transaction = psycopg.Cursor.execute, psycopg.Connection.transaction

    def execute(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return real_execute(cursor, query, *args, **kwargs)

    def transaction(connection: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append("BEGIN")
        return real_transaction(connection, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", execute)
    monkeypatch.setattr(psycopg.Connection, "transaction", transaction)
    return sent


def test_on_postgresql_a_page_a_task_and_its_details_are_one_statement_each(
    postgres_url: str, statements: list[str]
) -> None:
    team = TeamDatabaseSettings(postgres_url)
    database = open_database(schema("tasks.db"), "tasks", data_dir=Path("."), team=team)
    try:
        store = TaskStore(database)
        _create(store, "a", labels=["x"])
        store.update("a", TaskEdit(append_note="n"))
        _create(store, "b", depends_on=["a"], labels=["x"])
        _create(store, "c", parent_id="a")
        costs = {}
        reads: dict[str, Callable[[], object]] = {
            "list": lambda: _list(store),
            "list by label and parent": lambda: _list(store, label="x", parent_id="a"),
            "get": lambda: store.get("b"),
            "details": lambda: store.details("a"),
            "stats": lambda: store.stats(),
            "activity": lambda: store.activity(limit=20),
            "any other read": lambda: store.next_task(claim=False),
        }
        for name, read in reads.items():
            statements.clear()
            read()
            costs[name] = len(statements)
    finally:
        database.close()
    assert {name: cost for name, cost in costs.items() if name != "any other read"} == dict.fromkeys(
        ["list", "list by label and parent", "get", "details", "stats", "activity"], 1
    )
    # A read of several statements: BEGIN (its options inside it), the lapsed-lease check, its own.
    assert statements[:2] == ["BEGIN", statements[1]]
    assert "min(x.lease_expires_at)" in statements[1]
