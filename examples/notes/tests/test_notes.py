"""One test per tool on SQLite and PostgreSQL (the first also through a real ``hostd serve``: mark one
test per tool ``served``, no more); the refusal in both languages."""

from __future__ import annotations

import pytest
from dirty_equals import IsStr
from hostd_testing import Connect, call, check_paging, envelope_error, envelope_ok, ok

pytestmark = pytest.mark.anyio

NOTE = {"id": 1, "title": "Groceries", "body": "milk", "created_by": IsStr, "created_at": IsStr(regex=r".+Z")}


@pytest.mark.served
async def test_add_note_answers_the_note(connect: Connect) -> None:
    async with connect() as client:
        assert await call(client, "add_note", title="Groceries", body="milk") == envelope_ok(
            "Note 1 added.", note=NOTE
        )


async def test_list_notes_lists_them_oldest_first(connect: Connect) -> None:
    async with connect() as client:
        await ok(client, "add_note", title="Groceries", body="milk")
        await ok(client, "add_note", title="Call Ada")
        listed = await call(client, "list_notes")
    second = {**NOTE, "id": 2, "title": "Call Ada", "body": ""}
    assert listed == envelope_ok(
        "2 of 2 notes.", notes=[NOTE, second], total=2, next_cursor=None, truncated=False
    )


async def test_list_notes_pages_one_way(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        for n in range(5):
            await ok(client, "add_note", title=f"note {n}")
        walked = await check_paging(client, "list_notes", "notes", key=lambda note: note["id"])
    assert [note["title"] for note in walked] == [f"note {n}" for n in range(5)]


@pytest.mark.parametrize(
    ("language", "message", "hint"),
    [
        (
            "en",
            "A note titled 'Groceries' already exists.",
            "Choose another title; list_notes shows the titles in use.",
        ),
        ("zh", "标题为 'Groceries' 的笔记已存在。", "请换一个标题；list_notes 可列出已用的标题。"),
    ],
)
async def test_a_title_in_use_is_refused_and_nothing_is_written(
    connect_in_memory: Connect, language: str, message: str, hint: str
) -> None:
    async with connect_in_memory(language=language) as client:
        await ok(client, "add_note", title="Groceries", body="milk")
        refused = await call(client, "add_note", title="Groceries", body="eggs")
        listed = await ok(client, "list_notes")
    details = {"argument": "title", "reason": "title_taken", "title": "Groceries"}
    assert refused == envelope_error("ALREADY_EXISTS", message, hint=hint, details=details)
    assert listed["notes"] == [NOTE]
