"""export_memories and import_memories: round trip, strategies, validation, older formats, files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hostd_testing import call, error_code, in_memory_client, ok
from memory_support import MemoryClient

pytestmark = pytest.mark.anyio


async def fill(client) -> None:  # type: ignore[no-untyped-def]
    await ok(client, "create_memory", uri="core://me", content="我是助手", priority=0, disclosure="always")
    await ok(client, "update_memory", uri="core://me", content="我是助手 v2")
    await ok(client, "create_memory", uri="project://api", content="see core://me", priority=4)
    await ok(client, "update_memory", uri="project://api", status="archived")
    await ok(client, "add_alias", target_uri="core://me", alias_uri="user://self")
    await ok(client, "create_memory", uri="other://x", content="other domain")
    await ok(client, "create_memory", uri="gone://x", content="deleted one")
    await ok(client, "delete_memory", uri="gone://x")
    await ok(client, "read_memory", uri="core://me")


def comparable(document: dict) -> list[dict]:  # type: ignore[type-arg]
    return sorted(document["memories"], key=lambda m: m["uri"])


@pytest.mark.smoke
async def test_export_then_import_into_an_empty_store_reproduces_everything(
    memory_client: MemoryClient, tmp_path: Path
) -> None:
    async with memory_client() as client:
        await fill(client)
        exported = await ok(client, "export_memories", include_versions=True, include_relations=True)
    document = exported["document"]
    assert document["format"] == "hostd-memory-export"
    assert document["version"] == 3
    assert {m["uri"] for m in document["memories"]} == {"core://me", "project://api", "other://x"}
    second = tmp_path / "second"
    second.mkdir()
    async with in_memory_client(["memory"], data_dir=second, config={"language": "en"}) as other:
        imported = await ok(other, "import_memories", data=exported)  # the whole answer works too
        again = await ok(other, "export_memories", include_versions=True, include_relations=True)
        versions = await ok(other, "get_memory_versions", uri="user://self")
    assert imported["created"] == 3
    assert imported["errors"] == []
    assert comparable(again["document"]) == comparable(document)
    assert [v["version"] for v in versions["versions"]] == [2, 1]


async def test_import_strategies_skip_overwrite_merge(memory_client: MemoryClient) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [{"uri": "a://1", "content": "incoming text", "priority": 1, "disclosure": "new"}],
    }
    async with memory_client() as client:
        await ok(client, "create_memory", uri="a://1", content="existing text", priority=6)
        skipped = await ok(client, "import_memories", data=document)
        merged = await ok(client, "import_memories", data=document, strategy="merge")
        merged_twice = await ok(client, "import_memories", data=document, strategy="merge")
        after_merge = await ok(client, "read_memory", uri="a://1")
        overwritten = await ok(client, "import_memories", data=document, strategy="overwrite")
        after_overwrite = await ok(client, "read_memory", uri="a://1")
        versions = await ok(client, "get_memory_versions", uri="a://1")
    assert (skipped["skipped"], merged["merged"], overwritten["overwritten"]) == (1, 1, 1)
    # The second merge finds the incoming text already there: it changes nothing, so no version.
    assert (merged_twice["merged"], merged_twice["unchanged"]) == (0, 1)
    assert after_merge["content"] == "existing text\nincoming text"
    assert after_merge["memory"]["priority"] == 1
    assert after_overwrite["content"] == "incoming text"
    assert after_overwrite["memory"]["disclosure"] == "new"
    assert [v["change"] for v in versions["versions"]] == ["import", "import", "created"]
    assert [v["change_note"] for v in versions["versions"]][:2] == ["overwrite", "merge"]


async def test_import_validates_first_and_reports_per_item_errors(memory_client: MemoryClient) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [
            {"uri": "ok://1", "content": "fine"},
            {"uri": "not a uri", "content": "x"},
            {"uri": "ok://2", "content": "x", "priority": 42},
            {"uri": "system://boot", "content": "x"},
            {"uri": "ok://1/", "content": "duplicate"},
            {"content": "no uri"},
            {"uri": "ok://3", "content": "bad time", "created_at": "yesterday"},
        ],
    }
    async with memory_client() as client:
        result = await ok(client, "import_memories", data=document)
        bad_format = await call(client, "import_memories", data={"format": "other", "memories": []})
        bad_version = await call(
            client, "import_memories", data={"format": "hostd-memory-export", "version": 9, "memories": []}
        )
        not_list = await call(
            client, "import_memories", data={"format": "hostd-memory-export", "version": 2, "memories": "x"}
        )
        empty = await call(client, "import_memories", data={})
    assert result["created"] == 1
    assert [e["index"] for e in result["errors"]] == [1, 2, 3, 4, 5, 6]
    assert all(e["message"] for e in result["errors"])
    for envelope in (bad_format, bad_version, not_list, empty):
        assert envelope["error"]["code"] == "INVALID_ARGUMENT"
        assert envelope["error"]["details"]["argument"] == "data"


async def test_older_format_version_is_migrated(memory_client: MemoryClient) -> None:
    version1 = {
        "format": "hostd-memory-export",
        "version": 1,
        "items": [
            {
                "uri": "old://one",
                "content": "from v1",
                "priority": 3,
                "created": "2024-01-02T03:04:05+08:00",
                "updated": "2024-01-03T00:00:00Z",
            }
        ],
    }
    async with memory_client() as client:
        result = await ok(client, "import_memories", data=version1)
        read = await ok(client, "read_memory", uri="old://one")
    assert result["format_version"] == 1
    assert result["created"] == 1
    assert read["memory"]["created_at"] == "2024-01-01T19:04:05.000000Z"
    assert read["memory"]["updated_at"] == "2024-01-03T00:00:00.000000Z"


async def test_aliases_that_are_taken_are_reported_not_fatal(memory_client: MemoryClient) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [{"uri": "a://new", "content": "x", "aliases": ["a://taken"]}],
    }
    async with memory_client() as client:
        await ok(client, "create_memory", uri="a://taken", content="y")
        result = await ok(client, "import_memories", data=document)
    assert result["created"] == 1
    assert result["errors"][0]["problem"] == "alias_taken"


async def test_an_alias_naming_its_own_memory_is_reported_with_its_index(memory_client: MemoryClient) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [
            {"uri": "a://first", "content": "x"},
            {"uri": "a://self", "content": "y", "aliases": ["a://other", "A://self"]},
        ],
    }
    async with memory_client() as client:
        result = await ok(client, "import_memories", data=document)
        read = await ok(client, "read_memory", uri="a://other")
    assert result["created"] == 2
    assert read["memory"]["uri"] == "a://self"
    [error] = result["errors"]
    assert error["index"] == 1, error
    assert error["problem"] == "alias_to_itself", error
    assert error["field"] == "aliases.1"
    assert error["code"] == "INVALID_ARGUMENT"
    assert "own URI" in error["message"]


async def test_export_filters_by_domain(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await fill(client)
        exported = await ok(client, "export_memories", domain="core")
    assert [m["uri"] for m in exported["document"]["memories"]] == ["core://me"]
    assert "versions" not in exported["document"]["memories"][0]
    assert "aliases" not in exported["document"]["memories"][0]


async def test_export_to_a_file_inside_the_roots_only_and_overwrite_rules(
    memory_client: MemoryClient, hostd_roots: Path
) -> None:
    (hostd_roots / "backups").mkdir()
    async with memory_client() as client:
        await fill(client)
        written = await ok(client, "export_memories", output_path="backups/memories.json")
        exists = await call(client, "export_memories", output_path="backups/memories.json")
        replaced = await ok(client, "export_memories", output_path="backups/memories.json", overwrite=True)
        outside = await error_code(client, "export_memories", output_path="../outside.json")
        absolute = await error_code(client, "export_memories", output_path="/etc/passwd", overwrite=True)
        folder = await call(client, "export_memories", output_path="backups", overwrite=True)
    target = hostd_roots / "backups" / "memories.json"
    assert written["output_path"] == str(target)
    assert written["document"] is None
    assert written["count"] == 3
    assert json.loads(target.read_text(encoding="utf-8"))["format"] == "hostd-memory-export"
    assert exists["error"]["code"] == "ALREADY_EXISTS"
    assert replaced["bytes_written"] > 0
    assert outside == "PATH_NOT_ALLOWED"
    assert absolute == "PATH_NOT_ALLOWED"
    assert folder["status"] == "error"
    assert not (hostd_roots.parent / "outside.json").exists()


@pytest.mark.parametrize("strategy", ["merge", "overwrite"])
async def test_importing_an_item_identical_to_the_memory_changes_nothing(
    memory_client: MemoryClient, strategy: str
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="rep://d", content="a\nc", priority=3, disclosure="when")
        exported = await ok(client, "export_memories")
        imported = await ok(client, "import_memories", data=exported, strategy=strategy)
        versions = await ok(client, "get_memory_versions", uri="rep://d")
    assert imported["unchanged"] == 1
    assert (imported["merged"], imported["overwritten"]) == (0, 0)
    assert imported["created"] == imported["skipped"] == 0
    assert imported["errors"] == []
    assert "1 unchanged" in imported["message"]
    assert versions["current_version"] == 1
    assert versions["total"] == 1


async def test_import_counts_changed_and_unchanged_items_apart(memory_client: MemoryClient) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [
            {"uri": "a://same", "content": "same", "priority": 5},
            {"uri": "a://other", "content": "same", "priority": 4},
        ],
    }
    async with memory_client(language="zh") as client:
        await ok(client, "create_memory", uri="a://same", content="same")
        await ok(client, "create_memory", uri="a://other", content="same")
        overwritten = await ok(client, "import_memories", data=document, strategy="overwrite")
        merged = await ok(client, "import_memories", data=document, strategy="merge")
    assert (overwritten["overwritten"], overwritten["unchanged"]) == (1, 1)
    assert (merged["merged"], merged["unchanged"]) == (0, 2)
    assert "未变 2" in merged["message"]


def one_version(**fields: object) -> dict[str, object]:
    return {"version": 1, "content": "old", "priority": 5, "created_at": "2024-01-01T00:00:00Z"} | fields


HOSTILE_ITEMS = [
    ({"access_count": 2**63}, "access_count"),
    ({"access_count": 2**64}, "access_count"),
    ({"version": 2**63}, "version"),
    ({"version": 2**64}, "version"),
    ({"created_at": "0001-01-01T00:00:00+05:00"}, "created_at"),
    ({"updated_at": "9999-12-31T23:00:00-05:00"}, "updated_at"),
    ({"content": "x\ud800y"}, "content"),
    ({"content": " \n\t "}, "content"),
    ({"disclosure": "\udfff"}, "disclosure"),
    ({"aliases": ["h://\ud800"]}, "aliases.0"),
    ({"versions": [one_version(content="\ud800")]}, "versions.0.content"),
    ({"versions": [one_version(disclosure="\udc00")]}, "versions.0.disclosure"),
    ({"versions": [one_version(change_note="\ud800")]}, "versions.0.change_note"),
    ({"versions": [one_version(), one_version(version=2**64)]}, "versions.1.version"),
    ({"versions": [one_version(created_at="0001-01-01T00:00:00+05:00")]}, "versions.0.created_at"),
]


@pytest.mark.parametrize(("hostile", "field"), HOSTILE_ITEMS)
@pytest.mark.parametrize("strategy", ["skip", "overwrite"])
async def test_hostile_item_is_invalid_argument_naming_index_and_field_and_stores_nothing(
    memory_client: MemoryClient, hostile: dict[str, object], field: str, strategy: str
) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [
            {"uri": "h://fine", "content": "fine"},
            {"uri": "h://bad", "content": "incoming", "priority": 1} | hostile,
            {"uri": "h://kept", "content": "incoming", "priority": 1} | hostile,
        ],
    }
    async with memory_client() as client:
        await ok(client, "create_memory", uri="h://kept", content="kept")
        result = await call(client, "import_memories", data=document, strategy=strategy)
        missing = await error_code(client, "read_memory", uri="h://bad")
        kept = await ok(client, "read_memory", uri="h://kept")
        stats = await ok(client, "get_memory_stats")
    assert result["status"] == "success", result
    assert result["created"] == 1
    assert result["overwritten"] == result["skipped"] == 0
    assert [(e["index"], e["uri"], e["code"], e["field"]) for e in result["errors"]] == [
        (1, "h://bad", "INVALID_ARGUMENT", field),
        (2, "h://kept", "INVALID_ARGUMENT", field),
    ]
    assert all(field in e["message"] for e in result["errors"])
    assert missing == "NOT_FOUND"
    assert stats["total"] == 2
    assert stats["alias_count"] == 0
    assert kept["content"] == "kept"
    assert kept["memory"]["version"] == 1
    assert kept["memory"]["priority"] == 5


async def test_hostile_uri_is_reported_without_breaking_the_answer(memory_client: MemoryClient) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [{"uri": "h://\ud800", "content": "x"}],
    }
    async with memory_client(language="zh") as client:
        result = await ok(client, "import_memories", data=document)
    [problem] = result["errors"]
    assert (problem["index"], problem["code"], problem["field"]) == (0, "INVALID_ARGUMENT", "uri")
    assert "uri" in problem["message"]
    assert "代理" in problem["message"]
    assert not re.search("[A-Za-z]{4,}", problem["message"].replace("Unicode", ""))


async def test_alias_cycle_in_a_document_names_every_item_of_the_cycle(memory_client: MemoryClient) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [
            {"uri": "cy://a", "content": "a", "aliases": ["cy://b"]},
            {"uri": "ok://x", "content": "x"},
            {"uri": "cy://b", "content": "b", "aliases": ["cy://c"]},
            {"uri": "cy://c", "content": "c", "aliases": ["cy://a/"]},
            {"uri": "two://1", "content": "1", "aliases": ["two://2"]},
            {"uri": "two://2", "content": "2", "aliases": ["two://1"]},
            {"uri": "chain://1", "content": "1", "aliases": ["chain://2"]},
            {"uri": "chain://2", "content": "2"},
        ],
    }
    async with memory_client() as client:
        result = await ok(client, "import_memories", data=document)
        missing = [await error_code(client, "read_memory", uri=u) for u in ("cy://a", "cy://b", "two://2")]
    three = [{"index": 0, "uri": "cy://a"}, {"index": 2, "uri": "cy://b"}, {"index": 3, "uri": "cy://c"}]
    two = [{"index": 4, "uri": "two://1"}, {"index": 5, "uri": "two://2"}]
    cycles = [e for e in result["errors"] if e["problem"] == "alias_cycle"]
    assert [(e["index"], e["uri"], e["cycle"]) for e in cycles] == [
        (0, "cy://a", three),
        (2, "cy://b", three),
        (3, "cy://c", three),
        (4, "two://1", two),
        (5, "two://2", two),
    ]
    assert all(e["code"] == "CONFLICT" and e["field"] == "aliases" for e in cycles)
    assert "0 (cy://a), 2 (cy://b), 3 (cy://c)" in cycles[0]["message"]
    # A chain is no cycle: the first item takes the alias, the second is reported with its index.
    [taken] = [e for e in result["errors"] if e["problem"] != "alias_cycle"]
    assert (taken["index"], taken["uri"], taken["code"], taken["problem"]) == (
        7,
        "chain://2",
        "ALREADY_EXISTS",
        "alias_exists",
    )
    assert result["created"] == 2
    assert missing == ["NOT_FOUND"] * 3


async def test_alias_cycle_is_reported_in_chinese(memory_client: MemoryClient) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [
            {"uri": "cy://a", "content": "a", "aliases": ["cy://b"]},
            {"uri": "cy://b", "content": "b", "aliases": ["cy://a"]},
        ],
    }
    async with memory_client(language="zh") as client:
        result = await ok(client, "import_memories", data=document)
    assert result["created"] == 0
    assert [e["index"] for e in result["errors"]] == [0, 1]
    message = result["errors"][0]["message"]
    assert "循环" in message
    assert "0 (cy://a), 1 (cy://b)" in message
    assert not re.search("[A-Za-z]{3,}", re.sub(r"cy://\w", "", message))


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_wrongly_typed_fields_are_named_in_plain_words(
    memory_client: MemoryClient, language: str
) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [
            {"uri": 5, "content": "x"},
            {"uri": "t://1", "content": "x", "priority": "high"},
            {"uri": "t://2", "content": "x", "status": "gone"},
        ],
    }
    async with memory_client(language=language) as client:
        result = await ok(client, "import_memories", data=document)
    assert [(e["index"], e["uri"], e["field"]) for e in result["errors"]] == [
        (0, None, "uri"),
        (1, "t://1", "priority"),
        (2, "t://2", "status"),
    ]
    for error in result["errors"]:
        assert error["field"] in error["message"], error
        assert "_" not in error["message"], error
