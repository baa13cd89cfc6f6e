"""Resources end to end: memories, tasks and thinking sessions listed, read and offered as templates
by real ``hostd serve`` processes, over stdio and HTTP, in both protocol eras, through the official
Python SDK client; tools answer links to what they wrote or touched; a member whose profile does not
serve a kind's tool neither lists nor reads it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hostd_testing import HttpServer, envelope_of, served_client, write_config
from mcp import Client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


def missing_code(mode: str) -> int:
    """A resource that does not exist: -32002 up to 2025-11-25, -32602 from 2026-07-28 (issue 34)."""
    return -32602 if mode == "2026-07-28" else -32002


TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}


def config(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir(exist_ok=True)
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        f"alice: {TOKENS['alice']}\nbob: {{token: {TOKENS['bob']}, profile: tasks-only}}\n", encoding="utf-8"
    )
    profiles = {
        "default": {
            "plugins": ["summary-writer", "memory", "deep-thinking", "tasks"],
            "transport": {"tokens_file": str(tokens)},
        },
        "tasks-only": {"plugins": ["tasks"]},
    }
    return write_config(
        tmp_path, config={"profiles": profiles, "allowed_roots": [str(notes)], "language": "en"}
    )


@asynccontextmanager
async def connected(
    transport: str, config_path: Path, mode: str, member: str = "alice"
) -> AsyncIterator[Client]:
    if transport == "stdio":
        async with served_client(config_path, mode=mode) as client:
            yield client
        return
    with HttpServer.start(config_path) as http:
        async with http.client(mode=mode, headers={"Authorization": f"Bearer {TOKENS[member]}"}) as client:
            yield client


async def read(client: Client, uri: str) -> types.TextResourceContents:
    contents = (await client.read_resource(uri)).contents[0]
    assert isinstance(contents, types.TextResourceContents), contents
    return contents


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    with anyio.fail_after(60):
        result = await client.call_tool(tool, arguments)
    return envelope_of(result), result.content[1:]


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ERAS)
async def test_records_are_resources_and_tools_link_to_them(
    tmp_path: Path, every_plugin: list[str], mode: str, transport: str
) -> None:
    config_path = config(tmp_path)
    async with connected(transport, config_path, mode) as client:
        created, memory_links = await call(
            client, "create_memory", {"uri": "project://deploy/db", "content": "Postgres 15", "tags": ["db"]}
        )
        task, task_links = await call(client, "create_task", {"title": "Back up the database"})
        thought, session_links = await call(
            client,
            "sequential_thinking",
            {
                "session_id": "plan",
                "thought": "Back up first.",
                "thoughtNumber": 1,
                "totalThoughts": 1,
                "nextThoughtNeeded": False,
            },
        )
        summary, file_links = await call(client, "update_summary", {"content": "# Done", "file_path": "s.md"})
        assert [(link.type, str(link.uri)) for link in memory_links] == [
            ("resource_link", "memory://project/deploy/db")
        ]
        task_id = task["task"]["task_id"]
        assert [str(link.uri) for link in task_links] == [f"task://{task_id}"]
        assert [str(link.uri) for link in session_links] == ["thinking://plan"]
        assert [str(link.uri) for link in file_links] == [Path(summary["file_path"]).as_uri()]

        listed = await client.list_resources()
        uris = [str(resource.uri) for resource in listed.resources]
        assert uris == ["memory://project/deploy/db", "thinking://plan", f"task://{task_id}"]
        assert listed.next_cursor is None
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == [
            "memory://{domain}/{+path}",
            "memory-tag://{tag}",
            "memory-graph://{domain}/{+path}",
            "thinking://{session_id}",
            "task://{task_id}",
            "task-label://{label}",
        ]
        memory = await read(client, "memory://project/deploy/db")
        assert memory.mime_type == "text/markdown"
        assert memory.text.startswith(
            '---\nuri: "project://deploy/db"\npriority: 5\nstatus: "active"\ntags: ["db"]'
        )
        assert memory.text.endswith("---\n\nPostgres 15")
        session = await read(client, "thinking://plan")
        assert session.text.startswith("# plan")
        assert "Back up first." in session.text
        task_text = await read(client, f"task://{task_id}")
        assert task_text.text.startswith(f"# {task_id}: Back up the database\n\n- status: pending")
        assert "## History (1)" in task_text.text
        with pytest.raises(MCPError) as missing:
            await client.read_resource("task://no-such-task")
        assert missing.value.error.code == missing_code(mode)
    assert created["status"] == thought["status"] == "success"


@pytest.mark.parametrize("mode", ERAS)
async def test_a_member_sees_only_the_resources_their_profile_serves(
    tmp_path: Path, every_plugin: list[str], mode: str
) -> None:
    config_path = config(tmp_path)
    with HttpServer.start(config_path) as http:
        headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
        async with http.client(mode=mode, headers=headers) as alice:
            await call(alice, "create_memory", {"uri": "team://secret", "content": "only alice's profile"})
            task, _ = await call(alice, "create_task", {"title": "Shared task"})
        async with http.client(mode=mode, headers={"Authorization": f"Bearer {TOKENS['bob']}"}) as bob:
            listed = [str(r.uri) for r in (await bob.list_resources()).resources]
            templates = [t.uri_template for t in (await bob.list_resource_templates()).resource_templates]
            with pytest.raises(MCPError) as hidden:
                await bob.read_resource("memory://team/secret")
            readable = await read(bob, f"task://{task['task']['task_id']}")
    assert listed == [f"task://{task['task']['task_id']}"]
    assert templates == ["task://{task_id}", "task-label://{label}"]
    assert hidden.value.error.code == missing_code(mode)
    assert "Shared task" in readable.text


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ERAS)
async def test_templates_are_prompts_and_arguments_complete(
    tmp_path: Path, every_plugin: list[str], mode: str, transport: str
) -> None:
    config_path = config(tmp_path)
    async with connected(transport, config_path, mode) as client:
        for session_id in ("release-plan", "retro", "release-notes"):
            await call(
                client,
                "sequential_thinking",
                {
                    "session_id": session_id,
                    "thought": "Start.",
                    "thoughtNumber": 1,
                    "totalThoughts": 2,
                    "nextThoughtNeeded": True,
                },
            )
        task, _ = await call(client, "create_task", {"title": "Write the notes", "task_id": "notes-1"})
        await call(client, "create_memory", {"uri": "ops://deploy/steps", "content": "Run the playbook."})
        prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
        assert {"think_problem_solving"} <= set(prompts)
        assert [(a.name, a.required) for a in prompts["think_problem_solving"].arguments or []] == [
            ("topic", True),
            ("session_id", False),
        ]
        rendered = await client.get_prompt(
            "think_problem_solving", {"topic": "Slow deploys", "session_id": "retro"}
        )
        content = rendered.messages[0].content
        assert isinstance(content, types.TextContent)
        text = content.text
        assert rendered.messages[0].role == "user"
        assert "template_id 'problem_solving'" in text
        assert "session 'retro'" in text
        assert text.endswith("Slow deploys")
        by_prompt = await client.complete(
            types.PromptReference(type="ref/prompt", name="think_problem_solving"),
            {"name": "session_id", "value": "rel"},
        )
        # newest first
        assert by_prompt.completion.values == ["release-notes", "release-plan"]
        sessions = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="thinking://{session_id}"),
            {"name": "session_id", "value": "re"},
        )
        assert sessions.completion.values == ["release-notes", "retro", "release-plan"]
        tasks = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="task://{task_id}"),
            {"name": "task_id", "value": "no"},
        )
        assert tasks.completion.values == [task["task"]["task_id"]]
        paths = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="memory://{domain}/{+path}"),
            {"name": "path", "value": "dep"},
            context_arguments={"domain": "ops"},
        )
        assert paths.completion.values == ["deploy/steps"]
        if mode == "legacy":  # the initialize answer names the server; 2026-07-28 has no handshake
            assert client.server_capabilities.completions is not None
            assert client.server_capabilities.prompts is not None
            assert client.server_info is not None
            assert client.server_info.icons
            assert client.server_info.icons[0].src.startswith("data:image/svg+xml;base64,")


@pytest.mark.parametrize("mode", ERAS)
async def test_tags_and_labels_are_templates_completed_by_recency_and_use(
    tmp_path: Path, every_plugin: list[str], mode: str
) -> None:
    """memory-tag://{tag} and task-label://{label}: read as the records carrying them, completed
    with the tag of the most recently changed record first, then the most used; a member whose
    profile does not serve the listing tool gets neither."""
    config_path = config(tmp_path)
    with HttpServer.start(config_path) as http:
        headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
        async with http.client(mode=mode, headers=headers) as alice:
            for uri, tags in [("a://1", ["Rust", "db"]), ("a://2", ["rust"]), ("a://3", ["release"])]:
                await call(alice, "create_memory", {"uri": uri, "content": f"about {uri}", "tags": tags})
            for task_id, labels in [("t1", ["backend"]), ("t2", ["bug", "backend"]), ("t3", ["build"])]:
                await call(
                    alice, "create_task", {"title": f"Do {task_id}", "task_id": task_id, "labels": labels}
                )
            await call(alice, "update_memory", {"uri": "a://1", "content": "about a://1, again"})
            tag = types.ResourceTemplateReference(type="ref/resource", uri="memory-tag://{tag}")
            label = types.ResourceTemplateReference(type="ref/resource", uri="task-label://{label}")
            tags = (await alice.complete(tag, {"name": "tag", "value": "R"})).completion.values
            everything = (await alice.complete(tag, {"name": "tag", "value": ""})).completion.values
            labels = (await alice.complete(label, {"name": "label", "value": "b"})).completion.values
            tagged = await read(alice, "memory-tag://rust")
            labelled = await read(alice, "task-label://backend")
            with pytest.raises(MCPError) as untagged:
                await alice.read_resource("memory-tag://nobody-uses-this")
            assert (await alice.list_resources()).resources  # tags and labels are not listed
            assert not [r for r in (await alice.list_resources()).resources if "-tag:" in str(r.uri)]
        async with http.client(mode=mode, headers={"Authorization": f"Bearer {TOKENS['bob']}"}) as bob:
            hidden = (await bob.complete(tag, {"name": "tag", "value": ""})).completion.values
            bobs = (await bob.complete(label, {"name": "label", "value": ""})).completion.values
            with pytest.raises(MCPError) as not_served:
                await bob.read_resource("memory-tag://rust")
    assert tags == ["rust", "release"]  # 'R' is typed as the tag is written: rust
    assert everything == ["rust", "db", "release"]  # a://1 changed last: its tags first, rust used more
    assert labels == ["build", "backend", "bug"]  # t3 newest; t2's two: backend used twice
    assert tagged.text == "# Memories tagged rust\n\n- [a://1](memory://a/1): about a://1, again\n" + (
        "- [a://2](memory://a/2): about a://2\n"
    )
    assert labelled.text.splitlines()[0] == "# Tasks labelled backend"
    assert {line.split("]")[0] for line in labelled.text.splitlines()[2:]} == {"- [t1", "- [t2"}
    assert untagged.value.error.code == missing_code(mode)
    assert hidden == []
    assert bobs == ["build", "backend", "bug"]
    assert not_served.value.error.code == missing_code(mode)


async def test_thinking_resource_refuses_the_ids_the_tools_refuse(
    tmp_path: Path, every_plugin: list[str]
) -> None:
    """Issue 32: ``thinking://`` passed ids the tools refuse to the store: ``..`` and a NUL byte
    reached the file system, and an id too long for a file name answered an unhandled error with
    code 0 whose text named the data folder. Each is now the tools' INVALID_ARGUMENT, as invalid
    params, naming the argument and never a path."""
    config_path = config(tmp_path)
    data_dir = str(tmp_path)
    async with served_client(config_path) as client:
        refused = {}
        for session_id in ("..", ".", "a\x00b", "x" * 300, "a%2Fb", "a\n"):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(f"thinking://{session_id}")
            refused[session_id] = caught.value.error
        with pytest.raises(MCPError) as missing:
            await client.read_resource("thinking://no-such-session")
    for session_id, error in refused.items():
        assert (error.code, error.data) == (
            types.INVALID_PARAMS,
            {
                "code": "INVALID_ARGUMENT",
                "argument": "session_id",
                "problem": "string_pattern_mismatch",
                "uri": f"thinking://{session_id}",
            },
        ), session_id
        assert error.message == (
            "Invalid argument 'session_id': it must match ^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$. "
            "Session ids are 1-64 letters, digits, '_', '-' or '.', not starting with '.'."
        )
        assert data_dir not in error.message
    assert (missing.value.error.code, missing.value.error.data) == (
        -32002,
        {"code": "NOT_FOUND", "session_id": "no-such-session", "uri": "thinking://no-such-session"},
    )


async def test_memory_graph_is_the_dashboards_drawing_served_where_read_memory_is(
    tmp_path: Path, every_plugin: list[str]
) -> None:
    """memory-graph://{domain}/{+path}: a memory's neighbourhood as its dashboard page draws it
    (``view_graph.memory_graph`` on read_memory's relations), links to the memory:// resources, in
    the server's language or the one ``?lang=`` asks for; empty for a memory nothing links; served
    only to a member whose profile serves read_memory."""
    from hostd_errors import Text
    from hostd_memory.models import Relations
    from hostd_memory.resources import resource_uri
    from hostd_memory.view_graph import memory_graph

    mode = ERAS[-1]
    config_path = config(tmp_path)
    with HttpServer.start(config_path) as http:
        headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
        async with http.client(mode=mode, headers=headers) as alice:
            await call(alice, "create_memory", {"uri": "a://hub", "content": "see b://spoke"})
            await call(alice, "create_memory", {"uri": "b://spoke", "content": "the spoke"})
            await call(alice, "create_memory", {"uri": "c://alone", "content": "nothing here"})
            await call(
                alice, "link_memories", {"from_uri": "b://spoke", "to_uri": "a://hub", "relation": "依赖"}
            )
            answer, _ = await call(alice, "read_memory", {"uri": "a://hub"})
            drawn = {lang: await read(alice, f"memory-graph://a/hub{lang}") for lang in ("", "?lang=zh")}
            alone = await read(alice, "memory-graph://c/alone")
            with pytest.raises(MCPError) as missing:
                await alice.read_resource("memory-graph://a/nothing")
        async with http.client(mode=mode, headers={"Authorization": f"Bearer {TOKENS['bob']}"}) as bob:
            with pytest.raises(MCPError) as not_served:
                await bob.read_resource("memory-graph://a/hub")
    relations = Relations.model_validate(answer["relations"])
    for lang, language in (("", "en"), ("?lang=zh", "zh")):

        def say(text: Text, language: str = language) -> str:
            return text.render(language)

        expected = memory_graph("a://hub", relations, url_of=resource_uri, say=say)
        assert expected is not None
        assert (drawn[lang].uri, drawn[lang].mime_type, drawn[lang].text) == (
            f"memory-graph://a/hub{lang}",
            "text/html",
            str(expected),
        )
    assert "mentions" in drawn[""].text
    assert "提及" in drawn["?lang=zh"].text
    assert 'href="memory://b/spoke"' in drawn[""].text
    assert (alone.uri, alone.text) == ("memory-graph://c/alone", "")
    assert missing.value.error.code == missing_code(mode)
    assert not_served.value.error.code == missing_code(mode)
