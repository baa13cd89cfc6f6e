"""A small in-line plugin with dashboard pages, and ways to reach the dashboard in tests.

``NotesPlugin`` keeps notes in memory: ``list_notes`` (read-only) and ``add_note`` (writes,
recording ``ctx.member``), a page listing them, an action adding one, and an overview. The
dashboard is driven over real ASGI with Starlette's test client, signed in the way a browser is.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import httpx2 as httpx
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
from pydantic import Field
from starlette.testclient import TestClient

from hostd import (
    ActivityItem,
    Overview,
    OverviewCount,
    RegisterTool,
    RegisterViews,
    Text,
    ToolContext,
    ToolError,
    ToolOutput,
    ViewPage,
    ViewRedirect,
    ViewRequest,
    hookimpl,
)

BASE_URL = "http://127.0.0.1:8765"
TEMPLATE = """{% import "host/macros.html" as ui with context %}
<ul id="notes">{% for note in notes %}
<li class="note">{{ note.author }}: {{ note.text | markdown }}</li>{% endfor %}</ul>
{% if can("add_note") %}<form method="post" action="{{ url('/add') }}">{{ csrf_field() }}
<label for="text">{{ t(en="Note", zh="笔记") }}</label><input id="text" name="text">
<button type="submit">{{ t(en="Add", zh="添加") }}</button></form>{% endif %}
"""


DIAGRAM = """<pre class="mermaid">flowchart LR
{% for note in notes %}  n{{ loop.index }}["{{ note.text | mermaid_text }}"]
{% if not loop.first %}  n{{ loop.index - 1 }} --> n{{ loop.index }}
{% endif %}{% endfor %}</pre>
"""


class Note(ToolOutput):
    text: str
    author: str


class Notes(ToolOutput):
    notes: list[Note]


class NotesPlugin:
    """Notes in a list; the tools are what the pages call."""

    def __init__(self, templates: Path) -> None:
        self.notes: list[Note] = []
        self.templates = templates
        templates.mkdir(parents=True, exist_ok=True)
        (templates / "notes.html").write_text(TEMPLATE, encoding="utf-8")
        (templates / "diagram.html").write_text(DIAGRAM, encoding="utf-8")
        self.view_contexts: list[Any] = []

        def list_notes(ctx: ToolContext[None]) -> Notes:
            """Every note, oldest first."""
            return Notes(notes=list(self.notes))

        def add_note(
            ctx: ToolContext[None],
            text: Annotated[str, Field(description="The note", min_length=1, max_length=200)],
        ) -> Note:
            """Add a note, recorded as written by the calling member."""
            if "forbidden" in text:
                raise ToolError(
                    "CONFLICT",
                    Text(en="That word is not allowed.", zh="不允许该词。"),
                    hint=Text(en="Say it differently.", zh="请换个说法。"),
                )
            note = Note(text=text, author=ctx.member)
            self.notes.append(note)
            return note

        self.list_notes = list_notes
        self.add_note = add_note

    @hookimpl
    def hostd_register_tools(self, register: RegisterTool) -> None:
        register(self.list_notes, access="read")
        register(self.add_note, destructive=False)

    @hookimpl
    def hostd_register_views(self, register: RegisterViews, context: Any) -> None:
        self.view_contexts.append(context)
        list_notes, add_note = self.list_notes, self.add_note

        async def page(request: ViewRequest) -> ViewPage:
            found = await request.call(list_notes)
            return ViewPage(
                title=Text(en="Notes", zh="笔记"), template="notes.html", data={"notes": found.notes}
            )

        async def diagram(request: ViewRequest) -> ViewPage:
            found = await request.call(list_notes)
            return ViewPage(
                title=Text(en="Notes as a diagram", zh="笔记图"),
                template="diagram.html",
                data={"notes": found.notes},
                diagram=True,
            )

        async def add(request: ViewRequest) -> ViewRedirect:
            note = await request.call(add_note, text=request.form.get("text", ""))
            return ViewRedirect(
                "", {}, Text(en="Added a note by {who}.", zh="{who} 添加了笔记。").format(who=note.author)
            )

        async def overview(request: ViewRequest, limit: int) -> Overview:
            found = await request.call(list_notes)
            return Overview(
                counts=[OverviewCount(Text(en="Notes", zh="笔记"), len(found.notes))],
                activity=[
                    ActivityItem(
                        f"2026-01-01T00:00:{index:02d}Z", note.author, Text.same(f"noted {note.text}")
                    )
                    for index, note in enumerate(found.notes[-limit:])
                ],
            )

        register.assets(self.templates)
        register.page("", page, title=Text(en="Notes", zh="笔记"), tool="list_notes", nav=True)
        register.page("/diagram", diagram, title=Text(en="Diagram", zh="图"), tool="list_notes")
        register.action("/add", add, tool="add_note")
        register.overview(overview, tool="list_notes")


def notes_host(data_dir: Path, plugin: NotesPlugin, **config: Any) -> Host:
    """A host serving the notes plugin (profile ``default``), plus a read-only profile ``reader``."""
    raw = {
        "language": "en",
        "profiles": {
            "default": {"plugins": ["notes"]},
            "reader": {"plugins": ["notes"], "tools": {"notes": {"include": ["list_notes"]}}},
        },
        **config,
    }
    return Host(config_from_mapping(raw, "default", data_dir=data_dir), extra_plugins={"notes": plugin})


def csrf_of(page: str) -> str:
    """The CSRF token a page's forms carry."""
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def signed_in_client(app: Any, link: str) -> TestClient:
    """A client that followed the one-time sign-in link (``/ui/signin?token=...``)."""
    client = TestClient(app, base_url=BASE_URL, follow_redirects=False)
    answer = client.get(link)
    assert answer.status_code == 303, answer.text
    return client


def form_post(client: TestClient, path: str, fields: Mapping[str, str], **headers: str) -> httpx.Response:
    return client.post(
        path,
        content=urllib.parse.urlencode(dict(fields)),
        headers={"content-type": "application/x-www-form-urlencoded", **headers},
    )
