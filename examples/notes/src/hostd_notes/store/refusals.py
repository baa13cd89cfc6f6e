"""What the store refuses: one ``Reason`` per reason name, both languages, ``{name}`` filled in."""

from __future__ import annotations

from hostd_errors import Reason

from hostd import ToolError

REFUSALS: dict[str, Reason] = {
    "title_taken": Reason(
        "ALREADY_EXISTS",
        "A note titled '{title}' already exists.",
        "标题为 '{title}' 的笔记已存在。",
        "Choose another title; list_notes shows the titles in use.",
        "请换一个标题；list_notes 可列出已用的标题。",
    ),
}


def title_taken(title: str) -> ToolError:
    reason = REFUSALS["title_taken"]
    return ToolError(
        reason.code,
        reason.message(title=title),
        hint=reason.hint(),
        details={"argument": "title", "reason": "title_taken", "title": title},
    )
