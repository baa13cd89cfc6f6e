"""Who did it: ``created_by`` on sessions, ``by`` on thoughts, ``list_sessions(created_by=...)`` and a
default session per member; in process (the local login name) and over HTTP with a tokens file of two
members, on both backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from deep_thinking_support import PLUGIN, TEAM_DB_ENV, config_for, thought
from hostd_testing import Client, HttpServer, fails, in_memory_client, local_member, ok, write_config

pytestmark = pytest.mark.anyio

ME = local_member()  # who an in-process call is made for
ALICE_TOKEN = "alice-token-0123456789"
BOB_TOKEN = "bob-token-0123456789ab"


def spec_document(session_id: str, **extra: Any) -> str:
    """A session document as import_session takes it, with one thought."""
    first = {"thought_number": 1, "content": "first", **extra.pop("thought", {})}
    return json.dumps({"session_id": session_id, "name": session_id, "thoughts": [first], **extra})


async def test_every_way_of_starting_a_session_records_its_creator(client: Client) -> None:
    made = await ok(client, "create_session", name="Made", session_id="made")
    assert made["session"]["created_by"] == ME
    await ok(client, "sequential_thinking", **thought(1, 2, session_id="by-id"))
    default = await ok(client, "sequential_thinking", **thought(1, 2))
    for session_id in ("made", "by-id", default["session_id"]):
        page = await ok(client, "get_session", session_id=session_id)
        assert page["session"]["created_by"] == ME, session_id
        assert all(each["by"] == ME for each in page["thoughts"])
    listed = await ok(client, "list_sessions")
    assert {row["created_by"] for row in listed["sessions"]} == {ME}
    assert listed["total"] == 3
    resumed = await ok(client, "resume_session", session_id="by-id")
    assert resumed["session"]["created_by"] == ME
    assert resumed["last_thought"]["by"] == ME


async def test_an_import_keeps_the_creator_and_authors_its_document_carries(client: Client) -> None:
    carried = spec_document("theirs", created_by="alice", thought={"by": "alice"})
    assert (await ok(client, "import_session", path_or_data=carried))["session"]["created_by"] == "alice"
    page = await ok(client, "get_session", session_id="theirs")
    assert page["thoughts"][0]["by"] == "alice"
    # Without one (an older export, another program's document): the importing member created it here;
    # who wrote its thoughts is not known.
    older = await ok(client, "import_session", path_or_data=spec_document("older"))
    assert older["session"]["created_by"] == ME
    assert (await ok(client, "get_session", session_id="older"))["thoughts"][0]["by"] is None
    # The JSON export keeps both, so a round trip changes nothing.
    exported = json.loads((await ok(client, "export_session", session_id="theirs", format="json"))["content"])
    session = exported["session"]
    assert session["created_by"] == "alice"
    assert session["thoughts"][0]["by"] == "alice"
    again = await ok(client, "import_session", path_or_data=json.dumps(exported), session_id="theirs-again")
    assert again["session"]["created_by"] == "alice"
    assert (await ok(client, "get_session", session_id="theirs-again"))["thoughts"][0]["by"] == "alice"


@pytest.mark.parametrize(
    ("extra", "field"),
    [({"created_by": "no/slash"}, "created_by"), ({"thought": {"by": ""}}, "thoughts.0.by")],
)
async def test_a_bad_creator_or_author_in_an_import_is_refused(
    client: Client, extra: dict[str, Any], field: str
) -> None:
    envelope = await fails(
        client, "import_session", "INVALID_ARGUMENT", path_or_data=spec_document("bad", **extra)
    )
    assert envelope["error"]["details"]["field"] == field
    assert envelope["error"]["hint"]
    await fails(client, "get_session", "NOT_FOUND", session_id="bad")  # nothing stored


async def test_a_restore_keeps_the_original_creator(client: Client) -> None:
    await ok(client, "import_session", path_or_data=spec_document("kept", created_by="alice"))
    await ok(client, "delete_session", session_id="kept")
    restored = await ok(client, "restore_session", session_id="kept")
    assert restored["session"]["created_by"] == "alice"  # not the member who restored it
    assert (await ok(client, "get_session", session_id="kept"))["session"]["created_by"] == "alice"


async def test_list_sessions_filters_by_creator(client: Client) -> None:
    for session_id in ("a1", "a2"):
        await ok(client, "import_session", path_or_data=spec_document(session_id, created_by="alice"))
    await ok(client, "create_session", name="mine", session_id="mine")
    await ok(client, "update_session_status", session_id="a2", status="completed")
    theirs = await ok(client, "list_sessions", created_by="alice")
    assert theirs["total"] == 2
    assert {row["session_id"] for row in theirs["sessions"]} == {"a1", "a2"}
    one = await ok(client, "list_sessions", created_by="alice", limit=1)
    assert one["total"] == 2
    assert len(one["sessions"]) == 1
    done = await ok(client, "list_sessions", created_by="alice", status="completed")
    assert [row["session_id"] for row in done["sessions"]] == ["a2"]
    assert done["total"] == 1
    mine = await ok(client, "list_sessions", created_by=ME)
    assert [row["session_id"] for row in mine["sessions"]] == ["mine"]
    nobody = await ok(client, "list_sessions", created_by="nobody")
    assert nobody["sessions"] == []
    assert nobody["total"] == 0


async def test_exports_for_reading_say_who_created_and_who_thought(client: Client) -> None:
    await ok(client, "import_session", path_or_data=spec_document("read", created_by="alice"))
    await ok(client, "sequential_thinking", **thought(2, 2, "mine", session_id="read"))

    async def export(format: str) -> str:
        return str((await ok(client, "export_session", session_id="read", format=format))["content"])

    markdown = await export("markdown")
    assert "- **Created by:** alice" in markdown
    assert f"### Thought 2 · #2 · by {ME}" in markdown
    assert "### Thought 1 · #1\n" in markdown  # a thought of before members: no author shown
    assert "Created by: alice" in await export("text")
    assert f"#2 regular by {ME}" in await export("text")
    html = await export("html")
    assert "<dt>Created by</dt><dd>alice</dd>" in html
    assert f'<span class="by">by {ME}</span>' in html


async def test_exports_say_it_in_chinese(hostd_data_dir: Path, hostd_roots: Path) -> None:
    config = config_for(hostd_roots, "zh")
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as client:
        await ok(client, "sequential_thinking", **thought(1, 1, "想法", session_id="zh"))
        markdown = (await ok(client, "export_session", session_id="zh", format="markdown"))["content"]
    assert "创建者" in markdown
    assert f"作者：{ME}" in markdown
    assert "Created by" not in markdown
    assert " by " not in markdown


# --- sessions from before members were recorded -------------------------------------------------


async def test_a_session_file_from_before_members_reads_as_null(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    from hostd_deep_thinking.store import SessionStore, new_document

    document = new_document("old", name="Old")
    del document["created_by"]
    document["thoughts"] = [
        {"seq": 1, "thought_number": 1, "content": "then", "type": "regular", "timestamp": "2026-01-01"}
    ]
    document["last_seq"] = 1
    store = SessionStore(hostd_data_dir / PLUGIN)
    store.create(document)
    store.close()
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots)) as client:
        await _reads_as_null(client)


async def test_a_team_database_from_before_members_reads_as_null(
    hostd_data_dir: Path, hostd_roots: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session written at schema version 1 (no created_by column) is listed and shown after the
    migration, with created_by null."""
    from hostd_db import Schema, TeamDatabaseSettings, open_database
    from hostd_deep_thinking.store.schema import MIGRATIONS

    summary = {"session_id": "old", "name": "Old", "status": "active", "updated_at": "2026-01-01"}
    meta = {"session_id": "old", "name": "Old", "status": "active", "updated_at": "2026-01-01"}
    first = {"seq": 1, "thought_number": 1, "content": "then", "type": "regular", "timestamp": "2026-01-01"}
    team = TeamDatabaseSettings(postgres_url)
    before = open_database(Schema(MIGRATIONS[:1]), "deep-thinking", data_dir=hostd_data_dir, team=team)
    try:
        before.write(
            lambda conn: (
                conn.execute(
                    "INSERT INTO sessions VALUES ('old', 1, ?, '[]', 1, ?, 'active', '2026-01-01')",
                    (json.dumps(meta), json.dumps({**summary, "thought_count": 1})),
                ),
                conn.execute("INSERT INTO thoughts VALUES ('old', 1, ?, ''::tsvector)", (json.dumps(first),)),
            )
        )
    finally:
        before.close()
    monkeypatch.setenv(TEAM_DB_ENV, postgres_url)
    config = {**config_for(hostd_roots), "storage": {"url_env": TEAM_DB_ENV}}
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as client:
        await _reads_as_null(client)


async def _reads_as_null(client: Client) -> None:
    page = await ok(client, "get_session", session_id="old")
    assert page["session"]["created_by"] is None
    assert page["thoughts"][0]["by"] is None
    listed = await ok(client, "list_sessions")
    assert [(row["session_id"], row["created_by"]) for row in listed["sessions"]] == [("old", None)]
    assert (await ok(client, "list_sessions", created_by=ME))["total"] == 0
    await ok(client, "sequential_thinking", **thought(2, 2, "now", session_id="old"))
    page = await ok(client, "get_session", session_id="old")
    assert page["session"]["created_by"] is None  # adding to it does not make anyone its creator
    assert [each["by"] for each in page["thoughts"]] == [None, ME]


# --- two members over HTTP --------------------------------------------------------------------------


def _team_config(tmp_path: Path, roots: Path, backend: dict[str, Any]) -> Path:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(yaml.safe_dump({"alice": ALICE_TOKEN, "bob": BOB_TOKEN}), encoding="utf-8")
    profile = {"plugins": [PLUGIN], "transport": {"tokens_file": str(tokens)}}
    return write_config(tmp_path, config={**config_for(roots), **backend, "profiles": {"default": profile}})


async def test_two_members_over_http_each_recorded_and_each_with_their_own_default_session(
    tmp_path: Path, hostd_roots: Path, backend: dict[str, Any]
) -> None:
    with HttpServer.start(_team_config(tmp_path, hostd_roots, backend)) as server:
        async with (
            server.client(headers={"Authorization": f"Bearer {ALICE_TOKEN}"}) as alice,
            server.client(headers={"Authorization": f"Bearer {BOB_TOKEN}"}) as bob,
        ):
            made = await ok(alice, "create_session", name="Alice's plan", session_id="a-plan")
            assert made["session"]["created_by"] == "alice"
            assert (await ok(bob, "create_session", name="Bob's", session_id="b-plan"))["session"][
                "created_by"
            ] == "bob"
            # One shared session, thought in turns.
            for number, member in enumerate((alice, bob, alice), start=1):
                await ok(member, "sequential_thinking", **thought(number, 3, session_id="shared"))
            shared = await ok(bob, "get_session", session_id="shared")
            assert shared["session"]["created_by"] == "alice"  # the first thought created it
            assert [each["by"] for each in shared["thoughts"]] == ["alice", "bob", "alice"]
            # Calls without session_id: each member continues their own default session.
            mine = await ok(alice, "sequential_thinking", **thought(1, 2, "alice starts"))
            theirs = await ok(bob, "sequential_thinking", **thought(1, 2, "bob starts"))
            assert mine["session_id"] != theirs["session_id"]
            mine_next = await ok(alice, "sequential_thinking", **thought(2, 2, "alice goes on"))
            theirs_next = await ok(bob, "sequential_thinking", **thought(2, 2, "bob goes on"))
            assert (mine_next["session_id"], theirs_next["session_id"]) == (
                mine["session_id"],
                theirs["session_id"],
            )
            for member, name, session_id in (
                (bob, "alice", mine["session_id"]),
                (alice, "bob", theirs["session_id"]),
            ):
                page = await ok(member, "get_session", session_id=session_id)
                assert page["session"]["created_by"] == name
                assert page["session"]["is_default"]
                assert [each["by"] for each in page["thoughts"]] == [name, name]
                assert [each["content"] for each in page["thoughts"]] == [f"{name} starts", f"{name} goes on"]
            by_bob = await ok(alice, "list_sessions", created_by="bob")
            assert {row["session_id"] for row in by_bob["sessions"]} == {"b-plan", theirs["session_id"]}
            by_alice = await ok(bob, "list_sessions", created_by="alice")
            assert {row["session_id"] for row in by_alice["sessions"]} == {
                "a-plan",
                "shared",
                mine["session_id"],
            }
