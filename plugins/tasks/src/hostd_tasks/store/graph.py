"""The dependency graph read from the store in one snapshot: every live task and every dependency,
two statements whatever the size (``hostd_tasks.graph`` computes on it)."""

from __future__ import annotations

from hostd_db import Connection

from hostd_tasks.graph import Node, TaskGraph


def read_graph(conn: Connection) -> TaskGraph:
    """Every live task (id, title, status, priority, seq, parent) and what it depends on."""
    nodes = {
        str(task_id): Node(
            str(task_id),
            str(title),
            str(status),
            int(priority),
            int(seq),
            None if parent is None else str(parent),
        )
        for task_id, title, status, priority, seq, parent in conn.execute(
            "SELECT task_id, title, status, priority, seq, parent_id FROM tasks"
        ).fetchall()
    }
    depends_on: dict[str, list[str]] = {}
    for task_id, dep in conn.execute(
        "SELECT task_id, depends_on FROM task_dependencies ORDER BY task_id, position"
    ).fetchall():
        depends_on.setdefault(str(task_id), []).append(str(dep))
    return TaskGraph(nodes, depends_on)
