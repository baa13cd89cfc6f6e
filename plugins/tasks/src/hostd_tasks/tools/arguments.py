"""The argument types and small checks the task tools share, so each limit is described once."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypeAliasType

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

# Named types: each is one shared definition (``$defs``) in a tool's input schema, however often used.
TaskId = TypeAliasType("TaskId", Annotated[str, Field(description="e.g. t-12", pattern=ID_PATTERN)])
Label = TypeAliasType(
    "Label", Annotated[str, Field(description="e.g. backend; case-insensitive", pattern=LABEL_PATTERN)]
)
MemberName = TypeAliasType("MemberName", Annotated[str, Field(description="Member name", pattern=ID_PATTERN)])
Labels = Annotated[list[Label], Field(description="Labels", max_length=LABELS_MAX)]
# Field descriptions shared by tools that take the same argument (create, update, split).
TITLE = Field(description="What is to be done", min_length=1, max_length=TITLE_MAX)
DESCRIPTION = Field(description="Details", max_length=DESCRIPTION_MAX)
ACCEPTANCE = Field(
    description="How to verify it is done",
    max_length=ACCEPTANCE_MAX,
)
Title = Annotated[str, TITLE]
Description = Annotated[str, DESCRIPTION]
Acceptance = Annotated[str, ACCEPTANCE]
Dependencies = Annotated[
    list[TaskId],
    Field(description="Tasks to complete first", max_length=DEPENDENCIES_MAX),
]
PARENT_ID = Field(description="Parent task")
SessionId = Annotated[
    str,
    Field(
        description="Deep-thinking session id",
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
