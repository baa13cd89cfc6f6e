"""The memory plugin's dashboard pages (``hostd_register_views``): the list with search and
filters, a memory's page (Markdown, tags, aliases, links and their graph, versions), its diff,
and the edit, roll-back and delete actions.

Every read and write goes through the plugin's own tool functions (``request.call``), so a page
shows what the tools return and refuses what they refuse: the same ranking and Chinese handling
as ``search_memory``, the same versions and authors (the signed-in member), the same errors.
Each page or action names the tool it stands for; a member whose profile lacks that tool
neither sees nor may use it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hostd import (
    ActivityItem,
    CodedError,
    Overview,
    OverviewCount,
    PluginContext,
    RegisterViews,
    Text,
    ViewPage,
    ViewRedirect,
    ViewRequest,
    given,
)
from hostd_memory.models import MemoryVersionsOutput, ReadMemoryOutput
from hostd_memory.tools.reading import get_memory_stats, list_memories, read_memory
from hostd_memory.tools.searching import search_memory
from hostd_memory.tools.versions import diff_versions, get_memory_versions, rollback_memory
from hostd_memory.tools.writing import delete_memory, update_memory
from hostd_memory.view_graph import memory_graph

HERE = Path(__file__).parent
PAGE_SIZE = 25
VERSIONS_PAGE = 20
MAX_CONTENT_PAGES = 50  # read_memory pages a long content; a page shows up to 50 of them
FILTER_KEYS = ("q", "tags", "author", "domain", "updated_after", "updated_before", "status")


ERROR_STATUS = {"CONFLICT": 409, "NOT_FOUND": 404, "PERMISSION_DENIED": 403}
STATUS_WORDS = {
    "active": Text(en="active", zh="有效"),
    "deprecated": Text(en="deprecated", zh="已弃用"),
    "archived": Text(en="archived", zh="已归档"),
    "deleted": Text(en="deleted", zh="已删除"),
}
CHANGE_WORDS = {
    "created": Text(en="created", zh="创建"),
    "patch": Text(en="patch", zh="局部修改"),
    "append": Text(en="append", zh="追加"),
    "replace": Text(en="replace", zh="替换"),
    "metadata": Text(en="metadata", zh="元数据"),
    "status": Text(en="status", zh="状态"),
    "rollback": Text(en="rollback", zh="回滚"),
    "import": Text(en="import", zh="导入"),
}


#: What the store writes as a version's change note (``rollback_memory``: "to version 3"; a
#: delete: "deleted"): in the page's language. Any other note is shown as it is.
ROLLBACK_NOTE = re.compile(r"to version (\d+)")
NOTE_WORDS = {"deleted": Text(en="deleted", zh="已删除")}
#: The line a unified diff adds after a last line that has no newline (as diff(1) writes it).
NO_NEWLINE = "\\ No newline at end of file"


def change_note(note: str) -> Text:
    rolled_back = ROLLBACK_NOTE.fullmatch(note)
    if rolled_back is not None:
        return Text(en="to version {v}", zh="回到版本 {v}").format(v=rolled_back.group(1))
    return NOTE_WORDS.get(note, Text.same(note))


def _words(request: ViewRequest) -> dict[str, Any]:
    """Template helpers naming a status or a kind of change in the member's language."""

    def status_label(status: str) -> str:
        word = STATUS_WORDS.get(status)
        return request.text(word) if word else status

    def change_label(change: str) -> str:
        word = CHANGE_WORDS.get(change)
        return request.text(word) if word else change

    def note_label(note: str) -> str:
        return request.text(change_note(note))

    return {"status_label": status_label, "change_label": change_label, "note_label": note_label}


def register_views(register: RegisterViews, context: PluginContext[Any]) -> None:
    register.assets(HERE / "templates")

    async def overview(request: ViewRequest, limit: int) -> Overview:
        return await summarize(request, limit)

    register.page("", memory_list, title=Text(en="Memories", zh="记忆"), tool="list_memories", nav=True)
    register.page("/view", memory_page, title=Text(en="Memory", zh="记忆"), tool="read_memory")
    register.page("/diff", version_diff, title=Text(en="Diff", zh="差异"), tool="diff_versions")
    register.page("/edit", edit_form, title=Text(en="Edit memory", zh="编辑记忆"), tool="update_memory")
    register.action("/edit", save_edit, tool="update_memory")
    register.action("/rollback", roll_back, tool="rollback_memory")
    register.page("/delete", delete_form, title=Text(en="Delete memory", zh="删除记忆"), tool="delete_memory")
    register.action("/delete", delete, tool="delete_memory")
    register.overview(overview, tool="get_memory_stats")
    register.app(
        "memory",
        template="app_memory.html",
        tools=("read_memory", "search_memory"),
        title=Text(en="Memory", zh="记忆"),
        data={"statuses": STATUS_WORDS, "changes": CHANGE_WORDS},
    )


def _tags(raw: str) -> list[str]:
    """Tags typed as ``a, b`` (commas, or the Chinese comma) into a list."""
    return [tag.strip() for tag in raw.replace("，", ",").split(",") if tag.strip()]


# --- the list --------------------------------------------------------------------------------


async def memory_list(request: ViewRequest) -> ViewPage:
    """Search (``search_memory``) when there is a query, else the listing (``list_memories``)."""
    query = request.query
    filters = {key: query.get(key, "") for key in FILTER_KEYS}
    common: dict[str, Any] = {
        "tags": _tags(filters["tags"]) or None,
        "author": given(filters["author"]),
        "domain": given(filters["domain"]),
        "updated_after": given(filters["updated_after"]),
        "updated_before": given(filters["updated_before"]),
        "cursor": given(query.get("cursor")),
        "limit": PAGE_SIZE,
    }
    rows: list[dict[str, Any]] = []
    error = None
    next_cursor = None
    searching = bool(filters["q"].strip())
    try:
        if searching:
            found = await request.call(search_memory, query=filters["q"], **common)
            next_cursor = found.next_cursor
            rows = [
                {
                    "uri": hit.uri,
                    "priority": hit.priority,
                    "tags": hit.tags,
                    "updated_at": hit.updated_at,
                    "author": None,
                    "text": hit.snippet,
                    "status": hit.status,
                    "partial": hit.matched == "any_term",
                }
                for hit in found.hits
            ]
        else:
            listed = await request.call(list_memories, status=given(filters["status"]), **common)
            next_cursor = listed.next_cursor
            rows = [
                {
                    "uri": item.memory.uri,
                    "priority": item.memory.priority,
                    "tags": item.memory.tags,
                    "updated_at": item.memory.updated_at,
                    "author": item.memory.author,
                    "text": item.preview,
                    "status": item.memory.status,
                    "partial": False,
                }
                for item in listed.memories
            ]
    except CodedError as exc:
        error = exc.rendered(request.language)
    title = Text(en="Memories", zh="记忆")
    return ViewPage(
        title=title,
        template="list.html",
        data={
            "filters": filters,
            "rows": rows,
            "error": error,
            "searching": searching,
            "next_cursor": next_cursor,
            "paged": bool(query.get("cursor")),
            **_words(request),
        },
    )


# --- one memory ------------------------------------------------------------------------------


async def _read_whole(request: ViewRequest, uri: str) -> tuple[ReadMemoryOutput, str]:
    """The memory and its whole content (``read_memory`` pages a long one)."""
    first = await request.call(read_memory, uri=uri)
    content = first.content or ""
    cursor = first.next_cursor
    pages = 1
    while cursor and pages < MAX_CONTENT_PAGES:
        more = await request.call(read_memory, uri=uri, cursor=cursor)
        content += more.content or ""
        cursor = more.next_cursor
        pages += 1
    return first, content


async def memory_page(request: ViewRequest) -> ViewPage:
    uri = request.query.get("uri", "")
    read, content = await _read_whole(request, uri)
    assert read.memory is not None
    assert read.relations is not None
    memory = read.memory
    versions: MemoryVersionsOutput | None = None
    if request.can("get_memory_versions"):  # the page stands for read_memory; versions are extra
        versions = await request.call(
            get_memory_versions,
            uri=memory.uri,
            limit=VERSIONS_PAGE,
            cursor=given(request.query.get("vcursor")),
        )
    relations = read.relations
    graph = memory_graph(
        memory.uri, relations, url_of=lambda target: request.url("/view", uri=target), say=request.text
    )
    return ViewPage(
        title=memory.uri,
        template="memory.html",
        data={
            "memory": memory,
            "via_alias": read.via_alias,
            "content": content,
            "relations": relations,
            "versions": versions,
            "versions_paged": bool(request.query.get("vcursor")),
            "graph": graph,
            **_words(request),
        },
    )


async def version_diff(request: ViewRequest) -> ViewPage:
    uri = request.query.get("uri", "")
    try:
        first, second = int(request.query.get("v1", "")), int(request.query.get("v2", ""))
    except ValueError:
        raise CodedError(
            "INVALID_ARGUMENT",
            Text(en="v1 and v2 must be version numbers.", zh="v1 和 v2 必须是版本号。"),
        ) from None
    diff = await request.call(diff_versions, uri=uri, version1=first, version2=second)
    lines = []
    for line in diff.diff.splitlines():
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line == NO_NEWLINE:  # diff(1)'s own words: said in the page's language
            kind, line = "note", request.text(Text(en=NO_NEWLINE, zh="\\ 文件末尾没有换行"))
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        lines.append((kind, line))
    return ViewPage(
        title=Text(en="{uri}: version {a} → {b}", zh="{uri}：版本 {a} → {b}").format(
            uri=diff.uri, a=first, b=second
        ),
        template="diff.html",
        data={"diff": diff, "lines": lines},
    )


# --- changes ---------------------------------------------------------------------------------


async def edit_form(request: ViewRequest) -> ViewPage:
    uri = request.query.get("uri", "")
    read, content = await _read_whole(request, uri)
    assert read.memory is not None
    return _edit_page(read.memory.uri, read.memory.version, content, ", ".join(read.memory.tags), None)


def _edit_page(
    uri: str, version: int, content: str, tags: str, error: tuple[str, str | None, Any] | None
) -> ViewPage:
    return ViewPage(
        title=Text(en="Edit {uri}", zh="编辑 {uri}").format(uri=uri),
        template="edit.html",
        data={"uri": uri, "version": version, "content": content, "tags": tags, "error": error},
        status=200 if error is None else ERROR_STATUS.get(error[2], 400),
    )


async def save_edit(request: ViewRequest) -> ViewPage | ViewRedirect:
    """A new version by the signed-in member, unless someone saved another since the form opened:
    then the form comes back with the text kept, rather than overwriting their version."""
    form = request.form
    uri, content, tags = form.get("uri", ""), form.get("content", ""), form.get("tags", "")
    content = content.replace("\r\n", "\n")
    base = form.get("version", "")
    version = int(base) if base.isdigit() else 0
    try:
        current, current_content = await _read_whole(request, uri)
        assert current.memory is not None
        if current.memory.version != version:
            version = current.memory.version  # saving again now writes over what they saw
            raise CodedError(
                "CONFLICT",
                Text(
                    en="Someone saved version {v} since you opened this form; your text is kept below.",
                    zh="在你打开此表单后，已有人保存了版本 {v}；你的文字保留在下方。",
                ).format(v=version),
                hint=Text(
                    en="Compare with the memory's page, then save again.",
                    zh="请先与记忆页面对照，再重新保存。",
                ),
            )
        arguments: dict[str, Any] = {"uri": current.memory.uri}
        if content != current_content:
            arguments["content"] = content
        new_tags = _tags(tags)
        if new_tags != current.memory.tags:
            arguments["tags"] = new_tags
        if len(arguments) == 1:
            return ViewRedirect(
                "/view", {"uri": current.memory.uri}, Text(en="Nothing changed.", zh="没有改动。")
            )
        updated = await request.call(update_memory, **arguments)
    except CodedError as exc:
        message, hint, _ = exc.rendered(request.language)
        return _edit_page(uri, version, content, tags, (message, hint, exc.code))
    return ViewRedirect(
        "/view",
        {"uri": updated.memory.uri},
        Text(en="Saved as version {v}.", zh="已保存为版本 {v}。").format(v=updated.memory.version),
    )


async def roll_back(request: ViewRequest) -> ViewRedirect:
    uri = request.form.get("uri", "")
    version = request.form.get("version", "")
    if not version.isdigit():
        raise CodedError("INVALID_ARGUMENT", Text(en="Pick a version.", zh="请选择一个版本。"))
    result = await request.call(rollback_memory, uri=uri, version=int(version))
    notice = (
        Text(en="Restored version {a} as version {b}.", zh="已将版本 {a} 恢复为版本 {b}。").format(
            a=result.restored_version, b=result.new_version
        )
        if result.changed
        else Text(en="It already holds that version; nothing changed.", zh="已是该版本的状态，未作改动。")
    )
    return ViewRedirect("/view", {"uri": result.uri}, notice)


async def delete_form(request: ViewRequest) -> ViewPage:
    uri = request.query.get("uri", "")
    read = await request.call(read_memory, uri=uri)
    assert read.memory is not None
    return ViewPage(
        title=Text(en="Delete {uri}?", zh="删除 {uri}？").format(uri=read.memory.uri),
        template="delete.html",
        data={"memory": read.memory},
    )


async def delete(request: ViewRequest) -> ViewRedirect:
    result = await request.call(delete_memory, uri=request.form.get("uri", ""))
    return ViewRedirect(
        "",
        {},
        Text(
            en="Deleted {uri}. Rolling back to its last version restores it.",
            zh="已删除 {uri}。回滚到其最后一个版本即可恢复。",
        ).format(uri=result.uri),
    )


# --- the overview ----------------------------------------------------------------------------


async def summarize(request: ViewRequest, limit: int) -> Overview:
    """The overview's counts, read afresh on every visit: the store keeps them (``memory_counts``)."""
    stats = await request.call(get_memory_stats)
    counts = [
        OverviewCount(Text(en="Total", zh="总数"), stats.total),
        OverviewCount(Text(en="Versions", zh="版本"), stats.version_count),
        OverviewCount(Text(en="Links", zh="链接"), stats.link_count),
        OverviewCount(Text(en="Tags", zh="标签"), stats.tag_count),
    ]
    activity: list[ActivityItem] = []
    if request.can("read_memory"):
        recent = await request.call(read_memory, uri=f"system://recent/{max(1, min(limit, 100))}")
        for item in recent.memories or []:
            record = item.memory
            summary = (
                Text(en="created {uri}", zh="创建了 {uri}")
                if record.version == 1
                else Text(en="wrote version {v} of {uri}", zh="写入了 {uri} 的版本 {v}")
            ).format(uri=record.uri, v=record.version)
            activity.append(
                ActivityItem(record.updated_at, record.author, summary, "/view", {"uri": record.uri})
            )
    return Overview(counts=counts, activity=activity)
