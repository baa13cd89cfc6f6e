"""The thinking templates (built-in and the user's files) as MCP prompts, one per template.

A prompt ``think_<template_id>`` takes the ``topic`` to think about and, optionally, the
``session_id`` to use; it asks the model to create that session from the template and work
through its steps with ``sequential_thinking``. Session ids complete from the newest sessions.
"""

from __future__ import annotations

from hostd import PromptArgumentInfo, PromptInfo, PromptText, Text, ToolContext, ToolError
from hostd_deep_thinking.models import Settings

PREFIX = "think_"
#: Sessions looked at when completing a session id (newest first).
COMPLETION_SCAN = 200


def list_prompts(ctx: ToolContext[Settings]) -> list[PromptInfo]:
    from hostd_deep_thinking.tools.templates import all_templates

    templates, _ = all_templates(ctx)
    return [
        PromptInfo(
            name=PREFIX + template.template_id,
            title=template.name.render(ctx.language),
            description=template.description.render(ctx.language),
            arguments=[
                PromptArgumentInfo(name="topic", description="What to think through", required=True),
                PromptArgumentInfo(name="session_id", description="Session to use (default: a new one)"),
            ],
        )
        for template in templates.values()
    ]


def get_prompt(ctx: ToolContext[Settings], name: str, arguments: dict[str, str]) -> PromptText:
    from hostd_deep_thinking.tools.templates import all_templates

    templates, _ = all_templates(ctx)
    template = templates.get(name.removeprefix(PREFIX)) if name.startswith(PREFIX) else None
    if template is None:
        raise ToolError(
            "NOT_FOUND", Text(en=f"No prompt {name}.", zh=f"没有提示 {name}。"), details={"name": name}
        )
    topic = (arguments.get("topic") or "").strip()
    if not topic:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(en="The prompt needs a topic.", zh="该提示需要 topic。"),
            details={"argument": "topic"},
        )
    session = (arguments.get("session_id") or "").strip()
    language = ctx.language
    steps = "\n".join(
        f"{index}. {title.render(language)}: {guidance.render(language)}"
        for index, (title, guidance) in enumerate(template.steps, start=1)
    )
    where = (
        Text(en=f"in session '{session}'", zh=f"在会话 '{session}' 中")
        if session
        else Text(en="in a new session", zh="在一个新会话中")
    )
    text = Text(
        en="Think through this with the sequential_thinking tool, {where} created with create_session "
        "(template_id '{template}'), one thought per step:\n\n{steps}\n\nTopic: {topic}",
        zh="请用 sequential_thinking 工具思考这个问题，{where}（用 create_session 创建，template_id "
        "'{template}'），每个步骤一个思考：\n\n{steps}\n\n主题：{topic}",
    ).format(where=where.render(language), template=template.template_id, steps=steps, topic=topic)
    return PromptText(description=template.description.render(language), messages=[text.render(language)])


def complete_argument(
    ctx: ToolContext[Settings], prompt: str, argument: str, prefix: str, arguments: dict[str, str]
) -> list[str]:
    """Session ids, newest first; nothing for the free-text topic."""
    if argument != "session_id":
        return []
    return session_ids(ctx, prefix)


def session_ids(ctx: ToolContext[Settings], prefix: str) -> list[str]:
    from hostd_deep_thinking.tools.sessions import list_sessions

    found: list[str] = []
    cursor: str | None = None
    seen = 0
    while seen < COMPLETION_SCAN:
        page = list_sessions(ctx, limit=100, cursor=cursor)
        seen += len(page.sessions)
        found += [s.session_id for s in page.sessions if s.session_id.startswith(prefix)]
        cursor = page.next_cursor
        if cursor is None:
            break
    return found
