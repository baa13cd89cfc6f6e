"""The dependency graph: what waits on what, drawn as Mermaid, its critical path, and which
ready task unblocks the most others.

A task *waits on* its dependencies and a parent on its subtasks (the edges ``get_next_task``
honours); the store refuses every cycle, so the graph is acyclic. *Unfinished* means not
completed (a failed task still has to be redone before what waits on it can go).

- The critical path of a task is the longest chain of unfinished tasks it waits on, itself last:
  with no estimates, each task counts one step, so the chain's length is the fewest steps before
  the task can be done. The critical path of the list is the longest such chain of all.
- A task *unblocks* every unfinished task that waits on it, directly or through others.

Computed in memory from one snapshot of the list (``store.graph``): a topological order, then
one pass for the chains and one for what waits on each task, each set a Python int used as a bit
set, so 10,000 tasks take milliseconds. Nothing here touches a database.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Node:
    """A task as the graph needs it."""

    task_id: str
    title: str
    status: str
    priority: int  # 0 (P0) to 2
    seq: int
    parent_id: str | None


@dataclass
class TaskGraph:
    """Tasks by id (in list order: priority, then creation) and what each waits on."""

    nodes: dict[str, Node]
    depends_on: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.nodes = dict(sorted(self.nodes.items(), key=lambda item: (item[1].priority, item[1].seq)))
        self.children: dict[str, list[str]] = {}
        for node in self.nodes.values():
            if node.parent_id is not None and node.parent_id in self.nodes:
                self.children.setdefault(node.parent_id, []).append(node.task_id)

    def waits_on(self, task_id: str) -> list[str]:
        """Its dependencies, then its subtasks."""
        return [*self.depends_on.get(task_id, []), *self.children.get(task_id, [])]

    def unfinished(self, task_id: str) -> bool:
        return self.nodes[task_id].status != "completed"

    def ready(self, task_id: str) -> bool:
        """Pending, with every dependency and subtask completed: what get_next_task may offer."""
        node = self.nodes[task_id]
        return node.status == "pending" and not any(self.unfinished(o) for o in self.waits_on(task_id))

    def work_order(self) -> list[str]:
        """The unfinished tasks, each after everything unfinished it waits on (else in list order)."""
        rank = {task_id: at for at, task_id in enumerate(self.nodes)}
        todo = [t for t in self.nodes if self.unfinished(t)]
        blocking = {t: {o for o in self.waits_on(t) if self.unfinished(o)} for t in todo}
        waiters: dict[str, list[str]] = {}
        for t, others in blocking.items():
            for other in others:
                waiters.setdefault(other, []).append(t)
        ready = [(rank[t], t) for t, others in blocking.items() if not others]
        heapq.heapify(ready)
        order: list[str] = []
        while ready:
            _, t = heapq.heappop(ready)
            order.append(t)
            for waiter in waiters.get(t, ()):
                blocking[waiter].discard(t)
                if not blocking[waiter]:
                    heapq.heappush(ready, (rank[waiter], waiter))
        return order  # a cycle (which the store refuses) would leave its tasks out

    def chains(self) -> tuple[dict[str, int], dict[str, str | None]]:
        """For each unfinished task: the length of its longest chain, and the task before it there."""
        length: dict[str, int] = {}
        before: dict[str, str | None] = {}
        for t in self.work_order():
            best: str | None = None
            for other in self.waits_on(t):
                if other in length and (best is None or length[other] > length[best]):
                    best = other
            length[t] = 1 + (length[best] if best is not None else 0)
            before[t] = best
        return length, before

    def critical_path(self, task_id: str | None = None) -> list[str]:
        """The chain of unfinished work that decides when ``task_id`` (else the whole list) can be
        done, in the order it must be done (``task_id`` last); empty when it is completed."""
        length, before = self.chains()
        if task_id is None:
            if not length:
                return []
            # the longest; of equally long ones, the one ending at the most urgent task
            task_id = max((t for t in self.nodes if t in length), key=lambda t: length[t])
        if task_id not in length:
            return []
        chain: list[str] = []
        current: str | None = task_id
        while current is not None:
            chain.append(current)
            current = before[current]
        return chain[::-1]

    def unblocks(self) -> dict[str, int]:
        """For each unfinished task, how many unfinished tasks wait on it, directly or through others."""
        order = self.work_order()
        bit = {t: 1 << at for at, t in enumerate(order)}
        waiters: dict[str, list[str]] = {}
        for t in order:
            for other in self.waits_on(t):
                if other in bit:
                    waiters.setdefault(other, []).append(t)
        above: dict[str, int] = {}
        for t in reversed(order):
            found = 0
            for waiter in waiters.get(t, ()):
                found |= bit[waiter] | above[waiter]
            above[t] = found
        return {t: reach.bit_count() for t, reach in above.items()}

    def ready_by_unblocking(self) -> list[tuple[str, int]]:
        """The ready tasks, those that unblock the most others first (then most urgent, oldest)."""
        counts = self.unblocks()
        ready = [t for t in self.nodes if self.ready(t)]  # list order
        return sorted(((t, counts.get(t, 0)) for t in ready), key=lambda item: -item[1])

    def around(self, task_id: str) -> set[str]:
        """``task_id``, everything it waits on and everything that waits on it (transitively)."""
        up: dict[str, list[str]] = {}
        for t in self.nodes:
            for other in self.waits_on(t):
                up.setdefault(other, []).append(t)
        found = {task_id}
        for edges in (self.waits_on, lambda t: up.get(t, [])):
            stack = [task_id]
            while stack:
                for other in edges(stack.pop()):
                    if other not in found and other in self.nodes:
                        found.add(other)
                        stack.append(other)
        return found


# --- Mermaid ----------------------------------------------------------------------------------

#: Characters of a title a node shows.
LABEL_CHARS = 40
_CLASSES = {
    "pending": "fill:#f4f4f5,stroke:#71717a",
    "in_progress": "fill:#dbeafe,stroke:#2563eb",
    "blocked": "fill:#fef3c7,stroke:#d97706",
    "failed": "fill:#fee2e2,stroke:#dc2626",
    "completed": "fill:#dcfce7,stroke:#16a34a",
    "critical": "stroke-width:3px",
}


def _label(node: Node) -> str:
    """A node's text, safe inside Mermaid's quotes: its id and the start of its title."""
    title = " ".join(node.title.split())
    if len(title) > LABEL_CHARS:
        title = title[: LABEL_CHARS - 1] + "…"
    text = f"{node.task_id}: {title}"
    for raw, entity in (("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(raw, entity)
    return text


def mermaid(graph: TaskGraph, shown: Iterable[str], critical: Iterable[str] = ()) -> str:
    """The tasks ``shown`` as a Mermaid flowchart: an arrow from a task to what waits on it (work
    flows along the arrows), dotted from a subtask to its parent; each task coloured by status,
    the critical path drawn thick."""
    shown_ids = [t for t in graph.nodes if t in set(shown)]
    name = {t: f"n{at}" for at, t in enumerate(shown_ids)}
    lines = ["flowchart LR"]
    for t in shown_ids:
        node = graph.nodes[t]
        lines.append(f'  {name[t]}["{_label(node)}"]:::{node.status}')
    for t in shown_ids:
        for dep in graph.depends_on.get(t, []):
            if dep in name:
                lines.append(f"  {name[dep]} --> {name[t]}")
        for child in graph.children.get(t, []):
            if child in name:
                lines.append(f"  {name[child]} -.-> {name[t]}")
    on_path = [name[t] for t in critical if t in name]
    for status, style in _CLASSES.items():
        lines.append(f"  classDef {status} {style}")
    if on_path:
        lines.append(f"  class {','.join(on_path)} critical")
    return "\n".join(lines) + "\n"
