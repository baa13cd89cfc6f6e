"""One test per hook, named ``test_hook_<hook>`` (datasette's convention).

Each proves the host calls the hook with what the hookspec documents and that the hook's
effect happens. ``test_every_hook_has_a_test`` fails when a hook is added without one, and
the docstring and README checks keep the contract written down.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Protocol

import mcp_types as types
import pluggy
import pytest
from hostd.core.commands import CommandSpec
from hostd.core.config import config_from_mapping
from hostd.core.errors import HostError
from hostd.core.host import Host
from hostd.core.plugins import make_plugin_manager
from hostd_db import AddColumn, Column, ColumnType, Database, Schema, Table, describe_url
from hostd_testing import in_memory_client
from hostd_testing.calls import call, envelope_error, envelope_ok
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field

from hostd import (
    CommandOption,
    CopyReport,
    PluginContext,
    PromptArgumentInfo,
    PromptInfo,
    PromptText,
    Record,
    RecordKind,
    ResourceInfo,
    ResourceLink,
    ResourcePage,
    ResourceText,
    Text,
    ToolContext,
    ToolError,
    ToolOutput,
    hookimpl,
    hookspecs,
)

ROOT = Path(__file__).resolve().parents[2]
FAKE_DATABASE_URL = "postgresql://tester@127.0.0.1:1/never-connected"
URL_ENV = "HOSTD_HOOK_TEST_DATABASE_URL"


def make_host(data_dir: Path, extra: Mapping[str, object], **config: Any) -> Host:
    """A host running the in-line plugins ``extra``; ``config`` holds the other top-level keys."""
    raw = {"profiles": {"default": {"plugins": list(extra)}}, **config}
    return Host(config_from_mapping(raw, data_dir=data_dir), extra_plugins=extra)


class Greeting(ToolOutput):
    text: str


class GreeterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = "hello"
    volume: int = Field(default=1, ge=1, le=3)


def greet(ctx: ToolContext[GreeterSettings], name: Annotated[str, Field(description="who")]) -> Greeting:
    """Greet someone with the configured greeting."""
    return Greeting(text=f"{ctx.settings.greeting}, {name}" + "!" * ctx.settings.volume)


# --- hostd_settings_model ------------------------------------------------------------------


def test_hook_hostd_settings_model(hostd_data_dir: Path) -> None:
    calls: list[tuple[Any, ...]] = []

    class Plugin:
        @hookimpl
        def hostd_settings_model(self, *arguments: Any) -> type[BaseModel]:
            calls.append(arguments)
            return GreeterSettings

    configured = make_host(
        hostd_data_dir, {"greeter": Plugin()}, plugins={"greeter": {"greeting": "hi"}}
    ).contexts["greeter"]
    assert calls == [()]  # called once, with no arguments
    # The model validates the plugin's section: values from the config, the model's defaults for the rest.
    assert configured.settings == GreeterSettings(greeting="hi", volume=1)
    assert make_host(hostd_data_dir, {"greeter": Plugin()}).contexts["greeter"].settings == GreeterSettings()
    with pytest.raises(HostError, match=r"plugins\.greeter.*volume"):
        make_host(hostd_data_dir, {"greeter": Plugin()}, plugins={"greeter": {"volume": 9}})
    with pytest.raises(HostError, match=r"plugins\.greeter.*loud"):
        make_host(hostd_data_dir, {"greeter": Plugin()}, plugins={"greeter": {"loud": True}})


# --- hostd_register_tools ------------------------------------------------------------------


@pytest.mark.anyio
async def test_hook_hostd_register_tools(hostd_data_dir: Path) -> None:
    seen: list[PluginContext[Any]] = []

    class Plugin:
        @hookimpl
        def hostd_settings_model(self) -> type[BaseModel]:
            return GreeterSettings

        @hookimpl
        def hostd_register_tools(self, register: Any, context: PluginContext[GreeterSettings]) -> None:
            seen.append(context)
            register(greet, access="read", idempotent=True)

    plugins = {"greeter": Plugin()}
    async with in_memory_client(
        ["greeter"], data_dir=hostd_data_dir, extra_plugins=plugins, settings={"greeter": {"volume": 2}}
    ) as client:
        # Called once, with this plugin's own context (its name and validated settings).
        assert [(c.name, c.settings) for c in seen] == [("greeter", GreeterSettings(volume=2))]
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(tools) == ["greet"]
        assert tools["greet"].description == "Greet someone with the configured greeting."
        assert tools["greet"].annotations is not None
        assert tools["greet"].annotations.read_only_hint is True
        assert tools["greet"].annotations.idempotent_hint is True
        assert await call(client, "greet", name="Ada") == envelope_ok(text="hello, Ada!!")
        assert await call(client, "greet") == envelope_error(
            "INVALID_ARGUMENT", "Missing required argument 'name'.", hint="'name' expects string: who"
        )


# --- hostd_register_services ---------------------------------------------------------------


@pytest.mark.anyio
async def test_hook_hostd_register_services(hostd_data_dir: Path) -> None:
    seen: list[str] = []

    class Offers:
        @hookimpl
        def hostd_settings_model(self) -> type[BaseModel]:
            return GreeterSettings

        @hookimpl
        def hostd_register_services(self, register: Any, context: PluginContext[GreeterSettings]) -> None:
            seen.append(context.name)
            register("greeter.say", lambda name: f"{context.settings.greeting}, {name}")

    class Say(Protocol):
        def __call__(self, name: str) -> str: ...

    def relay(ctx: ToolContext[None], name: Annotated[str, Field(description="who")]) -> Greeting:
        """Greet through the other plugin's service."""
        say = ctx.services.get("greeter.say", Say)
        return Greeting(text=say(name) if say else "nobody to say it")

    class Uses:
        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(relay)

    plugins = {"greeter": Offers(), "user": Uses()}
    async with in_memory_client(
        ["greeter", "user"],
        data_dir=hostd_data_dir,
        extra_plugins=plugins,
        settings={"greeter": {"greeting": "hej"}},
    ) as client:
        assert seen == ["greeter"]  # called once, with the offering plugin's context
        assert await call(client, "relay", name="Ada") == envelope_ok(text="hej, Ada")
    async with in_memory_client(["user"], data_dir=hostd_data_dir, extra_plugins=plugins) as client:
        # Without the offering plugin the service is absent and its user degrades.
        assert await call(client, "relay", name="Ada") == envelope_ok(text="nobody to say it")
    host = make_host(hostd_data_dir, plugins)
    assert host.services.find("greeter.say") is not None
    assert host.services.find("greeter.other") is None
    with pytest.raises(HostError, match=r"greeter\.say"):  # a name offered twice is a start-up error
        make_host(hostd_data_dir, {"greeter": Offers(), "again": Offers()})


# --- hostd_register_resources --------------------------------------------------------------


NOTES = {"a": "first note", "b": "second note", "c": "third note"}


class Noted(ToolOutput):
    name: str


def show_note(ctx: ToolContext[GreeterSettings], name: Annotated[str, Field(description="which")]) -> Noted:
    """Show a note and link to it."""
    return Noted(name=name).with_links(ResourceLink(uri=f"note://{name}", name=name, mime_type="text/plain"))


def list_notes(ctx: ToolContext[GreeterSettings], cursor: str | None) -> ResourcePage:
    """Two notes a page: the cursor is the name to start at."""
    names = sorted(NOTES)
    start = names.index(cursor) if cursor else 0
    page = names[start : start + 2]
    following = names[start + 2] if start + 2 < len(names) else None
    resources = [ResourceInfo(uri=f"note://{n}", name=n, mime_type="text/plain") for n in page]
    return ResourcePage(resources=resources, next_cursor=following)


def read_note(ctx: ToolContext[GreeterSettings], params: dict[str, str]) -> ResourceText:
    if params["name"] not in NOTES:
        raise ToolError("NOT_FOUND", Text(en="No such note.", zh="没有这条笔记。"))
    text = f"{ctx.settings.greeting}: {NOTES[params['name']]} (read by {ctx.member})"
    return ResourceText(uri=f"note://{params['name']}", text=text)


@pytest.mark.anyio
async def test_hook_hostd_register_resources(hostd_data_dir: Path) -> None:
    seen: list[str] = []

    class Notes:
        @hookimpl
        def hostd_settings_model(self) -> type[BaseModel]:
            return GreeterSettings

        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(show_note, access="read")
            register(greet, access="read")

        @hookimpl
        def hostd_register_resources(self, register: Any, context: PluginContext[GreeterSettings]) -> None:
            seen.append(context.name)
            register(
                "note://{name}",
                name="note",
                title="Note",
                description="A short note",
                mime_type="text/plain",
                list=list_notes,
                read=read_note,
                tool="show_note",
            )

    plugins = {"notes": Notes()}
    async with in_memory_client(
        ["notes"], data_dir=hostd_data_dir, extra_plugins=plugins, settings={"notes": {"greeting": "hej"}}
    ) as client:
        assert seen == ["notes"]  # called once, with the plugin's own context
        first = await client.list_resources()
        assert [r.uri for r in first.resources] == ["note://a", "note://b"]
        assert first.next_cursor
        second = await client.list_resources(cursor=first.next_cursor)
        assert [r.uri for r in second.resources] == ["note://c"]
        assert second.next_cursor is None
        templates = await client.list_resource_templates()
        assert [(t.uri_template, t.name, t.mime_type) for t in templates.resource_templates] == [
            ("note://{name}", "note", "text/plain")
        ]
        read = (await client.read_resource("note://b")).contents[0]
        assert isinstance(read, types.TextResourceContents)
        assert read.text.startswith("hej: second note (read by ")
        for missing in ("note://zzz", "other://b"):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(missing)
            assert caught.value.error.code == -32002
            assert caught.value.error.data["uri"] == missing
        with pytest.raises(MCPError) as bad_cursor:
            await client.list_resources(cursor="not-ours")
        assert bad_cursor.value.error.code == -32602
        # A tool's links come back as resource_link blocks beside the envelope's text.
        shown = await client.call_tool("show_note", {"name": "a"})
        assert [block.type for block in shown.content] == ["text", "resource_link"]
        link = shown.content[1]
        assert isinstance(link, types.ResourceLink)
        assert str(link.uri) == "note://a"
    # A profile that does not serve the kind's tool neither lists nor reads its resources.
    limited = {"plugins": ["notes"], "tools": {"notes": {"exclude": ["show_note"]}}}
    async with in_memory_client(
        ["notes"], data_dir=hostd_data_dir, extra_plugins=plugins, config={"profiles": {"default": limited}}
    ) as client:
        capabilities = client.server_capabilities
        assert capabilities is not None
        assert capabilities.resources is not None
        assert (await client.list_resources()).resources == []
        assert (await client.list_resource_templates()).resource_templates == []
        with pytest.raises(MCPError) as caught:
            await client.read_resource("note://a")
        assert caught.value.error.code == -32002
    with pytest.raises(HostError, match="scheme"):

        class Schemeless:
            @hookimpl
            def hostd_register_tools(self, register: Any) -> None:
                register(show_note, access="read")

            @hookimpl
            def hostd_register_resources(self, register: Any) -> None:
                register(
                    "{name}",
                    name="n",
                    title="N",
                    description="d",
                    mime_type="text/plain",
                    list=list_notes,
                    read=read_note,
                    tool="show_note",
                )

        make_host(hostd_data_dir, {"bad": Schemeless()})


def edit_note(
    ctx: ToolContext[GreeterSettings],
    name: Annotated[str, Field(description="which")],
    fail: Annotated[bool, Field(description="refuse after reporting")] = False,
) -> Noted:
    """Edit a note: it links to the note edited and reports note://c (its index) as changed too."""
    ctx.resource_changed("note://c", "file:///not/a/resource.txt")
    if fail:
        raise ToolError("CONFLICT", Text(en="Refused.", zh="已拒绝。"))
    return Noted(name=name).with_links(ResourceLink(uri=f"note://{name}", name=name))


@pytest.mark.anyio
async def test_resource_changed_reaches_subscribers_in_both_eras(hostd_data_dir: Path) -> None:
    """``ToolContext.resource_changed`` and the links of a tool that is not read-only reach the
    subscribers of those URIs once the call succeeds; a read-only tool's links, a failed call and
    URIs of no served kind reach nobody."""
    import warnings

    from mcp.client.subscriptions import ResourceUpdated
    from mcp.shared.exceptions import MCPDeprecationWarning

    class Notes:
        @hookimpl
        def hostd_settings_model(self) -> type[BaseModel]:
            return GreeterSettings

        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(show_note, access="read")
            register(edit_note)

        @hookimpl
        def hostd_register_resources(self, register: Any) -> None:
            register(
                "note://{name}",
                name="note",
                title="Note",
                description="A short note",
                mime_type="text/plain",
                list=list_notes,
                read=read_note,
                tool="show_note",
            )

    heard: list[str] = []

    async def collect(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append(str(message.params.uri))

    everything = ["note://a", "note://b", "note://c"]
    async with in_memory_client(
        ["notes"], data_dir=hostd_data_dir, extra_plugins={"notes": Notes()}, message_handler=collect
    ) as client:
        assert client.server_capabilities.resources is not None
        assert client.server_capabilities.resources.subscribe is True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            for uri in everything:
                await client.subscribe_resource(uri)
        await client.call_tool("show_note", {"name": "a"})  # read-only: its link is no change
        await client.call_tool("edit_note", {"name": "b", "fail": True})  # failed: nothing changed
        await client.call_tool("edit_note", {"name": "a"})
        await client.call_tool("show_note", {"name": "a"})  # a round trip: what was sent has arrived
    assert sorted(heard) == ["note://a", "note://c"]

    got: list[str] = []
    async with (
        in_memory_client(
            ["notes"], data_dir=hostd_data_dir, extra_plugins={"notes": Notes()}, mode="2026-07-28"
        ) as client,
        client.listen(resource_subscriptions=everything) as subscription,
    ):
        await client.call_tool("edit_note", {"name": "b", "fail": True})
        await client.call_tool("edit_note", {"name": "b"})
        while len(got) < 2:
            event = await subscription.__anext__()
            assert isinstance(event, ResourceUpdated)
            got.append(event.uri)
    assert sorted(got) == ["note://b", "note://c"]


# --- hostd_register_prompts ----------------------------------------------------------------


RECIPES = {"tea": ["green", "black", "oolong"], "soup": ["miso"]}


def list_recipes(ctx: ToolContext[GreeterSettings]) -> list[PromptInfo]:
    return [
        PromptInfo(
            name=f"cook_{dish}",
            title=f"Cook {dish}",
            description=f"How to make {dish}",
            arguments=[PromptArgumentInfo(name="kind", description="Which kind", required=True)],
        )
        for dish in sorted(RECIPES)
    ]


def get_recipe(ctx: ToolContext[GreeterSettings], name: str, arguments: dict[str, str]) -> PromptText:
    if "kind" not in arguments:
        raise ToolError("INVALID_ARGUMENT", Text(en="Say which kind.", zh="请说明哪一种。"))
    return PromptText(
        description=name, messages=[f"{ctx.settings.greeting}! Make {arguments['kind']} {name[5:]}."]
    )


def complete_recipe(
    ctx: ToolContext[GreeterSettings], prompt: str, argument: str, prefix: str, arguments: dict[str, str]
) -> list[str]:
    return [kind for kind in RECIPES[prompt[5:]] if kind.startswith(prefix)]


def complete_note(
    ctx: ToolContext[GreeterSettings], argument: str, prefix: str, arguments: dict[str, str]
) -> list[str]:
    return [name for name in sorted(NOTES, reverse=True) if name.startswith(prefix)]


@pytest.mark.anyio
async def test_hook_hostd_icon(hostd_data_dir: Path) -> None:
    """The icon goes inline once, on the plugin's first listed tool, and only on its own
    (tests/test_icons.py checks every shipped plugin and what an icon may not hold)."""
    import base64

    svg = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 4 4"><circle cx="2" cy="2" r="2"/></svg>'

    class Painted:
        @hookimpl
        def hostd_settings_model(self) -> type[BaseModel]:
            return GreeterSettings

        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(greet, access="read")
            register(show_note, access="read")

        @hookimpl
        def hostd_icon(self) -> str:
            return svg

    class Plain:
        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(greet, name="plain_greet", access="read")

    plugins = {"painted": Painted(), "plain": Plain()}
    async with in_memory_client(
        ["painted", "plain"], data_dir=hostd_data_dir, extra_plugins=plugins
    ) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == ["greet", "show_note", "plain_greet"]
    [icon] = tools["greet"].icons or []
    assert icon.mime_type == "image/svg+xml"
    assert base64.b64decode(icon.src.removeprefix("data:image/svg+xml;base64,")).decode() == svg
    assert tools["show_note"].icons is None
    assert tools["plain_greet"].icons is None


@pytest.mark.anyio
async def test_hook_hostd_register_prompts(hostd_data_dir: Path) -> None:
    seen: list[str] = []

    class Kitchen:
        @hookimpl
        def hostd_settings_model(self) -> type[BaseModel]:
            return GreeterSettings

        @hookimpl
        def hostd_register_tools(self, register: Any) -> None:
            register(greet, access="read")
            register(show_note, access="read")

        @hookimpl
        def hostd_register_prompts(self, register: Any, context: PluginContext[GreeterSettings]) -> None:
            seen.append(context.name)
            register(list=list_recipes, get=get_recipe, complete=complete_recipe, tool="greet")

        @hookimpl
        def hostd_register_resources(self, register: Any) -> None:
            register(
                "note://{name}",
                name="note",
                title="Note",
                description="A note",
                mime_type="text/plain",
                list=list_notes,
                read=read_note,
                complete=complete_note,
                tool="show_note",
            )

    plugins = {"kitchen": Kitchen()}
    async with in_memory_client(
        ["kitchen"], data_dir=hostd_data_dir, extra_plugins=plugins, settings={"kitchen": {"greeting": "hej"}}
    ) as client:
        assert seen == ["kitchen"]
        listed = (await client.list_prompts()).prompts
        assert [(p.name, [(a.name, a.required) for a in p.arguments or []]) for p in listed] == [
            ("cook_soup", [("kind", True)]),
            ("cook_tea", [("kind", True)]),
        ]
        got = await client.get_prompt("cook_tea", {"kind": "green"})
        assert [(m.role, m.content) for m in got.messages] == [
            ("user", types.TextContent(type="text", text="hej! Make green tea."))
        ]
        for name, arguments in (("cook_coffee", {"kind": "x"}), ("cook_tea", {})):
            with pytest.raises(MCPError) as caught:
                await client.get_prompt(name, arguments)
            assert caught.value.error.code == -32602
        ref = types.PromptReference(type="ref/prompt", name="cook_tea")
        completed = await client.complete(ref, {"name": "kind", "value": "o"})
        assert (completed.completion.values, completed.completion.total) == (["oolong"], 1)
        template = types.ResourceTemplateReference(type="ref/resource", uri="note://{name}")
        notes = await client.complete(template, {"name": "name", "value": ""})
        assert notes.completion.values == ["c", "b", "a"]
        unknown = await client.complete(template, {"name": "other", "value": ""})
        assert unknown.completion.values == []
        assert client.server_capabilities is not None
        assert client.server_capabilities.completions is not None
    # A profile without the source's tool lists no prompts and completes nothing of theirs.
    limited = {"plugins": ["kitchen"], "tools": {"kitchen": {"exclude": ["greet", "show_note"]}}}
    async with in_memory_client(
        ["kitchen"], data_dir=hostd_data_dir, extra_plugins=plugins, config={"profiles": {"default": limited}}
    ) as client:
        assert (await client.list_prompts()).prompts == []
        with pytest.raises(MCPError):
            await client.get_prompt("cook_tea", {"kind": "green"})
        ref = types.PromptReference(type="ref/prompt", name="cook_tea")
        assert (await client.complete(ref, {"name": "kind", "value": ""})).completion.values == []
        template = types.ResourceTemplateReference(type="ref/resource", uri="note://{name}")
        assert (await client.complete(template, {"name": "name", "value": ""})).completion.values == []


# --- hostd_database_schema -----------------------------------------------------------------


NOTES_SCHEMA = Schema(
    migrations=[
        [Table("notes", (Column("id", ColumnType.SERIAL), Column("body", ColumnType.TEXT, not_null=True)))],
        [AddColumn("notes", Column("author", ColumnType.KEY))],
    ],
    sqlite_file="notes.db",
)


def _note_and_read_back(database: Database) -> list[tuple[Any, ...]]:
    database.write(lambda c: c.execute("INSERT INTO notes (body, author) VALUES (?, ?)", ("a\x00b", "ada")))
    return database.read(lambda c: [tuple(r) for r in c.execute("SELECT body, author FROM notes").fetchall()])


def test_hook_hostd_database_schema(
    hostd_data_dir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    class Plugin:
        @hookimpl
        def hostd_database_schema(self, context: PluginContext[Any]) -> Schema:
            asked.append(context.name)
            return NOTES_SCHEMA

    class Stateless:
        @hookimpl
        def hostd_database_schema(self, context: PluginContext[Any]) -> None:
            return None

    plugins = {"keeper": Plugin(), "stateless": Stateless()}
    host = make_host(hostd_data_dir, plugins)
    keeper = host.contexts["keeper"]
    assert asked == []  # nothing is asked or opened before the plugin needs its database
    database = keeper.database()
    assert database is keeper.database()
    assert asked == ["keeper"]
    # Without `storage`: the schema's SQLite file in the plugin's data folder, every migration applied.
    assert (database.dialect.name, database.where) == ("sqlite", str(hostd_data_dir / "keeper" / "notes.db"))
    assert _note_and_read_back(database) == [("a\x00b", "ada")]
    assert (database.schema_status().current, database.schema_status().known) == (2, 2)
    with pytest.raises(HostError, match="stateless"):
        host.contexts["stateless"].database()
    assert host.prepare_team_databases(migrate=True) == []  # no team database to prepare
    host.shutdown()
    assert keeper.database() is not database  # closed at shut-down; a later call opens it again

    # With `storage`: the plugin's own schema in the team database, migrated by the host.
    monkeypatch.setenv(URL_ENV, postgres_url)
    team = make_host(hostd_data_dir / "team", plugins, storage={"url_env": URL_ENV, "pool_size": 3})
    statuses = team.prepare_team_databases(migrate=True)
    assert [(name, status.current, status.known) for name, status in statuses] == [("keeper", 2, 2)]
    team_database = team.contexts["keeper"].database()
    assert (team_database.dialect.name, team_database.where) == ("postgres", describe_url(postgres_url))
    assert _note_and_read_back(team_database) == [("a\x00b", "ada")]  # NUL-safe, `?` placeholders
    assert not (hostd_data_dir / "team" / "keeper").exists()  # nothing kept locally
    storage = team.contexts[
        "keeper"
    ].storage  # the resolved `storage` section, on the host's side of the context
    assert storage is not None
    assert (storage.url, storage.pool_size) == (postgres_url, 3)
    assert team.contexts["keeper"].has_team_database
    assert not keeper.has_team_database
    team.shutdown()


# --- hostd_record_store ----------------------------------------------------------------------


class NoteRecords:
    """The notes of one database as records, keyed by id (``hostd.RecordStore``)."""

    record_kinds = (RecordKind("notes", lambda key: Text(en=f"note {key}", zh=f"笔记 {key}")),)
    import_lock = None

    def __init__(self, database: Database, asked: list[str]) -> None:
        self.database, self.asked = database, asked

    def export_records(self) -> Iterator[Record]:
        rows = self.database.read(
            lambda c: c.execute("SELECT id, body, author FROM notes ORDER BY id").fetchall()
        )
        for note_id, body, author in rows:
            yield Record("notes", str(note_id), {"body": body, "author": author})

    def begin_import(self, conn: Any) -> None:
        self.asked.append("begin")

    def find_record(self, conn: Any, kind: str, key: str) -> dict[str, Any] | None:
        row = conn.execute("SELECT body, author FROM notes WHERE id = ?", (int(key),)).fetchone()
        return None if row is None else {"body": row[0], "author": row[1]}

    def import_record(self, conn: Any, record: Record, theirs: Any) -> Text | None:
        conn.execute(
            "INSERT INTO notes (id, body, author) VALUES (?, ?, ?)",
            (int(record.key), record.data["body"], record.data["author"]),
        )
        return None

    def end_import(self, conn: Any) -> None:
        self.asked.append("end")

    def close(self) -> None:
        self.asked.append("closed")
        self.database.close()


def test_hook_hostd_record_store(
    hostd_data_dir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hostd_db import open_database

    asked: list[str] = []

    class Plugin:
        @hookimpl
        def hostd_database_schema(self, context: PluginContext[Any]) -> Schema:
            return NOTES_SCHEMA

        @hookimpl
        def hostd_record_store(self, context: PluginContext[Any], local: bool) -> NoteRecords | None:
            asked.append(f"{context.name} local={local}")
            if not local:
                return NoteRecords(context.database(), asked)
            if not (context.data_dir / "notes.db").exists():
                return None
            return NoteRecords(
                open_database(NOTES_SCHEMA, "keeper", data_dir=context.data_dir, team=None), asked
            )

    class NothingToCopy:
        @hookimpl
        def hostd_record_store(self, context: PluginContext[Any], local: bool) -> None:
            asked.append(f"{context.name} local={local}")
            return None

    plugins = {"keeper": Plugin(), "empty": NothingToCopy()}
    monkeypatch.setenv(URL_ENV, postgres_url)
    host = make_host(hostd_data_dir, plugins, storage={"url_env": URL_ENV})
    host.prepare_team_databases(migrate=True)
    # Nothing stored locally: the team store is asked for, the local one is None, the report is empty.
    assert host.copy_to_team_database() == [("keeper", CopyReport())]
    assert asked == ["keeper local=False", "keeper local=True", "empty local=False"]
    asked.clear()
    local = make_host(hostd_data_dir, plugins)
    _note_and_read_back(local.contexts["keeper"].database())
    local.shutdown()
    progress: list[tuple[str, int]] = []
    reports = host.copy_to_team_database(progress=lambda plugin, read: progress.append((plugin, read)))
    # The plugin's own stores, the host's loop in one transaction, the local store closed after it.
    assert reports == [("keeper", CopyReport(copied={"notes": 1}))]
    assert asked == ["keeper local=False", "keeper local=True", "begin", "end", "closed", "empty local=False"]
    assert _read_notes(host.contexts["keeper"].database()) == [("a\x00b", "ada")]
    assert progress == []  # one record: less than a thousand read
    assert host.copy_to_team_database() == [
        ("keeper", CopyReport(copied={"notes": 0}, unchanged={"notes": 1}))
    ]
    host.shutdown()


def _read_notes(database: Database) -> list[tuple[Any, ...]]:
    return database.read(lambda c: [tuple(r) for r in c.execute("SELECT body, author FROM notes").fetchall()])


# --- hostd_register_views ------------------------------------------------------------------


def test_hook_hostd_register_views(hostd_data_dir: Path, tmp_path: Path) -> None:
    """The plugin's page, action and overview are served at /ui/<plugin>, render its own template
    from its own tool, write as the signed-in member, and get the host's layout and CSRF check."""
    from hostd.core.config import TransportConfig
    from hostd.core.identity import local_member
    from hostd.protocol.guard import HttpPolicy
    from hostd.web.serve import local_app
    from hostd.web.signing import OneTimeToken
    from web_support import NotesPlugin, csrf_of, form_post, notes_host, signed_in_client

    plugin = NotesPlugin(tmp_path / "templates")
    host = notes_host(hostd_data_dir, plugin)
    assert [c.name for c in plugin.view_contexts] == []  # views are collected by the dashboard only
    one_time = OneTimeToken()
    app = local_app(host, one_time, HttpPolicy(TransportConfig(type="http")))
    assert [c.name for c in plugin.view_contexts] == ["notes"]  # called with the plugin's own context
    client = signed_in_client(app, f"/ui/signin?token={one_time.token}")

    page = client.get("/ui/notes")
    assert page.status_code == 200
    assert '<a href="/ui/notes" aria-current="page">Notes</a>' in page.text  # the navigation entry
    assert "<h1>Notes</h1>" in page.text
    assert '<ul id="notes"></ul>' in page.text

    added = form_post(client, "/ui/notes/add", {"csrf": csrf_of(page.text), "text": "**bold** <b>x</b>"})
    assert (added.status_code, added.headers["location"]) == (303, "/ui/notes")
    assert plugin.notes[0].author == local_member()  # written as the signed-in member, through the tool
    shown = client.get("/ui/notes").text
    assert f"Added a note by {local_member()}." in shown  # the action's notice, once
    assert "<strong>bold</strong> &lt;b&gt;x&lt;/b&gt;" in shown  # markdown filter; raw HTML escaped
    assert "Added a note" not in client.get("/ui/notes").text

    refused = form_post(client, "/ui/notes/add", {"text": "no token"})
    assert refused.status_code == 403
    assert len(plugin.notes) == 1

    failing = form_post(client, "/ui/notes/add", {"csrf": csrf_of(shown), "text": "forbidden"})
    assert failing.status_code == 409
    assert "That word is not allowed." in failing.text

    overview = client.get("/ui/").text
    assert "Notes" in overview
    assert "noted **bold** &lt;b&gt;x&lt;/b&gt;" in overview
    assert 'href="/ui/notes"' in overview


# --- hostd_startup / hostd_shutdown --------------------------------------------------------


class LifeCycle:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    @hookimpl
    def hostd_startup(self, context: PluginContext[Any]) -> None:
        self.events.append(f"startup {context.name}")
        context.resource("store", lambda: Closing(self.events, context.name))

    @hookimpl
    def hostd_shutdown(self, context: PluginContext[Any]) -> None:
        self.events.append(f"shutdown {context.name}")


class Closing:
    def __init__(self, events: list[str], name: str) -> None:
        self.events, self.name = events, name

    def close(self) -> None:
        self.events.append(f"closed {self.name}")


class LifeCycleWithTool(LifeCycle):
    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        def tool(ctx: ToolContext[None]) -> Greeting:
            """Note the call."""
            self.events.append("tool called")
            return Greeting(text="noted")

        register(tool, name="note")


@pytest.mark.anyio
async def test_hook_hostd_startup(hostd_data_dir: Path) -> None:
    events: list[str] = []
    plugins = {"one": LifeCycleWithTool(events), "two": LifeCycle(events)}
    host = make_host(hostd_data_dir, plugins)
    assert events == []  # building the host starts nothing
    host.startup()
    # Once per plugin, in load order, with each plugin's own context (what it opens is kept).
    assert events == ["startup one", "startup two"]
    assert host.contexts["one"].resource("store", lambda: Closing([], "not opened twice")).name == "one"
    host.shutdown()
    events.clear()
    async with in_memory_client(["one", "two"], data_dir=hostd_data_dir, extra_plugins=plugins) as client:
        assert await call(client, "note") == envelope_ok(text="noted")
    assert events[:3] == ["startup one", "startup two", "tool called"]  # before any request


def test_hook_hostd_shutdown(hostd_data_dir: Path) -> None:
    events: list[str] = []
    host = make_host(hostd_data_dir, {"one": LifeCycle(events), "two": LifeCycle(events)})
    host.shutdown()
    assert events == []  # never started: nothing to shut down
    host.startup()
    host.shutdown()
    # Reverse order, then the resources the plugins opened are closed (also in reverse).
    assert events == [
        "startup one",
        "startup two",
        "shutdown two",
        "shutdown one",
        "closed two",
        "closed one",
    ]

    class Broken(LifeCycle):
        @hookimpl
        def hostd_shutdown(self, context: PluginContext[Any]) -> None:
            raise RuntimeError("cannot shut down")

    events.clear()
    host = make_host(hostd_data_dir, {"one": LifeCycle(events), "broken": Broken(events)})
    host.startup()
    host.shutdown()  # a failing shutdown is logged; the others still run and resources close
    assert events[-3:] == ["shutdown one", "closed broken", "closed one"]


# --- through pluggy: wrappers and tracing --------------------------------------------------


class Wrapper:
    """Another plugin's wrappers around every plugin's call of two hooks."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    @hookimpl(wrapper=True)
    def hostd_register_tools(self, register: Any, context: PluginContext[Any]) -> Any:
        self.events.append(f"before register_tools {context.name}")
        result = yield
        self.events.append(f"after register_tools {context.name}")
        return result

    @hookimpl(hookwrapper=True)
    def hostd_startup(self, context: PluginContext[Any]) -> Any:
        self.events.append(f"before startup {context.name}")
        yield
        self.events.append(f"after startup {context.name}")


def test_hooks_run_through_pluggy_so_wrappers_and_tracing_apply(hostd_data_dir: Path) -> None:
    events: list[str] = []
    plugins = {"one": LifeCycleWithTool(events), "wrapper": Wrapper(events), "two": LifeCycle(events)}
    host = make_host(hostd_data_dir, plugins)
    assert list(host.tools) == ["note"]
    assert events == [
        "before register_tools one",
        "after register_tools one",
        "before register_tools wrapper",  # the wrapper plugin's own call: only wrappers run
        "after register_tools wrapper",
    ]
    traced: list[str] = []
    host.manager.trace.root.setwriter(traced.append)
    undo = host.manager.enable_tracing()
    try:
        events.clear()
        host.startup()
    finally:
        undo()
    # The old-style hookwrapper runs around each plugin's own implementation and only that one.
    assert events == [
        "before startup one",
        "startup one",
        "after startup one",
        "before startup wrapper",
        "after startup wrapper",
        "before startup two",
        "startup two",
        "after startup two",
    ]
    # pluggy's trace writer logs each call with its arguments, then its result.
    called = [line for line in traced if line.startswith("  hostd_startup [hook]")]
    assert [line.split("name='")[1].split("'")[0] for line in called] == ["one", "wrapper", "two"]
    assert sum(line.startswith("  finish hostd_startup --> []") for line in traced) == 3
    host.shutdown()


def test_a_monitor_sees_the_hook_calls(hostd_data_dir: Path) -> None:
    """``add_hookcall_monitoring`` (pluggy's public tracing) sees each plugin's call and its result."""
    seen: list[tuple[str, list[str]]] = []
    finished: list[tuple[str, object]] = []
    host = make_host(hostd_data_dir, {"one": LifeCycle([]), "two": LifeCycle([])})

    def before(hook_name: str, impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, Any]) -> None:
        seen.append((hook_name, [impl.plugin_name for impl in impls]))

    def after(
        outcome: pluggy.Result[Any],
        hook_name: str,
        impls: Sequence[pluggy.HookImpl],
        kwargs: Mapping[str, Any],
    ) -> None:
        finished.append((hook_name, outcome.get_result()))

    undo = host.manager.add_hookcall_monitoring(before, after)
    try:
        host.startup()
    finally:
        undo()
    assert seen == [("hostd_startup", ["one"]), ("hostd_startup", ["two"])]
    assert finished == [("hostd_startup", []), ("hostd_startup", [])]
    host.shutdown()


# --- hostd_register_commands ---------------------------------------------------------------


def test_hook_hostd_register_commands(hostd_data_dir: Path) -> None:
    """A command names one of the plugin's served tools and which argument each option fills (the
    command line runs it through the pipeline: plugins/tasks/tests/test_tasks_commands.py); a
    tool the profile leaves out has no command; an unknown argument or a bad name stops the host."""
    name_option = CommandOption(("--name",), "name", help="who")

    def greeter(group: str = "hello", argument: str = "name") -> object:
        class Greeter:
            @hookimpl
            def hostd_settings_model(self) -> type[BaseModel]:
                return GreeterSettings

            @hookimpl
            def hostd_register_tools(self, register: Any) -> None:
                register(greet, access="read")

            @hookimpl
            def hostd_register_commands(self, register: Any) -> None:
                option = CommandOption(("--name",), argument, help="who")
                register(
                    group, "greet", tool="greet", help="greet someone", options=[option], prints=["text"]
                )

        return Greeter()

    host = make_host(hostd_data_dir, {"greeter": greeter()})
    assert host.commands == {
        ("hello", "greet"): CommandSpec(
            "greeter", "hello", "greet", "greet", "greet someone", (name_option,), ("text",)
        )
    }
    left_out = {
        "profiles": {"default": {"plugins": ["greeter"], "tools": {"greeter": {"exclude": ["greet"]}}}}
    }
    assert (
        Host(
            config_from_mapping(left_out, data_dir=hostd_data_dir), extra_plugins={"greeter": greeter()}
        ).commands
        == {}
    )
    with pytest.raises(HostError, match="greet has no argument 'nobody'"):
        make_host(hostd_data_dir, {"greeter": greeter(argument="nobody")})
    with pytest.raises(HostError, match="group and name must match"):
        make_host(hostd_data_dir, {"greeter": greeter(group="Hello")})


# --- the contract stays written down and tested --------------------------------------------


def test_every_hook_has_a_test() -> None:
    """A new hookspec needs a ``test_hook_<name>`` here."""
    module = sys.modules[__name__]
    tested = {name.removeprefix("test_hook_") for name in dir(module) if name.startswith("test_hook_")}
    assert set(hookspecs.HOOK_NAMES) - tested == set(), "write test_hook_<name> for each of these"
    assert tested - set(hookspecs.HOOK_NAMES) == set(), "a test_hook_ test names no hook"


@pytest.mark.parametrize("hook", hookspecs.HOOK_NAMES)
def test_hookspec_has_a_docstring(hook: str) -> None:
    assert inspect.getdoc(getattr(hookspecs, hook)), f"{hook} needs a docstring"


@pytest.mark.parametrize("hook", hookspecs.HOOK_NAMES)
def test_hookspec_is_documented_in_the_readme(hook: str) -> None:
    assert f"`{hook}(" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_hook_list_is_complete() -> None:
    """``HOOK_NAMES`` (what the README and the host list) is read off the module's names; pluggy
    registers what carries the ``hookspec`` marker. A ``hostd_`` helper without the marker, or a
    hookspec under another prefix, makes the two differ."""
    manager, _ = make_plugin_manager([])
    registered = {name for name in vars(manager.hook) if not name.startswith("_")}
    assert set(hookspecs.HOOK_NAMES) == registered
    assert registered == {
        "hostd_settings_model",
        "hostd_register_tools",
        "hostd_register_services",
        "hostd_database_schema",
        "hostd_register_resources",
        "hostd_register_prompts",
        "hostd_icon",
        "hostd_startup",
        "hostd_shutdown",
        "hostd_record_store",
        "hostd_register_views",
        "hostd_register_commands",
    }
