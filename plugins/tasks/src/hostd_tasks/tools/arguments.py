"""The argument types and small checks the task tools share, so each limit is described once."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from hostd import ID_PATTERN, Text, ToolError
from hostd_tasks.rules import (
    ACCEPTANCE_MAX,
    DEPENDENCIES_MAX,
    DESCRIPTION_MAX,
    LABEL_PATTERN,
    LABELS_MAX,
    TITLE_MAX,
)

#: Team members' names follow the id rule (the host's tokens file enforces it on every name).
MEMBER_PATTERN = ID_PATTERN

TaskId = Annotated[
    str,
    Field(
        description="A task id: 1-64 letters, digits, '_', '-' or '.', not starting with '.' (e.g. 't-12')",
        pattern=ID_PATTERN,
    ),
]
Label = Annotated[
    str,
    Field(
        description="A label: 1-40 characters, no whitespace or comma (stored lower-case), e.g. 'backend'",
        pattern=LABEL_PATTERN,
    ),
]
Labels = Annotated[list[Label], Field(description=f"Labels, at most {LABELS_MAX}", max_length=LABELS_MAX)]
# Field descriptions shared by tools that take the same argument (create, update, split).
TITLE = Field(description="What is to be done, 1-200 characters", min_length=1, max_length=TITLE_MAX)
DESCRIPTION = Field(description=f"Details, at most {DESCRIPTION_MAX} characters", max_length=DESCRIPTION_MAX)
ACCEPTANCE = Field(
    description=f"How to verify the task is done, at most {ACCEPTANCE_MAX} characters",
    max_length=ACCEPTANCE_MAX,
)
Title = Annotated[str, TITLE]
Description = Annotated[str, DESCRIPTION]
Acceptance = Annotated[str, ACCEPTANCE]
Dependencies = Annotated[
    list[TaskId],
    Field(description="Ids of existing tasks that must be completed first", max_length=DEPENDENCIES_MAX),
]
PARENT_ID = Field(
    description="The task this one is a subtask of (it must exist); a parent is offered by "
    "get_next_task only once all its subtasks are completed",
    pattern=ID_PATTERN,
)
SessionId = Annotated[
    str,
    Field(
        description="A deep-thinking session id (1-64 letters, digits, '_', '-', '.'; not starting with '.')",
        pattern=ID_PATTERN,
    ),
]


def invalid_argument(argument: str, message: Text, hint: Text) -> ToolError:
    """INVALID_ARGUMENT naming ``argument``, for what the argument's schema cannot say."""
    return ToolError("INVALID_ARGUMENT", message, hint=hint, details={"argument": argument})


def clean_title(title: str, argument: str = "title") -> str:
    """The title without surrounding whitespace; a blank one is refused, naming the argument."""
    clean = title.strip()
    if not clean:
        raise invalid_argument(
            argument,
            Text(
                en=f"Invalid argument '{argument}': it is blank.", zh=f"参数 '{argument}' 无效：内容为空白。"
            ),
            Text(en="Give a short title with visible characters.", zh="请给出含可见字符的简短标题。"),
        )
    return clean


def clean_labels(labels: list[str]) -> list[str]:
    """Labels compare without case: stored lower-case, once each, sorted."""
    return sorted({label.lower() for label in labels})
