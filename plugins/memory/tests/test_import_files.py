"""import_memories(input_path=...): export files, and the official memory server's JSONL graph."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import call, error_code, npm_installed, ok, require_or_skip
from memory_support import MemoryClient

pytestmark = pytest.mark.anyio

OFFICIAL_PACKAGE = "@modelcontextprotocol/server-memory"


def graph_lines(*items: dict[str, Any]) -> str:
    """A file as the official server writes it: one JSON object a line, no trailing newline."""
    return "\n".join(json.dumps(item, ensure_ascii=False) for item in items)


GRAPH = graph_lines(
    {
        "type": "entity",
        "name": "John Smith",
        "entityType": "Person",
        "observations": ["Speaks Spanish", "喜欢咖啡"],
    },
    {"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": ["AI company"]},
    {"type": "entity", "name": "a/b?c%d", "entityType": "odd name", "observations": []},
    {"type": "entity", "name": "张三", "entityType": "人物", "observations": ["住在上海"]},
    {"type": "relation", "from": "John Smith", "to": "Anthropic", "relationType": "works_at"},
    {"type": "relation", "from": "张三", "to": "John Smith", "relationType": "knows"},
    {"type": "relation", "from": "John Smith", "to": "张三", "relationType": "knows"},
)


async def test_an_official_graph_file_imports_as_memories_and_links_and_twice_changes_nothing(
    memory_client: MemoryClient, hostd_roots: Path
) -> None:
    (hostd_roots / "memory.jsonl").write_text(GRAPH, encoding="utf-8")
    async with memory_client() as client:
        first = await ok(client, "import_memories", input_path="memory.jsonl")
        second = await ok(client, "import_memories", input_path="memory.jsonl")
        merged = await ok(
            client, "import_memories", input_path=str(hostd_roots / "memory.jsonl"), strategy="merge"
        )
        john = await ok(client, "read_memory", uri="entity://John%20Smith")
        odd = await ok(client, "read_memory", uri="entity://a%2Fb%3Fc%25d")
        people = await ok(client, "list_memories", tags=["person"])
        versions = await ok(client, "get_memory_versions", uri="entity://张三")
        stats = await ok(client, "get_memory_stats")
    assert first["source"] == "official-memory-graph"
    assert first["input_path"] == str(hostd_roots / "memory.jsonl")
    assert first["created"] == 4
    assert first["links_added"] == 3
    assert first["errors"] == []
    assert second["created"] == 0
    assert second["skipped"] == 4
    assert second["links_added"] == 0
    assert merged["unchanged"] == 4
    assert merged["merged"] == 0
    assert merged["links_added"] == 0
    assert john["content"] == "Speaks Spanish\n喜欢咖啡"
    assert john["memory"]["tags"] == ["person"]
    assert john["relations"]["links_to"] == [
        {"uri": "entity://Anthropic", "relation": "works_at"},
        {"uri": "entity://张三", "relation": "knows"},
    ]
    assert john["relations"]["linked_from"] == [{"uri": "entity://张三", "relation": "knows"}]
    assert odd["content"] == "a/b?c%d"
    assert odd["memory"]["tags"] == ["odd name"]
    assert [m["memory"]["uri"] for m in people["memories"]] == ["entity://John%20Smith"]
    assert versions["current_version"] == 1  # nothing rewritten by the second and third imports
    assert stats["total"] == 4
    assert stats["link_count"] == 3
    assert stats["by_tag"]["人物"] == 1


async def test_malformed_graph_lines_are_reported_by_line_and_nothing_is_imported(
    memory_client: MemoryClient, hostd_roots: Path
) -> None:
    lines = GRAPH.split("\n")
    broken = "\n".join(
        [
            lines[0],
            "{not json",  # line 2
            lines[1],
            json.dumps({"type": "entity", "name": "x", "entityType": "t", "observations": "not a list"}),  # 4
            json.dumps({"type": "relation", "from": "x"}),  # 5
            json.dumps(["an", "array"]),  # 6
            "",
            json.dumps({"type": "entity", "name": "y", "entityType": "a,b", "observations": []}),  # 8
            lines[4],
        ]
    )
    (hostd_roots / "broken.jsonl").write_text(broken, encoding="utf-8")
    async with memory_client() as client:
        refused = await call(client, "import_memories", input_path="broken.jsonl")
        stats = await ok(client, "get_memory_stats")
    error = refused["error"]
    assert error["code"] == "INVALID_ARGUMENT"
    assert error["details"]["argument"] == "input_path"
    assert [(p["line"], p["problem"]) for p in error["details"]["lines"]] == [
        (2, "not_json"),
        (4, "bad_observations"),
        (5, "bad_to"),
        (6, "not_entity_or_relation"),
        (8, "bad_label:bad_character"),
    ]
    assert "2, 4, 5, 6, 8" in error["message"]
    assert "nothing was imported" in error["message"]
    assert stats["total"] == 0
    assert stats["link_count"] == 0


async def test_graph_items_that_cannot_be_placed_are_reported_with_their_line(
    memory_client: MemoryClient, hostd_roots: Path
) -> None:
    graph = graph_lines(
        {"type": "entity", "name": "a", "entityType": "t", "observations": ["one"]},
        {"type": "entity", "name": "x" * 600, "entityType": "t", "observations": ["too long a name"]},
        {"type": "relation", "from": "a", "to": "nobody", "relationType": "knows"},
        {"type": "relation", "from": "ghost", "to": "a", "relationType": "haunts"},
        {"type": "entity", "name": "a", "entityType": "t", "observations": ["twice"]},
    )
    (hostd_roots / "g.jsonl").write_text(graph, encoding="utf-8")
    async with memory_client() as client:
        imported = await ok(client, "import_memories", input_path="g.jsonl")
    assert imported["created"] == 1
    assert sorted((e["line"], e["problem"].split(":")[0], e["code"]) for e in imported["errors"]) == [
        (2, "invalid_uri", "INVALID_ARGUMENT"),
        (3, "link_target_missing", "NOT_FOUND"),
        (4, "link_source_missing", "NOT_FOUND"),
        (5, "duplicate_uri", "INVALID_ARGUMENT"),
    ]


async def test_an_export_file_imports_back_through_input_path(
    memory_client: MemoryClient, hostd_roots: Path, tmp_path: Path
) -> None:
    from hostd_testing import in_memory_client

    (hostd_roots / "backup").mkdir()
    async with memory_client() as client:
        await ok(client, "create_memory", uri="a://1", content="one", tags=["t"])
        await ok(client, "create_memory", uri="a://2", content="two")
        await ok(client, "link_memories", from_uri="a://1", to_uri="a://2", relation="next")
        written = await ok(client, "export_memories", output_path="backup/all.json", include_versions=True)
    other = tmp_path / "other"
    other.mkdir()
    config = {"language": "en", "allowed_roots": [str(Path(written["output_path"]).parent)]}
    async with in_memory_client(["memory"], data_dir=other, config=config) as target:
        imported = await ok(target, "import_memories", input_path="all.json")
        read = await ok(target, "read_memory", uri="a://1")
    assert imported["source"] == "hostd-memory-export"
    assert imported["created"] == 2
    assert imported["links_added"] == 1
    assert read["memory"]["tags"] == ["t"]


async def test_input_path_refuses_what_it_must_not_read(
    memory_client: MemoryClient, hostd_roots: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hostd_memory.tools import import_export

    outside = tmp_path / "outside.jsonl"
    outside.write_text(GRAPH, encoding="utf-8")
    (hostd_roots / "link.jsonl").symlink_to(outside)
    (hostd_roots / "folder").mkdir()
    os.mkfifo(hostd_roots / "pipe.jsonl")
    (hostd_roots / "latin1.json").write_bytes(b'{"caf\xe9": 1}')
    (hostd_roots / "other.json").write_text('{"hello": "world"}', encoding="utf-8")
    (hostd_roots / "big.jsonl").write_text(GRAPH, encoding="utf-8")
    async with memory_client() as client:
        codes = {
            "outside": await error_code(client, "import_memories", input_path=str(outside)),
            "symlink": await error_code(client, "import_memories", input_path="link.jsonl"),
            "missing": await error_code(client, "import_memories", input_path="none.jsonl"),
            "folder": await error_code(client, "import_memories", input_path="folder"),
            "fifo": await error_code(client, "import_memories", input_path="pipe.jsonl"),
            "latin1": await error_code(client, "import_memories", input_path="latin1.json"),
            "unknown": await error_code(client, "import_memories", input_path="other.json"),
            "both": await error_code(
                client, "import_memories", input_path="big.jsonl", data={"format": "hostd-memory-export"}
            ),
            "neither": await error_code(client, "import_memories"),
        }
        monkeypatch.setattr(import_export, "MAX_INPUT_BYTES", 100)
        too_big = await call(client, "import_memories", input_path="big.jsonl")
        stats = await ok(client, "get_memory_stats")
    assert codes == {
        "outside": "PATH_NOT_ALLOWED",
        "symlink": "PATH_NOT_ALLOWED",
        "missing": "NOT_FOUND",
        "folder": "INVALID_ARGUMENT",  # resolve_in_roots: a folder where a file is expected
        "fifo": "PATH_NOT_ALLOWED",
        "latin1": "INVALID_ARGUMENT",
        "unknown": "INVALID_ARGUMENT",
        "both": "INVALID_ARGUMENT",
        "neither": "INVALID_ARGUMENT",
    }
    assert too_big["error"]["code"] == "TOO_LONG"
    assert too_big["error"]["details"]["limit"] == 100
    assert stats["total"] == 0


def test_an_input_file_swapped_for_a_symlink_after_resolution_is_not_read(tmp_path: Path) -> None:
    """import reads through hostd_fs's rooted reader: a file replaced by a symlink to a file outside
    the root after it was resolved is refused, never read."""
    from hostd_fs import FsError, read_beneath, resolve_beneath

    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret"
    secret.write_text("outside", encoding="utf-8")
    target = root / "memory.jsonl"
    target.write_text("{}", encoding="utf-8")
    rooted = resolve_beneath("memory.jsonl", [root], allow_missing=False, expect="file")
    target.unlink()
    target.symlink_to(secret)
    with pytest.raises(FsError) as raised:
        read_beneath(rooted, max_bytes=1_000)
    assert raised.value.code == "PATH_NOT_ALLOWED"
    assert "outside" not in str(raised.value.details)


# --- against the real npm server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def official_server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The official memory server's entry script, npm-installed into a temporary folder."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed: the official memory server cannot run")
    folder = tmp_path_factory.mktemp("server-memory")
    entry = npm_installed(folder, OFFICIAL_PACKAGE) / OFFICIAL_PACKAGE / "dist" / "index.js"
    if not entry.exists():
        require_or_skip(f"{OFFICIAL_PACKAGE} has no {entry}")
    return entry


@pytest.mark.slow
async def test_a_file_written_by_the_real_official_server_imports_and_a_second_import_changes_nothing(
    official_server: Path, memory_client: MemoryClient, hostd_roots: Path
) -> None:
    from hostd_testing import Client, StdioServerParameters

    graph_file = hostd_roots / "official" / "memory.jsonl"
    graph_file.parent.mkdir()
    server = StdioServerParameters(
        command="node", args=[str(official_server)], env={**os.environ, "MEMORY_FILE_PATH": str(graph_file)}
    )
    async with Client(server) as theirs:
        entities = [
            {"name": "Alice", "entityType": "person", "observations": ["Leads the payments team", "喜欢茶"]},
            {"name": "payments service", "entityType": "Service", "observations": ["Runs on Kubernetes"]},
            {"name": "王五", "entityType": "人物", "observations": []},
        ]
        for tool, arguments in (
            ("create_entities", {"entities": entities}),
            (
                "create_relations",
                {
                    "relations": [
                        {"from": "Alice", "to": "payments service", "relationType": "owns"},
                        {"from": "王五", "to": "Alice", "relationType": "reports to"},
                    ]
                },
            ),
            ("add_observations", {"observations": [{"entityName": "王五", "contents": ["新来的工程师"]}]}),
        ):
            answer = await theirs.call_tool(tool, arguments)
            assert not answer.is_error, answer
    written = graph_file.read_text(encoding="utf-8")
    assert '"type":"entity"' in written, written
    assert '"type":"relation"' in written, written
    async with memory_client() as client:
        first = await ok(client, "import_memories", input_path="official/memory.jsonl")
        second = await ok(client, "import_memories", input_path="official/memory.jsonl", strategy="merge")
        alice = await ok(client, "read_memory", uri="entity://Alice")
        wang = await ok(client, "read_memory", uri="entity://王五")
        services = await ok(client, "list_memories", tags=["service"])
    assert first["source"] == "official-memory-graph", first
    assert first["errors"] == [], first
    assert first["created"] == 3
    assert first["links_added"] == 2
    assert second["unchanged"] == 3
    assert second["created"] == second["links_added"] == 0
    assert alice["content"] == "Leads the payments team\n喜欢茶"
    assert alice["memory"]["tags"] == ["person"]
    assert alice["relations"]["links_to"] == [{"uri": "entity://payments%20service", "relation": "owns"}]
    assert alice["relations"]["linked_from"] == [{"uri": "entity://王五", "relation": "reports to"}]
    assert wang["content"] == "新来的工程师"
    assert wang["memory"]["version"] == 1
    assert [m["memory"]["uri"] for m in services["memories"]] == ["entity://payments%20service"]
