"""The task rules: statuses, priorities, the allowed status moves, who holds a task, the size limits.

Kept free of storage, of the host and of pydantic so the rules can be read (and tested) in one
place: the store enforces them, the tools' argument schemas quote the limits.
"""

from __future__ import annotations

from typing import Literal, get_args

Status = Literal["pending", "in_progress", "completed", "failed", "blocked"]
Priority = Literal["P0", "P1", "P2"]
#: How get_next_task chooses among ready tasks: the most urgent (priority, then oldest), or the one
#: the most unfinished tasks wait on (then the most urgent).
NextPreference = Literal["urgent", "unblocks_most"]

STATUSES: tuple[Status, ...] = get_args(Status)
PRIORITIES: tuple[Priority, ...] = get_args(Priority)

TITLE_MAX = 200
#: Long enough for a real brief, short enough that one task cannot bloat every list answer.
DESCRIPTION_MAX = 20_000
#: Dependencies one task may name; more than this is a plan, not a task.
DEPENDENCIES_MAX = 100
#: How to check a task is done: as long as a description, since it often lists steps.
ACCEPTANCE_MAX = 20_000
#: One appended note; longer text belongs in the description.
NOTE_MAX = 5_000
#: All notes of one task together: past this append_note answers TOO_LONG, so a task that is
#: appended to in a loop cannot grow without bound and bloat every answer that carries it.
NOTES_TOTAL_MAX = 20_000
#: Labels per task, and the shape of one label (1-40 characters, no whitespace, comma or control).
LABELS_MAX = 20
LABEL_PATTERN = r"^[^\s,\x00-\x1f\x7f]{1,40}$"
#: Subtasks one split_task call may create.
SUBTASKS_MAX = 50
#: A search is a few words; longer text would only be cut into more terms than are used.
QUERY_MAX = 200

#: A claim is a lease: it lapses this many seconds after the claim or the last renewal unless
#: renewed (the ``lease_seconds`` setting; a call may ask for its own length within the bounds).
#: Half an hour covers a long step of an agent's work between two calls; one second is the
#: shortest a test needs; a day is the longest a claim should go unrenewed before someone else
#: may take the work.
LEASE_SECONDS_DEFAULT = 1800
LEASE_SECONDS_MIN = 1
LEASE_SECONDS_MAX = 86_400

#: Every allowed move; anything else (apart from staying put) is refused as a conflict.
TRANSITIONS: dict[Status, tuple[Status, ...]] = {
    "pending": ("in_progress", "blocked", "failed"),
    "in_progress": ("completed", "failed", "blocked", "pending"),
    "blocked": ("pending", "in_progress"),
    "failed": ("pending",),
    "completed": ("pending",),
}


def allowed_next(status: Status) -> tuple[Status, ...]:
    """The statuses a task in ``status`` may move to."""
    return TRANSITIONS[status]


def claimer_after(status: Status, claimer: str | None, by: str | None) -> str | None:
    """Who holds a task once ``by`` has moved it to ``status`` (``claimer`` held it before).

    Moving it to in_progress makes it the mover's; back to pending it is nobody's (released,
    retried or reopened: whoever takes it next claims it anew, and the history keeps who held
    it before); any other move keeps the last claimer, so a finished or stuck task still says
    who worked on it.
    """
    if status == "in_progress":
        return by
    if status == "pending":
        return None
    return claimer


def priority_rank(priority: Priority) -> int:
    """P0 -> 0 (most urgent) ... P2 -> 2, the order stored and sorted on."""
    return PRIORITIES.index(priority)


def priority_name(rank: int) -> Priority:
    return PRIORITIES[rank]
