"""Finding what was said in long conversations, and create_memory naming near copies (issue 36).

Every test runs on both stores (``backend``): the final ranking is the same on both.
"""

from __future__ import annotations

from typing import Any

import pytest
from dirty_equals import IsDatetime, IsFloat, IsPartialDict, IsStr
from hostd_testing import call, envelope_ok, ok
from memory_support import MemoryClient

pytestmark = pytest.mark.anyio


def turn(speaker: str, when: str, text: str) -> str:
    return f"{speaker} ({when}): {text}"


async def uris(client: Any, query: str, limit: int = 10) -> list[str]:
    found = await ok(client, "search_memory", query=query, limit=limit)
    return [hit["uri"] for hit in found["hits"]]


async def test_a_question_finds_the_turn_that_answers_it_in_other_forms_of_its_words(
    memory_client: MemoryClient,
) -> None:
    turns = {
        "chat://s1/t1": turn("Ben", "9:02 am on 3 May, 2023", "Hey! How have you been?"),
        "chat://s1/t2": turn("Anna", "9:03 am on 3 May, 2023", "Busy week, but good. How is your sister?"),
        "chat://s1/t3": turn(
            "Ben", "9:04 am on 3 May, 2023", "My sister moved to Porto last week for a new job."
        ),
        "chat://s1/t4": turn("Anna", "9:05 am on 3 May, 2023", "Moving is hard, I hope she settles in."),
        "chat://s2/t1": turn(
            "Anna", "4:40 pm on 20 May, 2023", "I finally went to the climbing gym yesterday!"
        ),
        "chat://s2/t2": turn("Ben", "4:41 pm on 20 May, 2023", "A climbing gym? I would be terrified."),
    }
    async with memory_client() as client:
        for uri, content in turns.items():
            await ok(client, "create_memory", uri=uri, content=content)
        # 'move' finds 'moved' (Snowball); "Ben's" and 'his' ask for nothing.
        assert (await uris(client, "Where did Ben's sister move?"))[0] == "chat://s1/t3"
        found = await ok(client, "search_memory", query="Where did Ben's sister move?")
        assert found["hits"][0]["matched"] == "all_terms"
        # The speaker's name tells the turn from the other's echo of the same words.
        assert (await uris(client, "When did Anna go to the climbing gym?"))[:2] == [
            "chat://s2/t1",
            "chat://s2/t2",
        ]
        assert (await uris(client, "When did Ben go to the climbing gym?"))[0] == "chat://s2/t2"


async def test_a_rare_word_outranks_a_common_one_said_many_times_on_both_backends(
    memory_client: MemoryClient,
) -> None:
    """PostgreSQL's own ts_rank knows nothing of how rare a word is: the final score does."""
    async with memory_client() as client:
        for number in range(24):
            await ok(
                client,
                "create_memory",
                uri=f"chat://filler/{number}",
                content=f"coffee with the team, day {number}",
            )
        await ok(
            client,
            "create_memory",
            uri="chat://common",
            content="coffee, coffee and more coffee this morning",
        )
        await ok(
            client,
            "create_memory",
            uri="chat://rare",
            content="we talked about a trip to Zanzibar next spring",
        )
        ranked = await uris(client, "zanzibar coffee")
        assert ranked[0] == "chat://rare"
        assert ranked[1] == "chat://common"


async def test_question_words_are_left_out_of_questions_only(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(
            client, "create_memory", uri="notes://types", content="The kind of cheese Ben likes is gouda."
        )
        question = await ok(client, "search_memory", query="What kind of cheese does Ben like?")
        assert question["terms"] == ["what", "of", "cheese", "does", "ben", "like"]
        assert [hit["uri"] for hit in question["hits"]] == ["notes://types"]
        plain = await ok(client, "search_memory", query="kind cheese")
        assert plain["terms"] == ["kind", "cheese"]
        assert [hit["uri"] for hit in plain["hits"]] == ["notes://types"]


async def test_create_memory_names_a_very_similar_memory_and_still_creates_it(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        await ok(
            client,
            "create_memory",
            uri="notes://deploys",
            content="Deploys of payment-service go out on Tuesdays after the 10:00 stand-up.",
        )
        await ok(
            client, "create_memory", uri="notes://cat", content="The cat sleeps on the sofa all afternoon."
        )
        created = await call(
            client,
            "create_memory",
            uri="notes://deploys-again",
            content="Deploys of payment-service go out on Tuesdays after the stand-up at 10:00.",
        )
        assert created == envelope_ok(
            "Created notes://deploys-again (priority 5). notes://deploys says nearly the same (97% alike): "
            "update it rather than keep two.",
            uri="notes://deploys-again",
            id=3,
            created_at=IsDatetime(iso_string=True),
            memory=IsPartialDict(id=3, uri="notes://deploys-again", priority=5, status="active", version=1),
            similar=[{"uri": "notes://deploys", "similarity": 0.966}],
        )
        read = await ok(client, "read_memory", uri="notes://deploys-again")
        assert read["content"] == "Deploys of payment-service go out on Tuesdays after the stand-up at 10:00."
        # A deleted memory is no reason to warn; an unrelated one neither.
        await ok(client, "delete_memory", uri="notes://deploys")
        await ok(client, "delete_memory", uri="notes://deploys-again")
        third = await call(
            client,
            "create_memory",
            uri="notes://deploys-third",
            content="Deploys of payment-service go out on Tuesdays after the 10:00 stand-up.",
        )
        assert third == envelope_ok(
            "Created notes://deploys-third (priority 5).",
            uri="notes://deploys-third",
            id=4,
            created_at=IsDatetime(iso_string=True),
            memory=IsPartialDict(id=4, uri="notes://deploys-third", priority=5, status="active", version=1),
            similar=[],
        )


async def test_create_memory_says_so_in_chinese_too(memory_client: MemoryClient) -> None:
    async with memory_client(language="zh") as client:
        await ok(
            client, "create_memory", uri="notes://db", content="订单服务的数据库连接池上限是 50，超过会排队。"
        )
        created = await ok(
            client,
            "create_memory",
            uri="notes://db-2",
            content="订单服务的数据库连接池上限是 50，超过就排队。",
        )
    assert created == envelope_ok(
        IsStr(regex=r"已创建 notes://db-2（优先级 5）。notes://db 的内容几乎相同.*"),
        uri="notes://db-2",
        id=2,
        created_at=IsDatetime(iso_string=True),
        memory=IsPartialDict(id=2, uri="notes://db-2", priority=5, status="active", version=1),
        similar=[{"uri": "notes://db", "similarity": IsFloat(ge=0.8, le=1)}],
    )


async def test_a_date_is_found_however_the_query_writes_it(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(
            client,
            "create_memory",
            uri="chat://s1/t1",
            content=turn("Anna", "1:56 pm on 8 May, 2023", "Gym day, at the gym again!"),
        )
        await ok(
            client,
            "create_memory",
            uri="chat://s2/t1",
            content=turn("Anna", "2:10 pm on 9 May, 2023", "Rest day."),
        )
        await ok(client, "create_memory", uri="notes://iso", content="Release 2.4 went out on 2023-05-08.")
        for query in ("When was Anna at the gym, 2023-05-08?", "Anna May 8th, 2023", "anna 8 may 2023"):
            found = await ok(client, "search_memory", query=query)
            assert [hit["uri"] for hit in found["hits"] if hit["matched"] == "all_terms"] == ["chat://s1/t1"]
            assert "2023-05-08" in found["terms"]
        release = await ok(client, "search_memory", query="release on 8 May 2023")
        assert [(hit["uri"], hit["matched"]) for hit in release["hits"]] == [
            ("notes://iso", "all_terms"),
            ("chat://s1/t1", "any_term"),
        ]
        month = await ok(client, "search_memory", query="Anna in May 2023")
        assert sorted(hit["uri"] for hit in month["hits"] if hit["matched"] == "all_terms") == [
            "chat://s1/t1",
            "chat://s2/t1",
        ]
        assert month["hits"][2]["uri"] == "notes://iso"  # '2023-05-...' is May 2023 too


def test_names_are_the_words_a_query_writes_with_a_capital_after_its_first() -> None:
    from hostd_memory.search import names_in, word_forms

    assert names_in("When did Anna go to the Climbing gym with NASA and I?") == {"anna", "climbing"}
    assert names_in("Anna went") == frozenset()
    assert set(word_forms("move")) == {"move", "moves", "moved", "moving"}
    assert {"study", "studies", "studied", "studying"} <= set(word_forms("studied"))


async def test_a_name_in_the_question_decides_between_turns_of_equal_words(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        for number in range(12):
            speaker = "Anna" if number % 2 else "Ben"
            await ok(
                client, "create_memory", uri=f"chat://small/{number}", content=turn(speaker, "9 am", "ok!")
            )
        await ok(
            client, "create_memory", uri="chat://ben", content=turn("Ben", "9 am", "The gym was packed.")
        )
        await ok(
            client,
            "create_memory",
            uri="chat://anna",
            content=turn("Anna", "9 am", "The gym was so packed today."),
        )
        assert (await uris(client, "Was the gym packed for Anna?"))[0] == "chat://anna"
        assert (await uris(client, "Was the gym packed for Ben?"))[0] == "chat://ben"
