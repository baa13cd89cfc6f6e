"""Team members as authors: every version names the member who wrote it (``ctx.member``), shown by
read_memory, get_memory_versions, diff_versions and list_rollbacks, filtered by list_memories,
carried by export and import, and null for versions from before members were recorded."""

from __future__ import annotations

import contextlib
import getpass
import itertools
import sqlite3
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from hostd_testing import HttpServer, call, ok, write_config
from memory_support import MemoryClient, sqlite_only

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"


@pytest.fixture
def login_as(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """In process the member is the local login name: switch it to act as another member."""

    def switch(name: str) -> None:
        monkeypatch.setattr(getpass, "getuser", lambda: name)

    return switch


def _authors(versions: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(v["version"], v["author"]) for v in versions]


async def test_in_process_the_author_is_the_local_member(memory_client: MemoryClient) -> None:
    from hostd_testing import local_member

    async with memory_client() as client:
        created = await ok(client, "create_memory", uri="me://note", content="mine")
    assert created["memory"]["author"] == local_member()


async def test_every_versioned_change_names_the_member_who_made_it(
    memory_client: MemoryClient, login_as: Callable[[str], None]
) -> None:
    async with memory_client() as client:
        login_as("alice")
        created = await ok(client, "create_memory", uri="team://plan", content="step one")
        login_as("bob")
        await ok(client, "update_memory", uri="team://plan", content="\nstep two", append=True)
        login_as("carol")
        await ok(client, "update_memory", uri="team://plan", tags=["ops"])
        login_as("dave")
        await ok(client, "update_memory", uri="team://plan", status="deprecated")
        login_as("erin")
        await ok(client, "delete_memory", uri="team://plan")
        login_as("frank")
        rolled = await ok(client, "rollback_memory", uri="team://plan", version=2)
        login_as("grace")  # aliases and links are not versions: they leave the author as it is
        await ok(client, "create_memory", uri="team://other", content="other")
        await ok(client, "add_alias", target_uri="team://plan", alias_uri="team://roadmap")
        await ok(client, "link_memories", from_uri="team://plan", to_uri="team://other", relation="needs")
        read = await ok(client, "read_memory", uri="team://roadmap")
        versions = await ok(client, "get_memory_versions", uri="team://plan")
        diff = await ok(client, "diff_versions", uri="team://plan", version1=1, version2=2)
        rollbacks = await ok(client, "list_rollbacks", uri="team://plan")
        session = await ok(client, "save_session", title="standup", summary="plan reviewed")
    assert created["memory"]["author"] == "alice"
    assert rolled["memory"]["author"] == "frank"
    expected = [(6, "frank"), (5, "erin"), (4, "dave"), (3, "carol"), (2, "bob"), (1, "alice")]
    assert _authors(versions["versions"]) == expected
    assert read["memory"]["author"] == "frank"
    assert read["memory"]["version"] == 6
    assert _authors(read["recent_versions"]) == expected[:5]
    assert (diff["author1"], diff["author2"]) == ("alice", "bob")
    assert _authors(rollbacks["rollbacks"]) == expected[1:]
    assert session["memory"]["author"] == "grace"


async def test_list_memories_filters_by_the_author_of_the_current_version(
    memory_client: MemoryClient, login_as: Callable[[str], None]
) -> None:
    async with memory_client() as client:
        login_as("alice")
        for name in ("a", "b", "c"):
            await ok(client, "create_memory", uri=f"list://{name}", content=f"note {name}")
        login_as("bob")
        await ok(client, "update_memory", uri="list://b", content=" edited", append=True)
        alice = await ok(client, "list_memories", author="alice")
        bob = await ok(client, "list_memories", author="bob", tags=["none-such"])
        bob_all = await ok(client, "list_memories", author="bob")
        nobody = await ok(client, "list_memories", author="nobody")
        first = await ok(client, "list_memories", author="alice", limit=1)
        second = await ok(client, "list_memories", author="alice", limit=1, cursor=first["next_cursor"])
    assert sorted(m["memory"]["uri"] for m in alice["memories"]) == ["list://a", "list://c"]
    assert bob["count"] == 0
    assert [m["memory"]["uri"] for m in bob_all["memories"]] == ["list://b"]
    assert nobody["count"] == 0
    assert {m["memory"]["uri"] for m in first["memories"] + second["memories"]} == {"list://a", "list://c"}


async def test_search_memory_filters_by_the_author_of_the_current_version(
    memory_client: MemoryClient, login_as: Callable[[str], None]
) -> None:
    """The dashboard's search offers the author filter of its listing: search_memory takes it too."""
    async with memory_client() as client:
        login_as("alice")
        for name in ("a", "b", "c"):
            await ok(client, "create_memory", uri=f"find://{name}", content=f"部署 note {name}")
        login_as("bob")
        await ok(client, "update_memory", uri="find://b", content=" 部署 again", append=True)
        alice = await ok(client, "search_memory", query="部署", author="alice")
        bob = await ok(client, "search_memory", query="部署", author="bob")
        everyone = await ok(client, "search_memory", query="部署")
        refused = await call(client, "search_memory", query="部署", author="../bob")
    assert sorted(hit["uri"] for hit in alice["hits"]) == ["find://a", "find://c"]
    assert [hit["uri"] for hit in bob["hits"]] == ["find://b"]
    assert everyone["count"] == 3
    assert refused["error"]["code"] == "INVALID_ARGUMENT"
    assert refused["error"]["details"]["argument"] == "author"


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_a_bad_author_filter_is_invalid_argument_naming_it(
    memory_client: MemoryClient, language: str
) -> None:
    async with memory_client(language=language) as client:
        envelope = await call(client, "list_memories", author="../alice")
    assert envelope["status"] == "error"
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert envelope["error"]["details"]["argument"] == "author"
    assert "'../alice'" in envelope["error"]["message"]
    assert envelope["error"]["hint"]
    if language == "zh":
        text = envelope["error"]["message"] + envelope["error"]["hint"]
        assert "member" not in text
        assert "not" not in text
        assert "成员名" in text


async def test_export_carries_authors_and_import_keeps_them(
    memory_client: MemoryClient, login_as: Callable[[str], None]
) -> None:
    async with memory_client() as client:
        login_as("alice")
        await ok(client, "create_memory", uri="x://one", content="first")
        login_as("bob")
        await ok(client, "update_memory", uri="x://one", content="second")
        exported = await ok(client, "export_memories", include_versions=True)
        await ok(client, "delete_memory", uri="x://one", force=True)
        login_as("carol")  # the importing member: the document's authors win over it
        imported = await ok(client, "import_memories", data=exported)
        versions = await ok(client, "get_memory_versions", uri="x://one")
        login_as("dave")  # an overwrite is a new version by the importing member
        document = exported["document"]
        document["memories"][0]["content"] = "third"
        overwritten = await ok(client, "import_memories", data=document, strategy="overwrite")
        after = await ok(client, "get_memory_versions", uri="x://one")
    memory = exported["document"]["memories"][0]
    assert memory["author"] == "bob"
    assert [(v["version"], v["author"]) for v in memory["versions"]] == [(1, "alice"), (2, "bob")]
    assert imported["created"] == 1
    assert _authors(versions["versions"]) == [(2, "bob"), (1, "alice")]
    assert overwritten["overwritten"] == 1
    assert _authors(after["versions"]) == [(3, "dave"), (2, "bob"), (1, "alice")]


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_import_without_authors_credits_the_importer_and_keeps_unknown_ones_unknown(
    memory_client: MemoryClient, login_as: Callable[[str], None], language: str
) -> None:
    """An older export (no author fields) is the importing member's; ``null`` stays "from before"."""
    stamp = "2025-01-01T00:00:00Z"
    document = {
        "format": "hostd-memory-export",
        "version": 3,
        "memories": [
            {
                "uri": "old://export",
                "content": "v2",
                "version": 2,
                "versions": [{"version": 1, "content": "v1", "priority": 5, "created_at": stamp}],
            },
            {
                "uri": "old://unknown",
                "content": "v2",
                "version": 2,
                "author": None,
                "versions": [
                    {"version": 1, "content": "v1", "priority": 5, "created_at": stamp, "author": None}
                ],
            },
            {"uri": "old://bad", "content": "x", "author": "not a member!"},
        ],
    }
    async with memory_client(language=language) as client:
        login_as("carol")
        imported = await ok(client, "import_memories", data=document)
        credited = await ok(client, "get_memory_versions", uri="old://export")
        unknown = await ok(client, "get_memory_versions", uri="old://unknown")
        missing = await call(client, "read_memory", uri="old://bad")
    assert imported["created"] == 2
    assert missing["error"]["code"] == "NOT_FOUND"
    [problem] = imported["errors"]
    assert problem["index"] == 2
    assert problem["field"] == "author"
    assert problem["code"] == "INVALID_ARGUMENT"
    assert problem["problem"] == "invalid_member_name:author"
    if language == "zh":
        assert problem["message"] == "author 不是有效的成员名（字母、数字、'_'、'-'、'.'）"
    assert _authors(credited["versions"]) == [(2, "carol"), (1, "carol")]
    assert _authors(unknown["versions"]) == [(2, None), (1, None)]


@sqlite_only
async def test_a_database_of_the_schema_before_members_upgrades_with_null_authors(
    memory_client: MemoryClient, hostd_data_dir: Path, login_as: Callable[[str], None]
) -> None:
    """A memory.db of schema 3 (tags and links, no authors) opens; its versions have no author
    ("from before members were recorded") and the next change records its member."""
    from hostd_testing import released_sqlite_file

    path = hostd_data_dir / "memory" / "memory.db"
    from hostd_memory.search import words_text
    from memory_released_schema import MIGRATIONS

    with (
        released_sqlite_file(  # a file made by the release before the shared schema
            path,
            MIGRATIONS[:3],
            on_connect=lambda c: c.create_function("memory_words_text", 1, words_text, deterministic=True),
        ) as tx
    ):
        tx.execute(
            "INSERT INTO memories (uri, domain, path, content, priority, created_at, updated_at, version, "
            "tags) VALUES ('old://note', 'old', 'note', 'note v2', 3, '2025-01-01T00:00:00.000000Z', "
            "'2025-02-01T00:00:00.000000Z', 2, '[\"kept\"]')"
        )
        tx.execute(
            "INSERT INTO memory_versions (memory_id, version, content, priority, disclosure, status, change, "
            "created_at) VALUES (1, 1, 'note v1', 3, '', 'active', 'created', '2025-01-01T00:00:00.000000Z')"
        )
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    async with memory_client() as client:
        before = await ok(client, "read_memory", uri="old://note")
        login_as("alice")
        await ok(client, "update_memory", uri="old://note", content="note v3")
        versions = await ok(client, "get_memory_versions", uri="old://note")
        by_alice = await ok(client, "list_memories", author="alice")
        exported = await ok(client, "export_memories", include_versions=True)
    with sqlite3.connect(path) as check:
        # the release's 4 migrations, then the statistics' counts (5) and the completion index (6)
        assert check.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 2 == 6
    assert before["memory"]["author"] is None
    assert before["memory"]["tags"] == ["kept"]
    assert _authors(versions["versions"]) == [(3, "alice"), (2, None), (1, None)]
    assert [m["memory"]["uri"] for m in by_alice["memories"]] == ["old://note"]
    exported_versions = exported["document"]["memories"][0]["versions"]
    assert [v["author"] for v in exported_versions] == [None, None, "alice"]


# --- served: two members over HTTP ------------------------------------------------------------


APPENDS = 20


async def test_two_members_appending_over_http_each_version_names_its_author(tmp_path: Path) -> None:
    """A real ``hostd serve --transport http`` with a tokens file of two members, each appending
    APPENDS times to one memory at once: versions 1..2*APPENDS+1, each by the member who wrote it."""
    import yaml

    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(yaml.safe_dump({"alice": ALICE, "bob": BOB}), encoding="utf-8")
    config = write_config(
        tmp_path,
        ["memory"],
        config={
            "language": "en",
            "profiles": {"default": {"plugins": ["memory"], "transport": {"tokens_file": str(tokens)}}},
        },
    )

    async def append_all(server: HttpServer, member: str, token: str) -> None:
        async with server.client(headers={"Authorization": f"Bearer {token}"}) as client:
            for i in range(APPENDS):
                await ok(client, "update_memory", uri="team://log", content=f"\n{member} {i}", append=True)

    with HttpServer.start(config) as server:
        async with server.client(headers={"Authorization": f"Bearer {ALICE}"}) as setup:
            await ok(setup, "create_memory", uri="team://log", content="log")
        async with anyio.create_task_group() as group:
            group.start_soon(append_all, server, "alice", ALICE)
            group.start_soon(append_all, server, "bob", BOB)
        async with server.client(headers={"Authorization": f"Bearer {BOB}"}) as check:
            exported = await ok(check, "export_memories", include_versions=True)
            listed = await ok(check, "get_memory_versions", uri="team://log", limit=100)
    [memory] = exported["document"]["memories"]
    versions = memory["versions"]
    assert [v["version"] for v in versions] == list(range(1, 2 * APPENDS + 2))
    assert memory["version"] == 2 * APPENDS + 1
    assert versions[0]["author"] == "alice"
    for previous, version in itertools.pairwise(versions):
        appended = version["content"][len(previous["content"]) :]
        assert appended.split()[0] == version["author"], version
    assert sum(v["author"] == "bob" for v in versions) == APPENDS
    assert _authors(listed["versions"]) == [(v["version"], v["author"]) for v in reversed(versions)]
