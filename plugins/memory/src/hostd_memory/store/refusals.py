"""What the store refuses, said where the store finds it: ``ToolError``s with bilingual ``Text``.

The store knows why a request cannot be done (no memory at that URI, the URI is taken, no such
version...), so it raises the error the client sees, and the host renders it in the server's
language. There is no second family of store exceptions for the tools to translate.
"""

from __future__ import annotations

from hostd import Text, ToolError


def not_found(uri: str, *, deleted: bool = False) -> ToolError:
    """No memory (or alias) at ``uri``; ``deleted`` when there is one, soft-deleted."""
    if deleted:
        return ToolError(
            "NOT_FOUND",
            Text(en=f"Memory {uri} was deleted.", zh=f"记忆 {uri} 已被删除。"),
            hint=Text(
                en="list_rollbacks shows its versions and rollback_memory restores it; "
                "delete_memory with force=true removes it for good.",
                zh="list_rollbacks 可查看其版本，rollback_memory 可恢复；"
                "delete_memory 加 force=true 可彻底删除。",
            ),
            details={"uri": uri, "deleted": True},
        )
    return ToolError(
        "NOT_FOUND",
        Text(en=f"No memory at {uri}.", zh=f"{uri} 处没有记忆。"),
        hint=Text(
            en="search_memory finds memories by their words; read system://index lists every URI.",
            zh="可用 search_memory 按内容查找；读取 system://index 可列出全部 URI。",
        ),
        details={"uri": uri},
    )


def already_exists(uri: str, existing: str, target: str | None = None) -> ToolError:
    """``uri`` is taken: by a memory, a deleted memory or an alias of ``target`` (``existing``)."""
    if existing == "alias":
        message = Text(en=f"{uri} is already an alias of {target}.", zh=f"{uri} 已是 {target} 的别名。")
    elif existing == "deleted":
        message = Text(en=f"{uri} belongs to a deleted memory.", zh=f"{uri} 属于一条已删除的记忆。")
    else:
        message = Text(en=f"A memory already exists at {uri}.", zh=f"{uri} 处已有记忆。")
    return ToolError(
        "ALREADY_EXISTS",
        message,
        hint=Text(
            en="Use update_memory to change it, pick another URI, or (for a deleted one) restore it with "
            "rollback_memory or remove it with delete_memory force=true.",
            zh="可用 update_memory 修改，或换一个 URI；若已删除，可用 rollback_memory 恢复或 "
            "delete_memory（force=true）彻底删除。",
        ),
        details={"uri": uri, "existing": existing, "target": target},
    )


def patch_conflict(occurrences: int) -> ToolError:
    """A patch's ``old_string`` does not occur exactly once."""
    return ToolError(
        "CONFLICT",
        Text(
            en=f"old_string occurs {occurrences} times in the memory; it must occur exactly once.",
            zh=f"old_string 在记忆中出现了 {occurrences} 次，必须恰好出现一次。",
        ),
        hint=Text(
            en="Read the memory and give a longer old_string that is unique (or 0 times: check "
            "spelling and whitespace).",
            zh="请先读取记忆，给出更长、唯一的 old_string（出现 0 次时请检查拼写和空白）。",
        ),
        details={"argument": "old_string", "occurrences": occurrences},
    )


def version_not_found(uri: str, version: int, current: int) -> ToolError:
    return ToolError(
        "NOT_FOUND",
        Text(
            en=f"{uri} has no version {version}; its versions are 1 to {current}.",
            zh=f"{uri} 没有版本 {version}；现有版本为 1 到 {current}。",
        ),
        hint=Text(en="get_memory_versions lists them.", zh="可用 get_memory_versions 查看。"),
        details={"uri": uri, "version": version, "current_version": current},
    )


def self_link(uri: str) -> ToolError:
    """Both ends of a link lead to the same memory."""
    return ToolError(
        "INVALID_ARGUMENT",
        Text(
            en=f"from_uri and to_uri both lead to {uri}: a memory cannot be linked to itself.",
            zh=f"from_uri 与 to_uri 都指向 {uri}：记忆不能链接到自身。",
        ),
        hint=Text(
            en="Link two different memories (an alias leads to the memory it names).",
            zh="请链接两条不同的记忆（别名指向其所代表的记忆）。",
        ),
        details={"argument": "to_uri", "uri": uri},
    )


def link_not_found(from_uri: str, to_uri: str, relation: str | None) -> ToolError:
    which = (
        Text(en=f" with relation {relation!r}", zh=f"（关系 {relation!r}）")
        if relation is not None
        else Text.same("")
    )
    return ToolError(
        "NOT_FOUND",
        Text(en=f"There is no link from {from_uri} to {to_uri}", zh=f"没有从 {from_uri} 到 {to_uri} 的链接")
        + which
        + Text(en=".", zh="。"),
        hint=Text(
            en="read_memory lists a memory's links in both directions.",
            zh="read_memory 会列出记忆双向的链接。",
        ),
        details={"from_uri": from_uri, "to_uri": to_uri, "relation": relation},
    )
