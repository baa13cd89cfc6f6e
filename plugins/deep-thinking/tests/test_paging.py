"""Paging the host's way (``hostd.paging``): limit 1-100 (default 20), one opaque cursor bound to
its tool and every other argument, ``next_cursor``/``truncated`` on every listing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from deep_thinking_support import thought
from dirty_equals import IsList, IsStr
from hostd_testing import Client, check_paging, envelope_ok, fails, ok

pytestmark = pytest.mark.anyio


async def pages(client: Client, tool: str, items: str, **arguments: Any) -> list[list[dict[str, Any]]]:
    """Every page of a listing, following next_cursor; checks truncated agrees with it."""
    collected, cursor = [], None
    while True:
        page = await ok(client, tool, **arguments, **({"cursor": cursor} if cursor else {}))
        collected.append(page[items])
        cursor = page["next_cursor"]
        assert page["truncated"] is (cursor is not None), page
        if cursor is None:
            return collected


async def test_list_sessions_pages_newest_first_without_overlap(client: Client) -> None:
    for index in range(25):
        await ok(client, "sequential_thinking", **thought(1, 1, session_id=f"s{index:02d}"))
    first = await ok(client, "list_sessions")
    assert first == envelope_ok(
        message="25 session(s), showing 20.",
        sessions=IsList(length=20),
        total=25,
        unreadable_sessions=[],
        warnings=[],
        next_cursor=IsStr,
        truncated=True,
    )
    listed = await pages(client, "list_sessions", "sessions", limit=7)
    assert [len(page) for page in listed] == [7, 7, 7, 4]
    ids = [session["session_id"] for page in listed for session in page]
    assert ids == [f"s{index:02d}" for index in reversed(range(25))]  # newest first, each once
    whole = await ok(client, "list_sessions", limit=100)
    assert whole["next_cursor"] is None
    assert not whole["truncated"]
    assert len(whole["sessions"]) == 25


async def test_list_sessions_cursor_is_bound_to_its_filters(client: Client) -> None:
    for index in range(3):
        await ok(client, "sequential_thinking", **thought(1, 1, session_id=f"a{index}"))
    await ok(client, "update_session_status", session_id="a0", status="archived")
    active = await ok(client, "list_sessions", status="active", limit=1)
    assert active["total"] == 2
    assert active["next_cursor"]
    cursor = active["next_cursor"]
    second = await ok(client, "list_sessions", status="active", limit=1, cursor=cursor)
    assert [s["session_id"] for s in second["sessions"]] == ["a1"]
    assert second["next_cursor"] is None
    # The limit is not a filter: another page size may follow the same cursor.
    await ok(client, "list_sessions", status="active", limit=5, cursor=cursor)
    other = await fails(client, "list_sessions", "INVALID_ARGUMENT", status="archived", cursor=cursor)
    assert other["error"]["details"] == {"argument": "cursor", "reason": "other_filters"}
    foreign = await fails(client, "get_session", "INVALID_ARGUMENT", session_id="a1", cursor=cursor)
    assert foreign["error"]["details"] == {"argument": "cursor", "reason": "other_listing"}
    junk = await fails(client, "list_sessions", "INVALID_ARGUMENT", cursor="50")
    assert junk["error"]["details"]["argument"] == "cursor"
    assert junk["error"]["hint"]


async def test_get_session_pages_follow_sequence_numbers(client: Client) -> None:
    for number in range(1, 46):
        await ok(client, "sequential_thinking", **thought(number, 45, session_id="long"))
    first = await ok(client, "get_session", session_id="long")
    assert len(first["thoughts"]) == 20
    assert first["truncated"]
    listed = await pages(client, "get_session", "thoughts", session_id="long", limit=100)
    assert [len(page) for page in listed] == [45]
    listed = await pages(client, "get_session", "thoughts", session_id="long", limit=16)
    assert [thought["sequence"] for page in listed for thought in page] == list(range(1, 46))
    cursor = first["next_cursor"]
    await fails(client, "get_session", "INVALID_ARGUMENT", session_id="long", tags=["x"], cursor=cursor)
    # A thought added between pages is found on a later page, never shown twice.
    await ok(client, "sequential_thinking", **thought(46, 46, session_id="long"))
    rest = await pages(client, "get_session", "thoughts", session_id="long", limit=100)
    assert [thought["sequence"] for page in rest for thought in page] == list(range(1, 47))


async def test_search_pages_the_ranking(client: Client) -> None:
    for index in range(5):
        await ok(
            client, "sequential_thinking", **thought(1, 1, f"river crossing {index}", session_id=f"r{index}")
        )
    listed = await pages(client, "search_thoughts", "hits", query="river", limit=2)
    assert [len(page) for page in listed] == [2, 2, 1]
    found = [hit["session_id"] for page in listed for hit in page]
    assert sorted(found) == [f"r{index}" for index in range(5)]
    first = await ok(client, "search_thoughts", query="river", limit=2)
    await fails(client, "search_thoughts", "INVALID_ARGUMENT", query="crossing", cursor=first["next_cursor"])


#: Each listing: its items' field, the arguments it is walked with, an argument that changes it
#: (a cursor made without it is refused with it), and what names an item.
LISTINGS: dict[str, tuple[str, dict[str, Any], dict[str, Any], Callable[[Any], Any]]] = {
    "list_sessions": ("sessions", {}, {"status": "archived"}, lambda s: s["session_id"]),
    "get_session": ("thoughts", {"session_id": "x"}, {"tags": ["x"]}, lambda t: t["sequence"]),
    "search_thoughts": (
        "hits",
        {"query": "river"},
        {"query": "crossing"},
        lambda h: (h["session_id"], h["thought_number"]),
    ),
}


@pytest.mark.parametrize("tool", sorted(LISTINGS))
async def test_limit_is_one_to_a_hundred(client: Client, tool: str) -> None:
    """hostd-testing's paging rule on every listing: limit 1-100, every item once in order, an
    opaque cursor bound to its listing and filters."""
    for number in range(1, 6):
        await ok(
            client, "sequential_thinking", **thought(number, 5, f"river crossing {number}", session_id="x")
        )
    for index in range(3):
        await ok(
            client, "sequential_thinking", **thought(1, 1, f"river bank {index}", session_id=f"r{index}")
        )
    items, arguments, other_filters, key = LISTINGS[tool]
    walked = await check_paging(
        client, tool, items, arguments=arguments, other_filters=other_filters, key=key
    )
    assert len(walked) == {"list_sessions": 4, "get_session": 5, "search_thoughts": 8}[tool]
