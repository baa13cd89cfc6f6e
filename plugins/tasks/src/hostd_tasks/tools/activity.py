"""list_task_activity: what happened to the tasks lately, across all of them, newest first.

For a feed of the team's work (the dashboard's overview and members page, or an agent catching
up): who created, claimed, finished, edited or deleted which task, and when.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from hostd import Text, ToolContext
from hostd_tasks.models import ActivityOutput, Settings
from hostd_tasks.store import TaskStore
from hostd_tasks.tools.arguments import MEMBER_PATTERN

ACTIVITY_MAX = 100


def list_task_activity(
    ctx: ToolContext[Settings],
    limit: Annotated[int, Field(description="How many", ge=1, le=ACTIVITY_MAX)] = 20,
    member: Annotated[
        str | None,
        Field(
            description="Only changes this member made",
            pattern=MEMBER_PATTERN,
        ),
    ] = None,
) -> ActivityOutput:
    """The newest changes across all tasks (creations, edits, status moves, claims, deletions), with who."""
    entries = TaskStore(ctx.database()).activity(limit=limit, by=member)
    return ActivityOutput(entries=entries).with_message(
        Text(
            en=f"The {len(entries)} newest changes to tasks, newest first.",
            zh=f"任务最近的 {len(entries)} 项变更，最新在前。",
        )
    )
