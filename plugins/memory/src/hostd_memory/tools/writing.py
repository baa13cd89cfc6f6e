"""create_memory, update_memory (patch, append, replace or metadata), delete_memory and
save_session: every change is a new version of the memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Literal, cast

from pydantic import Field

from hostd import NotConfirmed, Text, ToolContext, ToolError
from hostd_memory.models import (
    CreateMemoryOutput,
    DeleteMemoryOutput,
    SaveSessionOutput,
    SessionRecord,
    Settings,
    SimilarMemory,
    UpdateMemoryOutput,
    UpdateMode,
)
from hostd_memory.resources import resource_uri, touched
from hostd_memory.tools.answers import (
    record,
)
from hostd_memory.tools.arguments import (
    MAX_CONTENT,
    MAX_DISCLOSURE,
    OptionalPriority,
    PriorityArg,
    Tag,
    TagsArg,
    UriArg,
    tag_list,
    writable_uri,
)
from hostd_memory.uris import MemoryUri

if TYPE_CHECKING:
    from hostd_memory.store import MemoryStore


def create_memory(
    ctx: ToolContext[Settings],
    uri: UriArg,
    content: Annotated[str, Field(description="The memory's text", min_length=1, max_length=MAX_CONTENT)],
    priority: PriorityArg = 5,
    disclosure: Annotated[
        str | None,
        Field(description="When to bring it up", max_length=MAX_DISCLOSURE),
    ] = None,
    tags: TagsArg = None,
) -> CreateMemoryOutput:
    """Create a memory at a new URI (ALREADY_EXISTS if it or an alias exists)."""
    from hostd_memory.store import memory_store

    parsed = writable_uri(uri, "uri")
    if not content.strip():
        raise blank_content("content")
    clean_tags = tag_list(tags) or []
    store = memory_store(ctx)
    memory = store.create(parsed, content, priority, disclosure or "", clean_tags, author=ctx.member)
    similar = [
        SimilarMemory(uri=row.uri, similarity=round(degree, 3)) for row, degree in store.similar(memory)
    ]
    en, zh = f"Created {memory.uri} (priority {priority}).", f"已创建 {memory.uri}（优先级 {priority}）。"
    if similar:
        first, alike = similar[0].uri, f"{similar[0].similarity:.0%}"
        en += f" {first} says nearly the same ({alike} alike): update it rather than keep two."
        zh += f"{first} 的内容几乎相同（相似度 {alike}）：可改为更新它，而不是保留两份。"
    return (
        CreateMemoryOutput(
            uri=memory.uri, id=memory.id, created_at=memory.created_at, memory=record(memory), similar=similar
        )
        .with_links(touched(ctx, memory.uri, memory.tags))
        .with_message(Text(en=en, zh=zh))
    )


def _invalid_combination(en: str, zh: str, argument: str) -> ToolError:
    return ToolError(
        "INVALID_ARGUMENT",
        Text(en=en, zh=zh),
        hint=Text(
            en="Modes: patch (old_string + new_string), append (append=true + content), replace (content), "
            "or metadata only (priority, disclosure, status).",
            zh="模式：补丁（old_string + new_string）、追加（append=true + content）、全量替换（content），"
            "或仅元数据（priority、disclosure、status）。",
        ),
        details={"argument": argument},
    )


def blank_content(argument: str) -> ToolError:
    """The error for a memory left without text (the spec: content must not be empty)."""
    if argument == "new_string":
        en, zh = (
            "The patch would leave the memory empty or only whitespace.",
            "该补丁会使记忆为空或只剩空白。",
        )
    else:
        en, zh = f"{argument} is empty or only whitespace.", f"参数 {argument} 为空或只有空白。"
    return ToolError(
        "INVALID_ARGUMENT",
        Text(en=en, zh=zh),
        hint=Text(
            en="A memory needs some text; to remove one, use delete_memory.",
            zh="记忆需要有文字内容；要删除记忆，请用 delete_memory。",
        ),
        details={"argument": argument},
    )


def _update_mode(
    content: str | None, old_string: str | None, new_string: str | None, append: bool
) -> Literal["patch", "append", "replace"] | None:
    if old_string is not None or new_string is not None:
        if old_string is None or new_string is None:
            missing = "old_string" if old_string is None else "new_string"
            raise _invalid_combination(
                f"A patch needs both old_string and new_string ({missing} is missing).",
                f"补丁需要同时提供 old_string 和 new_string（缺少 {missing}）。",
                missing,
            )
        if content is not None or append:
            raise _invalid_combination(
                "A patch (old_string/new_string) cannot be combined with content or append.",
                "补丁（old_string/new_string）不能与 content 或 append 同时使用。",
                "content" if content is not None else "append",
            )
        if old_string == "":
            raise _invalid_combination("old_string must not be empty.", "old_string 不能为空。", "old_string")
        return "patch"
    if append:
        if content is None:
            raise _invalid_combination(
                "append=true needs content (the text to add).",
                "append=true 需要提供 content（要追加的文本）。",
                "content",
            )
        return "append"
    return "replace" if content is not None else None


def update_memory(
    ctx: ToolContext[Settings],
    uri: UriArg,
    content: Annotated[
        str | None,
        Field(description="New content, or the text to append", max_length=MAX_CONTENT),
    ] = None,
    old_string: Annotated[
        str | None,
        Field(description="Patch: text to replace", max_length=MAX_CONTENT),
    ] = None,
    new_string: Annotated[str | None, Field(description="Patch: replacement", max_length=MAX_CONTENT)] = None,
    append: Annotated[bool, Field(description="Append content")] = False,
    priority: OptionalPriority = None,
    disclosure: Annotated[str | None, Field(description="New disclosure", max_length=MAX_DISCLOSURE)] = None,
    status: Annotated[
        Literal["active", "deprecated", "archived"] | None,
        Field(description="New status"),
    ] = None,
    tags: Annotated[
        list[Tag] | None,
        Field(
            description="New tags, replacing all ([] removes them)",
            max_length=32,
        ),
    ] = None,
) -> UpdateMemoryOutput:
    """Change a memory as a new version: patch (old_string + new_string, old_string once), append (append=true
    + content), replace (content), and/or metadata (priority, disclosure, status, tags).
    """
    from hostd_memory.store import Change, memory_store
    from hostd_memory.store.refusals import patch_conflict

    mode = _update_mode(content, old_string, new_string, append)
    if mode is None and priority is None and disclosure is None and status is None and tags is None:
        raise _invalid_combination(
            "Nothing to update: give content, a patch, or metadata (priority, disclosure, status, tags).",
            "没有要更新的内容：请提供 content、补丁或元数据（priority、disclosure、status、tags）。",
            "content",
        )
    target = writable_uri(uri, "uri")
    new_tags = tag_list(tags)
    edit: Callable[[str], tuple[str, str]] | None = None
    if mode == "patch":
        assert old_string is not None
        assert new_string is not None

        def edit(current: str) -> tuple[str, str]:
            occurrences = current.count(old_string)
            if occurrences != 1:
                raise patch_conflict(occurrences)
            patched = current.replace(old_string, new_string, 1)
            if not patched.strip():
                raise blank_content("new_string")
            return patched, "patch"
    elif mode == "append":
        addition = content or ""

        def edit(current: str) -> tuple[str, str]:
            joiner = "\n" if current and addition and not current.endswith("\n") else ""
            return current + joiner + addition, "append"
    elif mode == "replace":
        replacement = content or ""
        if not replacement.strip():
            raise blank_content("content")

        def edit(current: str) -> tuple[str, str]:
            return replacement, "replace"

    memory, kind = memory_store(ctx).update(
        str(target),
        edit=edit,
        change=Change(priority=priority, disclosure=disclosure, status=status, tags=new_tags),
        author=ctx.member,
    )
    if kind is None:
        return UpdateMemoryOutput(
            uri=memory.uri,
            mode=mode or "metadata",
            previous_version=memory.version,
            memory=record(memory),
        ).with_message(
            Text(
                en=f"{memory.uri} already holds this; nothing changed (still version {memory.version}).",
                zh=f"{memory.uri} 已是该内容，未作改动（仍为版本 {memory.version}）。",
            )
        )
    return (
        UpdateMemoryOutput(
            uri=memory.uri,
            mode=cast(UpdateMode, kind),
            previous_version=memory.version - 1,
            memory=record(memory),
        )
        .with_links(touched(ctx, memory.uri, memory.tags))
        .with_message(
            Text(
                en=f"Updated {memory.uri} ({kind}); now version {memory.version}.",
                zh=f"已更新 {memory.uri}（{kind}），当前版本 {memory.version}。",
            )
        )
    )


def delete_memory(
    ctx: ToolContext[Settings],
    uri: UriArg,
    force: Annotated[bool, Field(description="Delete for good (no undo)")] = False,
) -> DeleteMemoryOutput:
    """Soft-delete a memory (rollback_memory restores it); force=true removes it and its versions for good.
    Deleting an alias removes only the alias.
    """
    from hostd_memory.store import memory_store

    parsed = writable_uri(uri, "uri")
    store = memory_store(ctx)
    target = store.remove_alias(str(parsed))
    if target is not None:
        ctx.resource_changed(resource_uri(str(parsed)), resource_uri(target))
        return DeleteMemoryOutput(uri=str(parsed), action="alias_removed", target_uri=target).with_message(
            Text(
                en=f"Removed the alias {parsed}; the memory {target} is unchanged.",
                zh=f"已删除别名 {parsed}；记忆 {target} 未受影响。",
            )
        )
    if force:
        confirm_purge(ctx, store, str(parsed))
        memory, versions, aliases = store.purge(str(parsed))
        ctx.resource_changed(resource_uri(memory.uri), *(resource_uri(alias) for alias in aliases))
        return DeleteMemoryOutput(
            uri=memory.uri, action="removed", removed_versions=versions, removed_aliases=aliases
        ).with_message(
            Text(
                en=f"Removed {memory.uri} for good, with {versions} version(s) and {len(aliases)} alias(es).",
                zh=f"已彻底删除 {memory.uri}，包括 {versions} 个版本和 {len(aliases)} 个别名。",
            )
        )
    memory = store.soft_delete(str(parsed), author=ctx.member)
    ctx.resource_changed(resource_uri(memory.uri))
    touched(ctx, memory.uri, memory.tags)
    return DeleteMemoryOutput(uri=memory.uri, action="soft_deleted", memory=record(memory)).with_message(
        Text(
            en=f"Deleted {memory.uri} (soft: rollback_memory to version {memory.version - 1} restores it).",
            zh=f"已删除 {memory.uri}（软删除：rollback_memory 回滚到版本 {memory.version - 1} 即可恢复）。",
        )
    )


def confirm_purge(ctx: ToolContext[Settings], store: MemoryStore, uri: str) -> None:
    """Ask the user before a memory goes for good (nothing is asked for one that does not exist);
    ``NotConfirmed`` unless they accept or the client cannot ask."""
    memory, _ = store.resolve(uri, include_deleted=True)
    aliases = len(memory.aliases)
    answer = ctx.confirm_sync(
        Text(
            en=f"Delete the memory {memory.uri} for good, with all its versions and {aliases} alias(es)? "
            "This cannot be undone.",
            zh=f"彻底删除记忆 {memory.uri}，连同其全部版本和 {aliases} 个别名？此操作无法撤销。",
        )
    )
    if answer == "declined" or answer == "cancelled":
        raise NotConfirmed(answer, Text(en=f"{memory.uri} is kept as it was.", zh=f"{memory.uri} 保持原样。"))


def _slug(title: str) -> str:
    slug = re.sub(r"[^\w]+", "-", title.lower(), flags=re.UNICODE).strip("-_")
    return slug[:60].strip("-_") or "session"


def save_session(
    ctx: ToolContext[Settings],
    title: Annotated[str | None, Field(description="Session title", max_length=200)] = None,
    summary: Annotated[
        str | None,
        Field(
            description="Session summary",
            max_length=MAX_CONTENT,
        ),
    ] = None,
) -> SaveSessionOutput:
    """Record the current session; with a summary, also save it as a memory at session://YYYY-MM-DD/<slug>."""
    from hostd_db import utc_now

    from hostd_memory.store import memory_store

    clean_title = " ".join((title or "").split())
    today = utc_now().date().isoformat()
    if not clean_title:  # the title is stored: in the server's language
        clean_title = ctx.render(Text(en=f"Session {today}", zh=f"会话 {today}"))
    memory_spec = None
    body = (summary or "").strip()
    if body:
        uri = MemoryUri("session", f"{today}/{_slug(clean_title)}")
        memory_spec = (uri, f"# {clean_title}\n\n{body}", 5)
    session_id, stamp, memory = memory_store(ctx).save_session(
        clean_title, body, memory_spec, author=ctx.member
    )
    session = SessionRecord(
        id=session_id,
        title=clean_title,
        summary=body,
        created_at=stamp,
        memory_uri=memory.uri if memory else None,
    )
    if memory is None:
        message = Text(
            en=f"Recorded session {session_id} ({clean_title}); no summary, so no memory.",
            zh=f"已记录会话 {session_id}（{clean_title}）；没有摘要，因此未创建记忆。",
        )
    else:
        message = Text(
            en=f"Recorded session {session_id} and saved its summary at {memory.uri}.",
            zh=f"已记录会话 {session_id}，摘要已保存到 {memory.uri}。",
        )
    answer = SaveSessionOutput(session=session, memory=record(memory) if memory else None)
    if memory is not None:
        answer = answer.with_links(touched(ctx, memory.uri, memory.tags))
    return answer.with_message(message)
