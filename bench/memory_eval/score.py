"""nDCG@10 of search_memory on the labelled set, beside the official server's substring search.

``python bench/memory_eval/score.py`` imports memories.jsonl into a fresh in-process host,
runs every query of queries.json through ``search_memory`` and through a re-implementation
of ``search_nodes`` from @modelcontextprotocol/server-memory (a case-insensitive substring
test of the whole query against each entity's name, type and observations, answered in file
order), and prints both scores by query style. bench_memory.py reuses these functions and
also runs the real npm server on the same data.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def load() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    memories = [
        json.loads(line) for line in (HERE / "memories.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    queries = json.loads((HERE / "queries.json").read_text(encoding="utf-8"))
    return memories, queries


def ndcg_at_10(ranked: list[str], relevant: set[str]) -> float:
    """Binary-relevance nDCG@10."""
    gains = sum(1 / math.log2(rank + 2) for rank, uri in enumerate(ranked[:10]) if uri in relevant)
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(10, len(relevant))))
    return gains / ideal if ideal else 0.0


def as_entity(memory: dict[str, Any]) -> dict[str, Any]:
    """How the same memory looks in the official server's JSONL knowledge graph."""
    observations = [memory["content"]] + ([memory["disclosure"]] if memory.get("disclosure") else [])
    return {
        "type": "entity",
        "name": memory["uri"],
        "entityType": memory["uri"].split("://", 1)[0],
        "observations": observations,
    }


def substring_search(entities: list[dict[str, Any]], query: str) -> list[str]:
    """The official search_nodes: whole-query substring, case-insensitive, in file order."""
    needle = query.lower()
    return [
        e["name"]
        for e in entities
        if needle in e["name"].lower()
        or needle in e["entityType"].lower()
        or any(needle in o.lower() for o in e["observations"])
    ]


def import_document(memories: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [{k: m[k] for k in ("uri", "content", "priority", "disclosure")} for m in memories],
    }


def summarise(scores: list[tuple[str, float]]) -> dict[str, float]:
    by_style: dict[str, list[float]] = {"all": []}
    for style, score in scores:
        by_style["all"].append(score)
        by_style.setdefault(style, []).append(score)
    return {style: sum(values) / len(values) for style, values in by_style.items()}


def recall_at_10(ranked: list[str], relevant: set[str]) -> float:
    """The share of the relevant memories found in the first ten."""
    return len(relevant & set(ranked[:10])) / len(relevant) if relevant else 0.0


async def score_in_process(
    memories: list[dict[str, Any]],
    queries: list[dict[str, Any]],
    config: dict[str, Any] | None = None,
) -> dict[str, float]:
    """nDCG@10 by query style; ``config`` adds to the host's config (``storage`` for PostgreSQL)."""
    from hostd_testing import in_memory_client

    with tempfile.TemporaryDirectory() as data_dir:
        async with in_memory_client(
            ["memory"], data_dir=Path(data_dir), config={"language": "en", **(config or {})}
        ) as client:
            await client.call_tool("import_memories", {"data": import_document(memories)})
            scores = []
            for query in queries:
                result = await client.call_tool("search_memory", {"query": query["query"], "limit": 10})
                ranked = [hit["uri"] for hit in result.structured_content["hits"]]
                scores.append((query["style"], ndcg_at_10(ranked, set(query["relevant"]))))
    return summarise(scores)


async def score_conversations(
    memories: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    fresh_config: Any = dict,
) -> dict[str, dict[str, float]]:
    """recall@10 and nDCG@10 by question category on the conversations (conversations.py): each
    conversation in a store of its own, as an assistant keeps one chat's turns. ``fresh_config()``
    gives the config of a new empty store (``storage`` naming a new PostgreSQL database)."""
    from hostd_testing import in_memory_client

    recall: list[tuple[str, float]] = []
    ndcg: list[tuple[str, float]] = []
    for conversation in dict.fromkeys(m["conversation"] for m in memories):
        turns = [m for m in memories if m["conversation"] == conversation]
        with tempfile.TemporaryDirectory() as data_dir:
            async with in_memory_client(
                ["memory"], data_dir=Path(data_dir), config={"language": "en", **fresh_config()}
            ) as client:
                await client.call_tool("import_memories", {"data": import_document(turns)})
                for question in questions:
                    if question["conversation"] != conversation:
                        continue
                    arguments = {"query": question["query"], "limit": 10}
                    result = await client.call_tool("search_memory", arguments)
                    ranked = [hit["uri"] for hit in result.structured_content["hits"]]
                    evidence = set(question["evidence"])
                    recall.append((question["category"], recall_at_10(ranked, evidence)))
                    ndcg.append((question["category"], ndcg_at_10(ranked, evidence)))
    return {"recall": summarise(recall), "ndcg": summarise(ndcg)}


def score_substring(memories: list[dict[str, Any]], queries: list[dict[str, Any]]) -> dict[str, float]:
    entities = [as_entity(m) for m in memories]
    return summarise(
        [
            (q["style"], ndcg_at_10(substring_search(entities, q["query"]), set(q["relevant"])))
            for q in queries
        ]
    )


def main() -> None:
    import anyio

    memories, queries = load()
    ours = anyio.run(score_in_process, memories, queries)
    theirs = score_substring(memories, queries)
    print(f"{len(memories)} memories, {len(queries)} queries; nDCG@10 by query style")
    print(f"{'style':<12} {'search_memory':>14} {'substring (official)':>22}")
    for style in ours:
        print(f"{style:<12} {ours[style]:>14.3f} {theirs[style]:>22.3f}")
    if ours["all"] < 0.7:
        sys.exit("search_memory scored below the 0.7 target")


if __name__ == "__main__":
    main()
