"""Counted nouns in messages: "1 task", "2 tasks" (English); Chinese counts with a measure word
(``个``, ``条``) that does not change with the number, so only English needs choosing."""

from __future__ import annotations

from hostd_db import utc_stamp

from hostd import Text
from hostd_tasks.models import TaskRecord


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``count`` and the noun that agrees with it: ``counted(1, "task")`` is ``"1 task"``."""
    noun = singular if count == 1 else (plural or f"{singular}s")
    return f"{count} {noun}"


def agreeing(count: int, singular_verb: str, plural_verb: str) -> str:
    """The verb that agrees with ``count`` things: ``agreeing(1, "is", "are")`` is ``"is"``."""
    return singular_verb if count == 1 else plural_verb


def held(task: TaskRecord) -> Text:
    """Who holds a claimed task and when its lease lapses (" Held by X until T."); empty otherwise."""
    if task.status != "in_progress" or task.claimed_by is None:
        return Text.same("")
    if task.lease_expires_at is None:
        return Text(en=f" Held by {task.claimed_by}.", zh=f"由 {task.claimed_by} 持有。")
    until = utc_stamp(task.lease_expires_at)
    return Text(
        en=f" Held by {task.claimed_by} until {until} unless renewed.",
        zh=f"由 {task.claimed_by} 持有，若不续期则于 {until} 到期。",
    )
