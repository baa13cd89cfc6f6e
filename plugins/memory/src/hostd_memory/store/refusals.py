"""What the store refuses, as a table of ``Reason`` by reason name, and the ``ToolError`` each raises.

The store knows why a request cannot be done (no memory at that URI, the URI is taken, no such
version...), so it raises the error the client sees, and the host renders it in the server's
language. ``REFUSALS`` holds every sentence once, in both languages, with ``{name}``
placeholders; the functions below fill them and add the ``details``. There is no second family
of store exceptions for the tools to translate.
"""

from __future__ import annotations

from typing import Any

from hostd_errors import Reason

from hostd import Text, ToolError

_TAKEN_HINT = (
    "Use update_memory to change it, pick another URI, or (for a deleted one) restore it with "
    "rollback_memory or remove it with delete_memory force=true.",
    "可用 update_memory 修改，或换一个 URI；若已删除，可用 rollback_memory 恢复或 "
    "delete_memory（force=true）彻底删除。",
)

#: Reason name -> code, message and hint in both languages.
REFUSALS: dict[str, Reason] = {
    "not_found": Reason(
        "NOT_FOUND",
        "No memory at {uri}.",
        "{uri} 处没有记忆。",
        "search_memory finds memories by their words; read system://index lists every URI.",
        "可用 search_memory 按内容查找；读取 system://index 可列出全部 URI。",
    ),
    "deleted": Reason(
        "NOT_FOUND",
        "Memory {uri} was deleted.",
        "记忆 {uri} 已被删除。",
        "list_rollbacks shows its versions and rollback_memory restores it; "
        "delete_memory with force=true removes it for good.",
        "list_rollbacks 可查看其版本，rollback_memory 可恢复；delete_memory 加 force=true 可彻底删除。",
    ),
    "exists": Reason(
        "ALREADY_EXISTS", "A memory already exists at {uri}.", "{uri} 处已有记忆。", *_TAKEN_HINT
    ),
    "exists_deleted": Reason(
        "ALREADY_EXISTS", "{uri} belongs to a deleted memory.", "{uri} 属于一条已删除的记忆。", *_TAKEN_HINT
    ),
    "exists_alias": Reason(
        "ALREADY_EXISTS",
        "{uri} is already an alias of {target}.",
        "{uri} 已是 {target} 的别名。",
        *_TAKEN_HINT,
    ),
    "patch_conflict": Reason(
        "CONFLICT",
        "old_string occurs {occurrences} times in the memory; it must occur exactly once.",
        "old_string 在记忆中出现了 {occurrences} 次，必须恰好出现一次。",
        "Read the memory and give a longer old_string that is unique (or 0 times: check "
        "spelling and whitespace).",
        "请先读取记忆，给出更长、唯一的 old_string（出现 0 次时请检查拼写和空白）。",
    ),
    "version_not_found": Reason(
        "NOT_FOUND",
        "{uri} has no version {version}; its versions are 1 to {current}.",
        "{uri} 没有版本 {version}；现有版本为 1 到 {current}。",
        "get_memory_versions lists them.",
        "可用 get_memory_versions 查看。",
    ),
    "self_link": Reason(
        "INVALID_ARGUMENT",
        "from_uri and to_uri both lead to {uri}: a memory cannot be linked to itself.",
        "from_uri 与 to_uri 都指向 {uri}：记忆不能链接到自身。",
        "Link two different memories (an alias leads to the memory it names).",
        "请链接两条不同的记忆（别名指向其所代表的记忆）。",
    ),
    "link_not_found": Reason(
        "NOT_FOUND",
        "There is no link from {from_uri} to {to_uri}{relation}.",
        "没有从 {from_uri} 到 {to_uri} 的链接{relation}。",
        "read_memory lists a memory's links in both directions.",
        "read_memory 会列出记忆双向的链接。",
    ),
}


def refusal(reason: str, details: dict[str, Any], **values: Any) -> ToolError:
    """The ``ToolError`` for ``REFUSALS[reason]``, its sentences filled from ``values``."""
    entry = REFUSALS[reason]
    return ToolError(entry.code, entry.message(**values), hint=entry.hint(**values), details=details)


def not_found(uri: str, *, deleted: bool = False) -> ToolError:
    """No memory (or alias) at ``uri``; ``deleted`` when there is one, soft-deleted."""
    if deleted:
        return refusal("deleted", {"uri": uri, "deleted": True}, uri=uri)
    return refusal("not_found", {"uri": uri}, uri=uri)


def already_exists(uri: str, existing: str, target: str | None = None) -> ToolError:
    """``uri`` is taken: by a memory, a deleted memory or an alias of ``target`` (``existing``)."""
    reason = {"alias": "exists_alias", "deleted": "exists_deleted"}.get(existing, "exists")
    return refusal(reason, {"uri": uri, "existing": existing, "target": target}, uri=uri, target=target)


def patch_conflict(occurrences: int) -> ToolError:
    """A patch's ``old_string`` does not occur exactly once."""
    details = {"argument": "old_string", "occurrences": occurrences}
    return refusal("patch_conflict", details, occurrences=occurrences)


def version_not_found(uri: str, version: int, current: int) -> ToolError:
    details = {"uri": uri, "version": version, "current_version": current}
    return refusal("version_not_found", details, uri=uri, version=version, current=current)


def self_link(uri: str) -> ToolError:
    """Both ends of a link lead to the same memory."""
    return refusal("self_link", {"argument": "to_uri", "uri": uri}, uri=uri)


def link_not_found(from_uri: str, to_uri: str, relation: str | None) -> ToolError:
    which = (
        Text(en=f" with relation {relation!r}", zh=f"（关系 {relation!r}）")
        if relation is not None
        else Text.same("")
    )
    details = {"from_uri": from_uri, "to_uri": to_uri, "relation": relation}
    return refusal("link_not_found", details, from_uri=from_uri, to_uri=to_uri, relation=which)
