"""The store's queries: one task in full, a page of the list, the next ready task, statistics.

Each runs in one read transaction (one snapshot), except ``next_task(claim=True)``: the pick and
the move to in_progress are one write transaction, so two agents asking at once never receive
the same task. Every query here is an index walk where a busy list repeats it (see ``schema``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, cast

from hostd_db import Connection, utc_stamp

from hostd_tasks.graph import TaskGraph
from hostd_tasks.models import ActivityEntry, NoTaskReason, RelatedTask, StuckTask, TaskRecord
from hostd_tasks.rules import (
    LEASE_SECONDS_DEFAULT,
    PRIORITIES,
    STATUSES,
    NextPreference,
    Priority,
    Status,
    claimer_after,
    priority_name,
    priority_rank,
)
from hostd_tasks.store import refusals
from hostd_tasks.store.base import StoreBase
from hostd_tasks.store.graph import read_graph
from hostd_tasks.store.results import (
    ListPage,
    ListPosition,
    NextTask,
    Stats,
    TaskDetails,
)
from hostd_tasks.store.rows import (
    append_history,
    deletion_time,
    history_entry,
    history_of,
    json_or,
    related_tasks,
    stored_moment,
)

#: One index seek (``tasks_by_status``): has any task failed?
_ANY_FAILED = "SELECT 1 FROM tasks WHERE status = 'failed' LIMIT 1"

#: True for a task that still waits on a dependency which is not completed.
WAITING_ON_DEPENDENCY = """
    EXISTS (SELECT 1 FROM task_dependencies AS d JOIN tasks AS dep ON dep.task_id = d.depends_on
            WHERE d.task_id = t.task_id AND dep.status <> 'completed')
"""

#: True for a parent with a subtask not completed: the work to hand out is the subtask.
WAITING_ON_SUBTASK = """
    EXISTS (SELECT 1 FROM tasks AS c WHERE c.parent_id = t.task_id AND c.status <> 'completed')
"""

#: The most urgent pending task that waits on nothing: an index walk over ``tasks_by_status``.
NEXT_READY = (
    "SELECT t.seq, t.task_id FROM tasks AS t WHERE t.status = 'pending' "
    f"AND NOT {WAITING_ON_DEPENDENCY} AND NOT {WAITING_ON_SUBTASK} ORDER BY t.priority, t.seq LIMIT 1"
)
#: One task, if it is still ready (``next_task(prefer="unblocks_most")`` checks its pick under the lock).
_READY_ONE = (
    "SELECT t.seq, t.task_id FROM tasks AS t WHERE t.task_id = ? AND t.status = 'pending' "
    f"AND NOT {WAITING_ON_DEPENDENCY} AND NOT {WAITING_ON_SUBTASK}"
)
#: Pending tasks waiting on failed work, walked from the failed tasks (few, found by
#: ``tasks_by_status``) to what waits on them, never over every pending task: (stuck task,
#: failed task, the parent it waits through or null). A pending task waits on failed work when a
#: dependency or subtask of it failed; a pending subtask of such a task is named too, through
#: its parent (it may be ready, but its parent cannot finish until the failed work is retried).
#: get_next_task walks from the most urgent failed tasks only (``STUCK_WALKED``), so it costs the
#: same however many tasks have failed; get_task_stats walks from all of them to count.
#: ``CROSS JOIN`` keeps SQLite walking from those few to their subtasks (``tasks_by_parent``).
STUCK_BEHIND_FAILED = """
    WITH failed AS (
        SELECT task_id, parent_id FROM tasks WHERE status = 'failed' ORDER BY priority, seq {limit}),
    waiting AS (
        SELECT d.task_id AS stuck, f.task_id AS blocker FROM failed AS f
            JOIN task_dependencies AS d ON d.depends_on = f.task_id
        UNION
        SELECT f.parent_id, f.task_id FROM failed AS f WHERE f.parent_id IS NOT NULL),
    direct AS (
        SELECT w.stuck, w.blocker, CAST(NULL AS TEXT) AS via FROM waiting AS w
            JOIN tasks AS t ON t.task_id = w.stuck WHERE t.status = 'pending'),
    through_parent AS (
        SELECT c.task_id AS stuck, d.blocker, d.stuck AS via FROM direct AS d
            CROSS JOIN tasks AS c WHERE c.parent_id = d.stuck AND c.status = 'pending')
    SELECT s.stuck, t.title, s.blocker, s.via
        FROM (SELECT * FROM direct UNION SELECT * FROM through_parent) AS s
        JOIN tasks AS t ON t.task_id = s.stuck ORDER BY t.priority, t.seq, s.blocker
"""
#: Stuck tasks named in one get_next_task answer; get_task_stats counts them all.
STUCK_SHOWN = 20
#: Failed tasks get_next_task looks behind for stuck work, most urgent first.
STUCK_WALKED = 20
#: History entries one get_task answer shows (the newest); the total is always given.
HISTORY_SHOWN = 200

#: PostgreSQL: what ``details`` reads beside the record, as columns of its one statement: the
#: history's total, its newest entries ([event, actor, details] and their times, newest first), and
#: what the task waits on, what waits on it and its subtasks as [id, title, status] (the orders of
#: ``details``' own queries). Parameters: the task id, once for each.
_DETAILS_AT_ONCE = f"""
    (SELECT COUNT(*) FROM task_history WHERE task_id = ?),
    ARRAY(SELECT ARRAY[h.event, h.actor, h.details] FROM task_history AS h WHERE h.task_id = ?
          ORDER BY h.seq DESC LIMIT {HISTORY_SHOWN}),
    ARRAY(SELECT h.at FROM task_history AS h WHERE h.task_id = ?
          ORDER BY h.seq DESC LIMIT {HISTORY_SHOWN}),
    ARRAY(SELECT ARRAY[dep.task_id, dep.title, dep.status] FROM task_dependencies AS d
          JOIN tasks AS dep ON dep.task_id = d.depends_on WHERE d.task_id = ? ORDER BY d.position),
    ARRAY(SELECT ARRAY[t.task_id, t.title, t.status] FROM task_dependencies AS d
          JOIN tasks AS t ON t.task_id = d.task_id WHERE d.depends_on = ? ORDER BY t.priority, t.seq),
    ARRAY(SELECT ARRAY[c.task_id, c.title, c.status] FROM tasks AS c WHERE c.parent_id = ?
          ORDER BY c.priority, c.seq)
"""


#: The oldest pending task's seq: one index seek per priority, never a scan of every pending task.
_OLDEST_PENDING_SEQ = "LEAST({})".format(
    ", ".join(
        f"(SELECT MIN(seq) FROM tasks WHERE status = 'pending' AND priority = {rank})"
        for rank in range(len(PRIORITIES))
    )
)

#: PostgreSQL: what ``stats`` reads beside the counts, as columns of its one statement: the pending
#: tasks waiting on a dependency, the tasks stuck behind failed work, the oldest pending task's id
#: and creation time (the queries ``stats`` runs one by one on SQLite).
_STATS_AT_ONCE = f"""
    (SELECT COUNT(*) FROM tasks AS t WHERE t.status = 'pending' AND {WAITING_ON_DEPENDENCY}),
    (SELECT COUNT(DISTINCT s.stuck) FROM ({STUCK_BEHIND_FAILED.format(limit="")}) AS s),
    (SELECT task_id FROM tasks WHERE seq = {_OLDEST_PENDING_SEQ}),
    (SELECT created_at FROM tasks WHERE seq = {_OLDEST_PENDING_SEQ})
"""


def _related(rows: object) -> list[RelatedTask]:
    """Tasks from an array of [id, title, status] (``_DETAILS_AT_ONCE``)."""
    return [
        RelatedTask(task_id=str(other), title=str(title), status=status)  # type: ignore[arg-type]
        for other, title, status in cast("list[list[str]]", rows)
    ]


class TaskQueries(StoreBase):
    """Reading the list: records, pages, the next task, counts."""

    def recent_labels(self, prefix: str, limit: int) -> list[str]:
        """Labels starting with ``prefix`` on a task: the most recently changed task's label first,
        then the most used (a deleted task keeps no labels)."""
        if "\x00" in prefix:
            return []
        rows = self._read(
            lambda conn: conn.execute(
                "SELECT l.label, max(t.updated_at) AS latest, count(*) AS uses "
                "FROM task_labels AS l JOIN tasks AS t ON t.task_id = l.task_id "
                "WHERE l.label >= ? AND l.label < ? "
                "GROUP BY l.label ORDER BY latest DESC, uses DESC, l.label LIMIT ?",
                (prefix, prefix + "\U0010ffff", limit),
            ).fetchall()
        )
        return [str(row[0]) for row in rows]

    def get(self, task_id: str) -> TaskRecord:
        if self.postgres:
            ((*row,),) = self._read_at_once(
                f"SELECT {self.record_columns} FROM tasks AS t WHERE t.task_id = ?", (task_id,)
            )
            if row[0] is not None:
                return self._record_with_arrays(row)
        # SQLite, or no such task: NOT_FOUND says whether (and when) it was deleted.
        return self._read(lambda conn: self._fetch(conn, task_id))

    def details(self, task_id: str) -> TaskDetails:
        """A task (or a deleted task's last record) with its history and its neighbours both ways."""
        if self.postgres:
            found = self._live_details_at_once(task_id)
            if found is not None:
                return found

        def work(conn: Connection) -> TaskDetails:
            task = self._fetch_or_none(conn, task_id)
            deleted_at = None
            if task is None:
                deleted_at = deletion_time(conn, task_id)
                if deleted_at is None:
                    raise refusals.task_not_found(task_id)
                (record,) = conn.execute(
                    "SELECT record FROM deleted_tasks WHERE task_id = ?", (task_id,)
                ).fetchone()
                task = TaskRecord.from_stored_json(record)
            (history_total,) = conn.execute(
                "SELECT COUNT(*) FROM task_history WHERE task_id = ?", (task_id,)
            ).fetchone()
            history = history_of(conn, task_id, newest=HISTORY_SHOWN)
            depends_on = related_tasks(
                conn,
                "SELECT dep.task_id, dep.title, dep.status FROM task_dependencies AS d "
                "JOIN tasks AS dep ON dep.task_id = d.depends_on WHERE d.task_id = ? ORDER BY d.position",
                task_id,
            )
            dependents = related_tasks(
                conn,
                "SELECT t.task_id, t.title, t.status FROM task_dependencies AS d "
                "JOIN tasks AS t ON t.task_id = d.task_id WHERE d.depends_on = ? ORDER BY t.priority, t.seq",
                task_id,
            )
            subtasks = related_tasks(
                conn,
                "SELECT task_id, title, status FROM tasks WHERE parent_id = ? ORDER BY priority, seq",
                task_id,
            )
            return TaskDetails(
                task, deleted_at, history, int(history_total), depends_on, dependents, subtasks
            )

        return self._read(work)

    def _live_details_at_once(self, task_id: str) -> TaskDetails | None:
        """PostgreSQL: ``details`` of a live task in one statement (``_read_at_once``): its history
        and neighbours as arrays of ``[id, title, status]``; None when no live task has the id."""
        ((total, history, history_times, depends_on, dependents, subtasks, *record),) = self._read_at_once(
            f"SELECT {self.record_columns} FROM tasks AS t WHERE t.task_id = ?",
            [task_id] * 7,
            head=_DETAILS_AT_ONCE,
        )
        if record[0] is None:
            return None
        newest = [
            history_entry(event, at, actor, details)
            for (event, actor, details), at in zip(
                cast("list[list[str]]", history), cast("list[datetime]", history_times), strict=True
            )
        ]
        return TaskDetails(
            self._record_with_arrays(record),
            None,
            newest[::-1],
            int(cast("int", total)),
            _related(depends_on),
            _related(dependents),
            _related(subtasks),
        )

    def activity(self, *, limit: int, by: str | None = None) -> list[ActivityEntry]:
        """The newest history entries across tasks (of one member when ``by``): a walk of the
        history's primary key backwards, so it costs the same with any number of tasks."""

        where, parameters = ("WHERE h.actor = ? ", (by, limit)) if by is not None else ("", (limit,))
        newest = (
            "SELECT h.task_id, t.title, h.event, h.at, h.actor, h.details, h.seq AS page_seq "
            f"FROM task_history AS h LEFT JOIN tasks AS t ON t.task_id = h.task_id {where}"
            "ORDER BY h.seq DESC LIMIT ?"
        )
        if self.postgres:  # one statement, one round trip
            rows = [
                row for row in self._read_at_once(newest, parameters, order_by="b.page_seq DESC") if row[0]
            ]
        else:
            rows = self._read(
                lambda conn: [tuple(row) for row in conn.execute(newest, parameters).fetchall()]
            )
        return [
            ActivityEntry(
                task_id=str(task_id),
                title=None if title is None else str(title),
                event=str(event),
                at=stored_moment(at),
                by=None if actor is None else str(actor),
                details=json_or(details, {}),
            )
            for task_id, title, event, at, actor, details, _ in rows
        ]

    # --- list ----------------------------------------------------------------------------

    def list_page(
        self,
        *,
        status: Status | None,
        priority: Priority | None,
        limit: int,
        after: ListPosition | None,
        label: str | None = None,
        parent_id: str | None = None,
        query: str | None = None,
        created_by: str | None = None,
        claimed_by: str | None = None,
    ) -> ListPage:
        """Most urgent first (P0..P2, then oldest); ``after`` is the (priority, seq) keyset cursor.

        ``query`` must hold a word (``match_expression`` is not None); the tool checks that first.
        """
        filters: list[str] = []
        values: list[object] = []
        if status is not None:
            filters.append("t.status = ?")
            values.append(status)
        if priority is not None:
            filters.append("t.priority = ?")
            values.append(priority_rank(priority))
        if label is not None:
            filters.append(
                "EXISTS (SELECT 1 FROM task_labels AS l WHERE l.task_id = t.task_id AND l.label = ?)"
            )
            values.append(label)
        if parent_id is not None:
            filters.append("t.parent_id = ?")
            values.append(parent_id)
        for column, member in (("created_by", created_by), ("claimed_by", claimed_by)):
            if member is not None:
                filters.append(f"t.{column} = ?")
                values.append(member)
        if query is not None:
            condition, parameter = self._search_filter(query)
            filters.append(condition)
            values.append(parameter)
        where = " AND ".join(filters) or "1 = 1"
        page_where, page_values = where, list(values)
        if after is not None:
            page_where += " AND (t.priority, t.seq) > (?, ?)"
            page_values += list(after)

        if self.postgres:
            # One statement: the total, whether the parent exists, the page (labels and notes inside).
            parent_found = "" if parent_id is None else ", EXISTS (SELECT 1 FROM tasks WHERE task_id = ?)"
            rows = self._read_at_once(
                f"SELECT {self.record_columns}, t.priority AS page_priority, t.seq AS page_seq "
                f"FROM tasks AS t WHERE {page_where} ORDER BY t.priority, t.seq LIMIT ?",
                [*values, *([] if parent_id is None else [parent_id]), *page_values, limit + 1],
                head=f"(SELECT COUNT(*) FROM tasks AS t WHERE {where}){parent_found}",
                order_by="b.page_priority, b.page_seq",
            )
            skip = 1 if parent_id is None else 2
            if parent_id is None or rows[0][1]:  # else NOT_FOUND below, saying whether it was deleted
                total = int(cast("int", rows[0][0]))
                found = [row[skip:] for row in rows if row[skip] is not None]
                more = len(found) > limit
                found = found[:limit]
                next_after = (
                    (int(cast("int", found[-1][-2])), int(cast("int", found[-1][-1]))) if more else None
                )
                return ListPage([self._record_with_arrays(row[:-2]) for row in found], total, next_after)

        def work(conn: Connection) -> ListPage:
            if parent_id is not None:
                self._fetch(conn, parent_id, argument="parent_id")
            (total,) = conn.execute(f"SELECT COUNT(*) FROM tasks AS t WHERE {where}", values).fetchone()
            rows = conn.execute(
                f"SELECT {self.record_columns}, t.priority, t.seq FROM tasks AS t WHERE {page_where} "
                "ORDER BY t.priority, t.seq LIMIT ?",
                [*page_values, limit + 1],
            ).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            next_after = (int(rows[-1][-2]), int(rows[-1][-1])) if more and rows else None
            return ListPage(self._records(conn, [row[:-2] for row in rows]), int(total), next_after)

        return self._read(work)

    # --- next ----------------------------------------------------------------------------

    def graph(self) -> TaskGraph:
        """The dependency graph of the live tasks, from one snapshot (``hostd_tasks.graph``)."""
        return self._read(read_graph)

    def next_task(
        self,
        *,
        claim: bool,
        by: str | None = None,
        lease_seconds: int = LEASE_SECONDS_DEFAULT,
        prefer: NextPreference = "urgent",
    ) -> NextTask:
        """The most urgent pending leaf of work whose dependencies and subtasks are all completed,
        and the tasks stuck behind failed work (whether or not one was found).

        With ``claim`` the pick and the move to in_progress happen in one write transaction
        under the picked row's lock, so two agents asking at once never receive the same task;
        the member ``by`` becomes its ``claimed_by`` for a lease of ``lease_seconds``. Lapsed
        leases go back to pending first, in the same transaction, so their tasks can be picked.

        ``prefer="unblocks_most"`` picks, among the ready tasks, the one that the most unfinished
        tasks wait on (directly or through others), then the most urgent: the graph is read in the
        same transaction (``hostd_tasks.graph``), and each candidate is taken in that order under
        the same row lock as the usual pick.
        """
        query = NEXT_READY

        def work(conn: Connection) -> NextTask:
            now = self._clock(conn)
            if claim:
                self._expire_leases(conn, now)
            row = self._pick_unblocking(conn, claim) if prefer == "unblocks_most" else None
            if row is not None:
                pass  # otherwise (none ready, or every candidate held by other claimers) the usual pick
            elif not claim:
                row = conn.execute(query).fetchone()
            else:
                # Skip rows other claimers hold; if that leaves none, wait for their claims to end
                # and look again, so "nothing pending" is never said of a task still being claimed.
                row = conn.execute(query + self.claim_lock).fetchone()
                if row is None and self.claim_lock_waiting:
                    row = conn.execute(query + self.claim_lock_waiting).fetchone()
            if row is None:
                stuck, more = self._stuck_shown(conn)
                return self._why_none(conn, stuck, more)
            _, task_id = row
            if claim:
                self._claim(conn, str(task_id), by=by, now=now, lease_seconds=lease_seconds)
                append_history(
                    conn,
                    str(task_id),
                    "claimed",
                    {"from": "pending", "to": "in_progress"},
                    utc_stamp(now),
                    by,
                )
            found = NextTask(self._fetch(conn, str(task_id)), claimed=claim, reason=None)
            # Whether any task failed is one index seek, asked here so the usual answer (nothing
            # failed) costs no second transaction; the walk behind failed work runs after.
            failed = conn.execute(_ANY_FAILED).fetchone() is not None
            return replace(found, more_stuck=failed)

        found = self._write(work) if claim else self._read(work)
        if found.task is None or not found.more_stuck:
            return found
        # Read after the claim, not inside it: the claim's write lock (all of SQLite's) is held no longer.
        stuck, more = self._read(self._stuck_shown)
        return replace(found, stuck=stuck, more_stuck=more)

    def _pick_unblocking(self, conn: Connection, claim: bool) -> tuple[object, object] | None:
        """The ready task that unblocks the most others (``next_task``), as NEXT_READY's row."""
        lock = self.claim_lock if claim else ""
        for task_id, _ in read_graph(conn).ready_by_unblocking():
            row = conn.execute(_READY_ONE + lock, (task_id,)).fetchone()
            if row is not None:
                return (row[0], row[1])
        return None

    def _stuck_shown(self, conn: Connection) -> tuple[list[StuckTask], bool]:
        """What get_next_task names as stuck (at most STUCK_SHOWN) and whether more may be stuck;
        one index seek when no task has failed."""
        if conn.execute(_ANY_FAILED).fetchone() is None:
            return [], False
        stuck = self._stuck(conn, walked=STUCK_WALKED)
        more_failed = conn.execute(
            f"SELECT 1 FROM tasks WHERE status = 'failed' LIMIT 1 OFFSET {STUCK_WALKED}"
        ).fetchone()
        return stuck[:STUCK_SHOWN], len(stuck) > STUCK_SHOWN or more_failed is not None

    @staticmethod
    def _claim(conn: Connection, task_id: str, *, by: str | None, now: datetime, lease_seconds: int) -> None:
        """Make the task ``by``'s, in_progress, for a lease of ``lease_seconds`` from ``now``; counted.

        A member claiming again a task whose lease of theirs lapsed is no longer late for it.
        """
        conn.execute(
            "UPDATE tasks SET status = 'in_progress', updated_at = ?, claimed_by = ?, lease_expires_at = ?, "
            "lease_seconds = ?, claim_count = claim_count + 1, "
            "lease_lost_by = CASE WHEN lease_lost_by = ? THEN NULL ELSE lease_lost_by END WHERE task_id = ?",
            (
                utc_stamp(now),
                claimer_after("in_progress", None, by),
                utc_stamp(now + timedelta(seconds=lease_seconds)),
                lease_seconds,
                by,
                task_id,
            ),
        )

    def _stuck(self, conn: Connection, *, walked: int | None = None) -> list[StuckTask]:
        """The pending tasks waiting on failed work (``STUCK_BEHIND_FAILED``), most urgent first:
        every one, or (``walked``) those behind the ``walked`` most urgent failed tasks."""
        limit = "" if walked is None else f"LIMIT {int(walked)}"
        sql = STUCK_BEHIND_FAILED.format(limit=limit)
        found: dict[str, tuple[str, list[str], str | None]] = {}
        for task_id, title, blocker, via in conn.execute(sql).fetchall():
            _, failed, parent = found.setdefault(str(task_id), (str(title), [], None))
            if str(blocker) not in failed:
                failed.append(str(blocker))
            if via is not None and parent is None:
                found[str(task_id)] = (str(title), failed, str(via))
        return [
            StuckTask(task_id=task_id, title=title, failed=sorted(failed), via_parent=parent)
            for task_id, (title, failed, parent) in found.items()
        ]

    def _why_none(self, conn: Connection, stuck: list[StuckTask], more_failed: bool) -> NextTask:
        counts = dict(conn.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status").fetchall())
        pending = int(counts.get("pending", 0))
        reason: NoTaskReason
        if not counts:
            reason = "empty"
        elif pending == 0:
            reason = "none_pending"
        else:
            reason = "waiting_on_dependencies"
        return NextTask(
            None,
            claimed=False,
            reason=reason,
            pending=pending,
            waiting=pending,  # nothing was offered, so every pending task waits
            in_progress=int(counts.get("in_progress", 0)),
            blocked=int(counts.get("blocked", 0)),
            stuck=stuck,
            more_stuck=more_failed,
        )

    # --- stats ---------------------------------------------------------------------------

    def stats(self) -> Stats:
        if self.postgres:  # one statement, one round trip: the counts, and the rest as its columns
            found = self._read_at_once(
                "SELECT status, priority, COUNT(*) AS n FROM tasks GROUP BY status, priority",
                (),
                head=_STATS_AT_ONCE,
            )
            waiting, stuck, oldest_id, oldest_at = found[0][:4]
            counts = [row[4:] for row in found if row[4] is not None]
            oldest = None if oldest_id is None else (oldest_id, oldest_at)
            return _stats(counts, int(cast("int", waiting)), int(cast("int", stuck)), oldest)

        def work(conn: Connection) -> tuple[list[Any], int, int, Any]:
            counts = conn.execute(
                "SELECT status, priority, COUNT(*) FROM tasks GROUP BY status, priority"
            ).fetchall()
            (waiting,) = conn.execute(
                f"SELECT COUNT(*) FROM tasks AS t WHERE t.status = 'pending' AND {WAITING_ON_DEPENDENCY}"
            ).fetchone()
            stuck = len(self._stuck(conn))
            # Oldest pending: one index seek per priority instead of a scan of every pending task.
            oldest_seqs = [
                seq
                for (seq,) in (
                    conn.execute(
                        "SELECT MIN(seq) FROM tasks WHERE status = 'pending' AND priority = ?", (rank,)
                    ).fetchone()
                    for rank in range(len(PRIORITIES))
                )
                if seq is not None
            ]
            oldest = None
            if oldest_seqs:
                oldest = conn.execute(
                    "SELECT task_id, created_at FROM tasks WHERE seq = ?", (min(oldest_seqs),)
                ).fetchone()
            return counts, int(waiting), int(stuck), oldest

        return _stats(*self._read(work))

    def tasks_for_session(self, session_id: str) -> list[TaskRecord]:
        def work(conn: Connection) -> list[TaskRecord]:
            rows = conn.execute(
                f"SELECT {self.record_columns} FROM tasks AS t WHERE t.linked_session_id = ? "
                "ORDER BY t.priority, t.seq",
                (session_id,),
            ).fetchall()
            return self._records(conn, rows)

        return self._read(work)


def _stats(counts: Sequence[Sequence[Any]], waiting: int, stuck: int, oldest: Sequence[Any] | None) -> Stats:
    """get_task_stats' answer from (status, priority rank, count) rows and the rest."""
    by_status = dict.fromkeys(STATUSES, 0)
    by_priority = dict.fromkeys(PRIORITIES, 0)
    for status, rank, count in counts:
        by_status[status] += count
        by_priority[priority_name(rank)] += count
    return Stats(
        total=sum(by_status.values()),
        by_status=by_status,
        by_priority=by_priority,
        waiting_on_dependencies=waiting,
        stuck_behind_failed=stuck,
        oldest_pending_task_id=str(oldest[0]) if oldest else None,
        oldest_pending_created_at=stored_moment(oldest[1]) if oldest else None,
    )
