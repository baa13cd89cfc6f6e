"""Labels and text search in list_tasks: Chinese included, hostile queries answered, not obeyed."""

from __future__ import annotations

from typing import Any

import pytest
from hostd_testing import Client, Connect, ok
from tasks_support import create, refused

pytestmark = pytest.mark.anyio


async def ids(client: Client, **arguments: Any) -> list[str]:
    listed = await ok(client, "list_tasks", **arguments)
    assert listed["total"] == len(listed["tasks"])
    return [task["task_id"] for task in listed["tasks"]]


async def seed(client: object) -> None:
    await create(client, "Deploy the API gateway", task_id="deploy", labels=["Backend", "ops"])  # type: ignore[arg-type]
    await create(
        client,  # type: ignore[arg-type]
        "修复数据库连接池",
        task_id="db",
        description="连接超时后重试",
        labels=["后端"],
        acceptance="压测通过",
    )
    await create(client, "Write release notes", task_id="notes", priority="P0", acceptance="reviewed by QA")  # type: ignore[arg-type]


@pytest.mark.smoke
@pytest.mark.served
async def test_search_finds_words_in_title_description_acceptance_and_notes(connect: Connect) -> None:
    async with connect() as client:
        await seed(client)
        await ok(client, "update_task", task_id="deploy", append_note="blocked on the firewall change")
        assert await ids(client, query="deploy") == ["deploy"]
        assert await ids(client, query="DEPLOYING gateway") == [], "every word must occur"
        assert await ids(client, query="gate") == ["deploy"], "a word matches as a prefix"
        assert await ids(client, query="firewall") == ["deploy"], "notes are searched"
        assert await ids(client, query="QA") == ["notes"], "acceptance is searched"
        assert await ids(client, query="the") == ["deploy"]
        assert await ids(client, query="nothing-like-this") == []


async def test_chinese_search_by_words_and_single_characters(connect: Connect) -> None:
    async with connect() as client:
        await seed(client)
        assert await ids(client, query="数据库") == ["db"]
        assert await ids(client, query="连接") == ["db"]
        assert await ids(client, query="库") == ["db"], "one character is a prefix of the bigrams"
        assert await ids(client, query="超时 重试") == ["db"], "description words"
        assert await ids(client, query="压测") == ["db"], "acceptance"
        assert await ids(client, query="数据 gateway") == []
        assert await ids(client, query="库存") == []


async def test_search_combines_with_the_other_filters_and_pages(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        for n in range(5):
            await create(client, f"fix bug {n}", task_id=f"bug{n}", priority=f"P{n % 3}", labels=["bug"])
        await create(client, "unrelated", task_id="other", labels=["bug"])
        first = await ok(client, "list_tasks", query="fix", limit=2)
        second = await ok(client, "list_tasks", query="fix", limit=2, cursor=first["next_cursor"])
        urgent = await ids(client, query="bug", priority="P0")
        labelled = await ids(client, query="fix", label="BUG", status="pending")
    assert first["total"] == 5
    assert [t["task_id"] for t in first["tasks"]] == ["bug0", "bug3"]
    assert [t["task_id"] for t in second["tasks"]] == ["bug1", "bug4"]
    assert urgent == ["bug0", "bug3"]
    assert sorted(labelled) == [f"bug{n}" for n in range(5)]


async def test_labels_filter_case_insensitively_and_an_unknown_label_lists_nothing(connect: Connect) -> None:
    async with connect() as client:
        await seed(client)
        assert await ids(client, label="backend") == ["deploy"]
        assert await ids(client, label="BACKEND") == ["deploy"]
        assert await ids(client, label="后端") == ["db"]
        unknown = await ok(client, "list_tasks", label="no-such-label")
    assert unknown["total"] == 0
    assert unknown["tasks"] == []


async def test_editing_reindexes_the_task(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "old words", task_id="t")
        await ok(client, "update_task", task_id="t", title="新的标题", labels=["moved"])
        assert await ids(client, query="old") == []
        assert await ids(client, query="标题") == ["t"]
        assert await ids(client, query="moved") == ["t"], "labels are searchable words too"


@pytest.mark.parametrize(
    "query",
    ['"x', "OR", "NEAR(a b)", "a*", "title:x", "-x", "'; DROP TABLE tasks; --", "a AND", "(x", "^x", "😀 x"],
)
async def test_query_syntax_is_searched_for_never_obeyed(connect_in_memory: Connect, query: str) -> None:
    async with connect_in_memory() as client:
        await create(client, "plain task", task_id="t")
        listed = await ok(client, "list_tasks", query=query)
        after = await ok(client, "list_tasks")
    assert listed["total"] == 0
    assert after["total"] == 1


async def test_quotes_in_a_query_are_text(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, 'say "hello" OR bye', task_id="t")
        assert await ids(client, query='"hello" OR') == ["t"]
        assert await ids(client, query='"hello" OR nope') == []


@pytest.mark.parametrize("query", ["!!!", "   ", "__", "*", "😀"])
async def test_a_query_without_a_letter_or_digit_is_invalid(connect_in_memory: Connect, query: str) -> None:
    async with connect_in_memory() as client:
        error = await refused(client, "list_tasks", "INVALID_ARGUMENT", query=query)
    assert error["details"]["argument"] == "query"
    assert "omit query" in error["hint"]


async def test_label_shapes_are_checked(connect_in_memory: Connect) -> None:
    """The label rule (one word, no control characters); the query's and the list's bounds are the
    host's argument checks (tests/test_argument_checks.py)."""
    async with connect_in_memory() as client:
        spaced = await refused(client, "list_tasks", "INVALID_ARGUMENT", label="two words")
        control = await refused(client, "create_task", "INVALID_ARGUMENT", title="x", labels=["a\x00b"])
    assert spaced["details"]["argument"] == "label"
    assert control["details"]["argument"] == "labels.0"


async def test_search_messages_in_chinese(connect_in_memory: Connect) -> None:
    async with connect_in_memory(language="zh") as client:
        error = await refused(client, "list_tasks", "INVALID_ARGUMENT", query="!!!")
    assert error["message"] == "参数 'query' 无效：其中没有可搜索的文字或数字。"
    assert "数据库" in error["hint"]
    assert "omit" not in error["hint"]


async def test_a_one_letter_query_is_a_word_prefix(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "xylophone repair", task_id="x")
        await create(client, "box of nails", task_id="box")
        assert await ids(client, query="x") == ["x"], "words starting with x, not every x inside a word"
        assert await ids(client, query="B") == ["box"]


async def test_a_query_holding_nul_is_searched_not_internal(connect_in_memory: Connect) -> None:
    """NUL separates words, in the query as in the indexed text (FTS5 once read it as the end of
    the query's string literal and answered INTERNAL)."""
    async with connect_in_memory() as client:
        await create(client, "holds a nul", task_id="nul", description="nul\x00inside")
        await create(client, "other", task_id="other", description="nul and inside, apart")
        assert await ids(client, query="nul\x00ins") == ["nul"]
        assert await ids(client, query="a\x00b") == []
