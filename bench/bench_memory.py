"""memory benchmarks against the official @modelcontextprotocol/server-memory, in one run.

Both servers are real processes driven over stdio by the official Python MCP client, on the
same generated data (bench/memory_eval/generate.py: mixed Chinese and English team notes):

- search at N = 10,000: the same 200 queries, ``search_memory`` against ``search_nodes``;
  target: our median at least 20x faster; each of our searches is followed by a call to the
  bare SDK server's ``trivial`` tool (``bench/baseline_server.py``), the round-trip floor;
- our search at N = 100,000 (round trip), short one- and two-character Chinese queries on
  their own line; target: median under 15 ms;
- insert cost: median of 1,000 ``create_memory`` calls at N = 0, 10,000 and 100,000; target:
  10k and 100k at most 1.3x the N = 0 median; theirs (``create_entities``) too, with fewer
  inserts at 100,000 because each one rewrites the whole file;
- our server's peak RSS (VmHWM) at N = 100,000; target under 200 MB;
- search quality: nDCG@10 on the labelled set for ``search_memory``, the real npm server's
  ``search_nodes`` and the substring re-implementation;
- issue 16 at N = 100,000 (its own section, ``memory-filters``): ``search_memory`` with tag and
  time filters (target: median round trip under 15 ms), ``list_memories`` with the same filters,
  and ``read_memory`` of single memories, which lists related memories (its bounded cost).

Ours is seeded in bulk through ``import_memories``; theirs by writing its JSONL file (its
MEMORY_FILE_PATH), since it rewrites the whole file on every insert.

Run: ``.venv/bin/python bench/bench_memory.py`` (installs the npm server into bench/.work);
``--only filters`` runs only the issue 16 cases (seeds its own 100,000 memories, no npm needed);
``--only backends`` runs SQLite and the team database (PostgreSQL, a server the script starts)
side by side at ``--memories`` N (section ``memory-backends``: search round trips, insert cost at
1,000 and N, nDCG@10), ``--only postgres`` only its PostgreSQL cases; ``--only quality`` the
search quality of both backends on bench/memory_eval and on the long conversations of
bench/memory_eval/conversations.py (recall@10 and nDCG@10, section ``memory-quality``).

The 100,000 memories carry tags and creation times (``with_tags_and_times``): a service tag
(1 in 12), a kind (1 in 8) and a team (1 in 50), created over one year.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import yaml
from benchlib import BENCH_DIR, WORK, median, p95, table, write_section
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from memory_eval import conversations
from memory_eval.generate import ASPECTS, SERVICES, build_corpus
from memory_eval.score import (
    as_entity,
    import_document,
    load,
    ndcg_at_10,
    score_conversations,
    score_in_process,
    substring_search,
    summarise,
)

SCRATCH = WORK / "memory"
BASELINE = BENCH_DIR / "baseline_server.py"
NPM_DIR = WORK / "npm-server-memory"
NPM_PACKAGE = "@modelcontextprotocol/server-memory"
SEARCHES = 200
INSERTS = 1_000
THEIR_INSERTS_AT_100K = 30
IMPORT_BATCH = 5_000
CONTEXT = 12  # up to this many background sentences per memory: paragraph-sized notes
SHORT_QUERIES = ["锁", "缓存", "日志", "限流", "部署", "鉴权", "超时", "订单", "库存", "周会"]
KINDS = ["ops", "incident", "decision", "design", "meeting", "howto", "review", "oncall"]
TEAMS = 50
YEAR_START = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
FILTERED_SEARCHES = 200
READS = 200
BENCH_DATABASE_ENV = "HOSTD_BENCH_MEMORY_DATABASE_URL"
BACKEND_INSERTS = 300  # create_memory calls timed at N = 1,000 and at N (each backend)


def install_official_server() -> tuple[Path, str]:
    """npm-install the official server into bench/.work (once) and return its entry script and version."""
    entry = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    if not entry.exists():
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(NPM_DIR), NPM_PACKAGE],
            check=True,
            capture_output=True,
        )
    package = json.loads((entry.parent.parent / "package.json").read_text())
    return entry, package["version"]


def benchmark_queries(count: int, seed: int = 3) -> list[str]:
    """Queries of every style (pairs in both languages, questions, mixed), without short ones."""
    rng = random.Random(seed)
    templates = [
        "{zh} {zh_word}",
        "{en} {en_word}",
        "{zh}{zh_word}了怎么办",
        "how did we handle {en_word} in {en}",
        "{zh} {en_word}",
        "{en_word}",
        "{zh}的{zh_word}是怎么配置的",
    ]
    queries = []
    for i in range(count):
        en, zh = rng.choice(SERVICES)
        zh_word, en_word = ASPECTS[rng.choice(list(ASPECTS))][:2]
        queries.append(templates[i % len(templates)].format(en=en, zh=zh, zh_word=zh_word, en_word=en_word))
    return queries


def our_config(directory: Path, backend: str = "sqlite") -> Path:
    """A config serving memory alone: its SQLite file, or with ``backend="postgres"`` the team
    database whose URL is in ``$BENCH_DATABASE_ENV``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "hostd.yaml"
    storage = {"storage": {"url_env": BENCH_DATABASE_ENV}} if backend == "postgres" else {}
    path.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(directory / "data"),
                "language": "en",
                "profiles": {"default": {"plugins": ["memory"]}},
                **storage,
            }
        ),
        encoding="utf-8",
    )
    return path


def ours(directory: Path, backend: str = "sqlite") -> Client:
    return Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "hostd", "serve", "--config", str(our_config(directory, backend))],
            env=dict(os.environ),
        )
    )


def theirs(entry: Path, jsonl: Path) -> Client:
    return Client(
        StdioServerParameters(
            command="node", args=[str(entry)], env={**os.environ, "MEMORY_FILE_PATH": str(jsonl)}
        )
    )


def write_jsonl(path: Path, memories: Sequence[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for memory in memories:
            out.write(json.dumps(as_entity(memory), ensure_ascii=False) + "\n")


async def timed(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content[0].text[:500]}")
    return elapsed, result


def with_tags_and_times(memories: Sequence[dict[str, Any]], seed: int = 16) -> list[dict[str, Any]]:
    """The memories with tags (service, kind, team) and creation times spread over 2025."""
    rng = random.Random(seed)
    tagged = []
    for number, memory in enumerate(memories):
        service = memory.get("service") or memory["uri"].split("://", 1)[1].split("/", 1)[0]
        created = YEAR_START + datetime.timedelta(seconds=rng.randrange(365 * 86_400))
        stamp = created.isoformat().replace("+00:00", "Z")
        tagged.append(
            {
                **memory,
                "tags": [service, KINDS[number % len(KINDS)], f"team-{rng.randrange(TEAMS)}"],
                "created_at": stamp,
                "updated_at": stamp,
            }
        )
    return tagged


def tagged_import_document(memories: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """An export document with the tags and times of ``with_tags_and_times`` (plain ones otherwise)."""
    document = import_document(list(memories))
    for entry, memory in zip(document["memories"], memories, strict=True):
        entry.update({k: memory[k] for k in ("tags", "created_at", "updated_at") if k in memory})
    return document


async def seed_ours(client: Client, memories: Sequence[dict[str, Any]]) -> float:
    started = time.perf_counter()
    for start in range(0, len(memories), IMPORT_BATCH):
        await timed(
            client,
            "import_memories",
            {"data": tagged_import_document(list(memories[start : start + IMPORT_BATCH]))},
        )
    return time.perf_counter() - started


def filtered_requests(queries: Sequence[str], seed: int = 5) -> list[dict[str, Any]]:
    """search_memory arguments: each query with a tag (service, kind or team, in turn) and a time window."""
    rng = random.Random(seed)
    requests = []
    for number, query in enumerate(queries):
        tag = [rng.choice(SERVICES)[0], rng.choice(KINDS), f"team-{rng.randrange(TEAMS)}"][number % 3]
        start = YEAR_START + datetime.timedelta(days=rng.randrange(300))
        window = {
            0: {"created_after": start.date().isoformat()},
            1: {"created_before": (start + datetime.timedelta(days=60)).isoformat()},
            2: {
                "updated_after": start.isoformat(),
                "updated_before": (start + datetime.timedelta(days=90)).isoformat(),
            },
        }[number % 3]
        requests.append({"query": query, "limit": 10, "tags": [tag], **window})
    return requests


async def filter_cases(
    client: Client, queries: Sequence[str], corpus: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """Issue 16 at N = 100,000: filtered searches and listings, and reads with related memories."""
    requests = filtered_requests(queries[:FILTERED_SEARCHES])
    for request in requests[:5]:
        await client.call_tool("search_memory", request)
    search_times, hit_counts = [], []
    for request in requests:
        elapsed, result = await timed(client, "search_memory", request)
        search_times.append(elapsed)
        hit_counts.append(result.structured_content["count"])
    list_times = []
    for request in requests[:100]:
        arguments = {k: v for k, v in request.items() if k not in ("query",)}
        list_times.append((await timed(client, "list_memories", arguments))[0])
    rng = random.Random(9)
    sample = rng.sample(list(corpus), READS)
    for memory in sample[:5]:
        await client.call_tool("read_memory", {"uri": memory["uri"]})
    read_times, related_counts = [], []
    for memory in sample:
        elapsed, result = await timed(client, "read_memory", {"uri": memory["uri"]})
        read_times.append(elapsed)
        related_counts.append(len(result.structured_content["relations"]["related"]))
    return {
        "search": search_times,
        "hits": hit_counts,
        "list": list_times,
        "read": read_times,
        "related": related_counts,
    }


def write_filters_section(results: dict[str, Any], seeded_s: float, total: int) -> None:
    verdict = {True: "met", False: "**missed**"}
    search, listing, read = results["search"], results["list"], results["read"]
    with_hits = sum(1 for count in results["hits"] if count)
    body = "\n\n".join(
        [
            f"hostd memory over stdio with the official Python MCP client (round trips), N = {total:,} "
            "memories of bench/memory_eval/generate.py, each with three tags (a service: 1 in 12, a kind: "
            "1 in 8, a team: 1 in 50) and a creation time in 2025; seeded through import_memories in "
            f"{seeded_s:.0f} s.",
            table(
                ["request", "calls", "median", "p95", "target"],
                [
                    [
                        "`search_memory` with one tag and a time window",
                        len(search),
                        ms(median(search)),
                        ms(p95(search)),
                        f"< 15 ms: {verdict[median(search) < 15]} ({with_hits} of {len(search)} with hits)",
                    ],
                    [
                        "`list_memories` with the same tag and window",
                        len(listing),
                        ms(median(listing)),
                        ms(p95(listing)),
                        "",
                    ],
                    [
                        "`read_memory` (with up to 5 related memories)",
                        len(read),
                        ms(median(read)),
                        ms(p95(read)),
                        f"{sum(results['related']) / len(read):.1f} related per read",
                    ],
                ],
            ),
            "Related memories cost the same at any N: at most 64 terms of the memory's first 4,000 "
            "characters and its tags are counted with queries that stop at 201 memories (tokens found "
            "common are remembered, so a warm server counts fewer), and only the memories holding the 8 "
            "rarest of them (at most 1,600) are ranked. The generated notes share their wording, so few "
            "of their terms are rare: most reads find no related memory, and pay the counting all the same.",
        ]
    )
    write_section(
        "memory-filters",
        "memory: tags, time filters and related memories at 100,000 memories",
        body,
        packages=("hostd-memory",),
    )


async def run_filters_only() -> None:
    """Only the issue 16 cases: seed 100,000 tagged memories, measure, write their section."""
    directory = SCRATCH / "filters-100k"
    if directory.exists():
        shutil.rmtree(directory)
    corpus = with_tags_and_times(build_corpus(100_000, seed=202, context_sentences=CONTEXT))
    async with ours(directory) as client:
        seeded = await seed_ours(client, corpus)
        results = await filter_cases(client, benchmark_queries(SEARCHES), corpus)
    write_filters_section(results, seeded, len(corpus))


async def searches(
    client: Client,
    tool: str,
    queries: Sequence[str],
    *,
    ours_: bool,
    floor: Client | None = None,
    floor_times: list[float] | None = None,
) -> list[float]:
    """Search times; with ``floor``, a bare ``trivial`` call after each search goes into ``floor_times``."""
    for query in queries[:5]:  # warm caches and the page cache once
        await client.call_tool(tool, {"query": query, "limit": 10} if ours_ else {"query": query})
        if floor is not None:
            await floor.call_tool("trivial", {"text": "warm"})
    times = []
    for query in queries:
        elapsed, _ = await timed(client, tool, {"query": query, "limit": 10} if ours_ else {"query": query})
        times.append(elapsed)
        if floor is not None and floor_times is not None:
            floor_times.append((await timed(floor, "trivial", {"text": "x"}))[0])
    return times


async def our_inserts(client: Client, count: int, tag: str) -> list[float]:
    times = []
    for i in range(count):
        elapsed, _ = await timed(
            client,
            "create_memory",
            {
                "uri": f"bench://{tag}/insert-{i}",
                "content": f"新增的记忆 {i}：{tag} 的 payment-service 在 {i % 24} 点有一次发布，记录备查。",
                "priority": 5,
            },
        )
        times.append(elapsed)
    return times


async def their_inserts(client: Client, count: int, tag: str) -> list[float]:
    times = []
    for i in range(count):
        elapsed, _ = await timed(
            client,
            "create_entities",
            {
                "entities": [
                    {
                        "name": f"bench://{tag}/insert-{i}",
                        "entityType": "bench",
                        "observations": [
                            f"新增的记忆 {i}：{tag} 的 payment-service 在 {i % 24} 点有一次发布，记录备查。"
                        ],
                    }
                ]
            },
        )
        times.append(elapsed)
    return times


def server_peak_rss_mb() -> float:
    """VmHWM of the hostd server this process started (found among its children)."""
    me = os.getpid()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            cmdline = (status.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
        if int(fields.get("PPid", "0").strip()) == me and "hostd" in cmdline and "serve" in cmdline:
            return int(fields["VmHWM"].split()[0]) / 1024
    raise RuntimeError("could not find the hostd server process")


def ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 100 else f"{value:.0f} ms"


async def quality(entry: Path) -> list[list[object]]:
    """nDCG@10 on the labelled set: ours, the real npm server, and the substring re-implementation."""
    memories, queries = load()
    scores_ours = []
    async with ours(SCRATCH / "eval") as client:
        await seed_ours(client, memories)
        for query in queries:
            _, result = await timed(client, "search_memory", {"query": query["query"], "limit": 10})
            ranked = [hit["uri"] for hit in result.structured_content["hits"]]
            scores_ours.append((query["style"], ndcg_at_10(ranked, set(query["relevant"]))))
    jsonl = SCRATCH / "eval-theirs.jsonl"
    write_jsonl(jsonl, memories)
    scores_npm = []
    async with theirs(entry, jsonl) as client:
        for query in queries:
            _, result = await timed(client, "search_nodes", {"query": query["query"]})
            ranked = [e["name"] for e in (result.structured_content or {}).get("entities", [])]
            scores_npm.append((query["style"], ndcg_at_10(ranked, set(query["relevant"]))))
    entities = [as_entity(m) for m in memories]
    scores_re = [
        (q["style"], ndcg_at_10(substring_search(entities, q["query"]), set(q["relevant"]))) for q in queries
    ]
    a, b, c = summarise(scores_ours), summarise(scores_npm), summarise(scores_re)
    counts = {"all": len(queries)}
    for query in queries:
        counts[query["style"]] = counts.get(query["style"], 0) + 1
    return [[style, counts[style], f"{a[style]:.3f}", f"{b[style]:.3f}", f"{c[style]:.3f}"] for style in a]


async def run() -> None:
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    entry, their_version = install_official_server()
    started = time.perf_counter()
    quality_rows = await quality(entry)
    queries = benchmark_queries(SEARCHES)

    # N = 0: inserts into empty stores.
    async with ours(SCRATCH / "ours-0") as client:
        ours_insert_0 = await our_inserts(client, INSERTS, "n0")
    async with theirs(entry, SCRATCH / "theirs-0.jsonl") as client:
        theirs_insert_0 = await their_inserts(client, INSERTS, "n0")

    # N = 10,000: searches side by side, then inserts.
    corpus_10k = build_corpus(10_000, seed=101, context_sentences=CONTEXT)
    bare = StdioServerParameters(command=sys.executable, args=[str(BASELINE)], env=dict(os.environ))
    floor_10k: list[float] = []
    async with ours(SCRATCH / "ours-10k") as client, Client(bare) as floor:
        ours_seed_10k = await seed_ours(client, corpus_10k)
        ours_search_10k = await searches(
            client, "search_memory", queries, ours_=True, floor=floor, floor_times=floor_10k
        )
        ours_insert_10k = await our_inserts(client, INSERTS, "n10k")
    write_jsonl(SCRATCH / "theirs-10k.jsonl", corpus_10k)
    async with theirs(entry, SCRATCH / "theirs-10k.jsonl") as client:
        theirs_search_10k = await searches(client, "search_nodes", queries, ours_=False)
        theirs_insert_10k = await their_inserts(client, INSERTS, "n10k")

    # N = 100,000: our searches (short ones apart), inserts, peak memory; theirs inserts only.
    corpus_100k = with_tags_and_times(build_corpus(100_000, seed=202, context_sentences=CONTEXT))
    async with ours(SCRATCH / "ours-100k") as client:
        ours_seed_100k = await seed_ours(client, corpus_100k)
        ours_search_100k = await searches(client, "search_memory", queries, ours_=True)
        ours_short_100k = await searches(client, "search_memory", SHORT_QUERIES * 20, ours_=True)
        filter_results = await filter_cases(client, queries, corpus_100k)
        ours_insert_100k = await our_inserts(client, INSERTS, "n100k")
        peak_mb = server_peak_rss_mb()
    write_filters_section(filter_results, ours_seed_100k, len(corpus_100k))
    write_jsonl(SCRATCH / "theirs-100k.jsonl", corpus_100k)
    async with theirs(entry, SCRATCH / "theirs-100k.jsonl") as client:
        theirs_insert_100k = await their_inserts(client, THEIR_INSERTS_AT_100K, "n100k")
        theirs_search_100k = await searches(client, "search_nodes", queries[:20], ours_=False)
    total_s = time.perf_counter() - started

    node_version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    mean_chars = sum(len(m["content"]) for m in corpus_10k) / len(corpus_10k)
    search_ratio = median(theirs_search_10k) / median(ours_search_10k)
    flat_10k = median(ours_insert_10k) / median(ours_insert_0)
    flat_100k = median(ours_insert_100k) / median(ours_insert_0)
    verdict = {True: "met", False: "**missed**"}
    body = "\n\n".join(
        [
            f"Official server: `{NPM_PACKAGE}` {their_version} (node {node_version}), "
            "JSONL via MEMORY_FILE_PATH. "
            "Both over stdio with the official Python MCP client; times are round trips. "
            "Data: bench/memory_eval/generate.py corpora (mixed Chinese/English team notes with "
            f"{CONTEXT // 2} to {CONTEXT} "
            f"background sentences each; mean {mean_chars:.0f} characters per memory at N=10,000). "
            f"Whole run {total_s:.0f} s.",
            "### Search (200 queries, limit 10 for ours)",
            table(
                ["N", "server", "median", "p95", "target"],
                [
                    [
                        "10,000",
                        "hostd memory `search_memory`",
                        ms(median(ours_search_10k)),
                        ms(p95(ours_search_10k)),
                        f"{search_ratio:.0f}x faster than theirs (>= 20x: {verdict[search_ratio >= 20]})",
                    ],
                    [
                        "10,000",
                        "official `search_nodes`",
                        ms(median(theirs_search_10k)),
                        ms(p95(theirs_search_10k)),
                        "",
                    ],
                    [
                        "-",
                        "bare SDK `MCPServer` `trivial` (round-trip floor, after each of our searches)",
                        ms(median(floor_10k)),
                        ms(p95(floor_10k)),
                        f"ours minus floor: {ms(median(ours_search_10k) - median(floor_10k))} (medians)",
                    ],
                    [
                        "100,000",
                        "hostd memory, all queries",
                        ms(median(ours_search_100k)),
                        ms(p95(ours_search_100k)),
                        f"< 15 ms: {verdict[median(ours_search_100k) < 15]}",
                    ],
                    [
                        "100,000",
                        "hostd memory, 1-2 character Chinese",
                        ms(median(ours_short_100k)),
                        ms(p95(ours_short_100k)),
                        f"< 15 ms: {verdict[median(ours_short_100k) < 15]}",
                    ],
                    [
                        "100,000",
                        "official `search_nodes` (20 queries)",
                        ms(median(theirs_search_100k)),
                        ms(p95(theirs_search_100k)),
                        "",
                    ],
                ],
            ),
            "### Insert cost (median of each run of inserts)",
            table(
                ["N", "hostd memory `create_memory`", "vs N=0", "official `create_entities`", "vs N=0"],
                [
                    ["0", ms(median(ours_insert_0)), "1.00x", ms(median(theirs_insert_0)), "1.00x"],
                    [
                        "10,000",
                        ms(median(ours_insert_10k)),
                        f"{flat_10k:.2f}x",
                        ms(median(theirs_insert_10k)),
                        f"{median(theirs_insert_10k) / median(theirs_insert_0):.1f}x",
                    ],
                    [
                        "100,000",
                        ms(median(ours_insert_100k)),
                        f"{flat_100k:.2f}x",
                        f"{ms(median(theirs_insert_100k))} ({THEIR_INSERTS_AT_100K} inserts)",
                        f"{median(theirs_insert_100k) / median(theirs_insert_0):.1f}x",
                    ],
                ],
            )
            + f"\n\nTarget: ours at 10k and 100k <= 1.3x N=0: {verdict[max(flat_10k, flat_100k) <= 1.3]}. "
            f"{INSERTS} inserts per row for ours.",
            "### Memory and seeding",
            table(
                ["measure", "value", "target"],
                [
                    [
                        "hostd server peak RSS (VmHWM) at N=100,000",
                        f"{peak_mb:.0f} MB",
                        f"< 200 MB: {verdict[peak_mb < 200]}",
                    ],
                    ["seeding 10,000 through import_memories", f"{ours_seed_10k:.1f} s", ""],
                    ["seeding 100,000 through import_memories", f"{ours_seed_100k:.1f} s", ""],
                ],
            ),
            "### Search quality (nDCG@10, bench/memory_eval: 2,100 memories, 66 labelled queries)",
            table(
                [
                    "query style",
                    "queries",
                    "hostd `search_memory`",
                    "official `search_nodes` (npm)",
                    "substring re-implementation",
                ],
                quality_rows,
            )
            + "\n\nThe labels come from how the corpus was generated (each note is about one service and "
            "one aspect); notes written only in the other language than the query are relevant but share no "
            "words with it, "
            "which caps what lexical search can reach on the zh-short, zh-long and mixed styles.",
        ]
    )
    write_section(
        "memory",
        "memory: SQLite FTS5 against @modelcontextprotocol/server-memory",
        body,
        packages=("hostd-memory",),
    )


async def backend_case(
    backend: str, total: int, fresh_database: Callable[[], None] = lambda: None
) -> dict[str, Any]:
    """One backend: insert cost at N = 1,000 and at ``total``, search round trips at ``total``,
    nDCG@10 on the labelled set (its own fresh store: ``fresh_database`` points the team
    database's variable at a new database before each store)."""
    fresh_database()
    directory = SCRATCH / f"backends-{backend}"
    if directory.exists():
        shutil.rmtree(directory)
    corpus = build_corpus(total, seed=303, context_sentences=CONTEXT)
    result: dict[str, Any] = {"backend": backend, "total": total}
    async with ours(directory, backend) as client:
        seeded = await seed_ours(client, corpus[:1_000])
        result["insert_1k"] = await our_inserts(client, BACKEND_INSERTS, "at-1k")
        seeded += await seed_ours(client, corpus[1_000:])
        result["seeded_s"] = seeded
        result["insert_n"] = await our_inserts(client, BACKEND_INSERTS, "at-n")
        result["search"] = await searches(client, "search_memory", benchmark_queries(SEARCHES), ours_=True)
        result["short"] = await searches(client, "search_memory", SHORT_QUERIES * 10, ours_=True)
    memories, queries = load()
    eval_directory = SCRATCH / f"eval-{backend}"
    if eval_directory.exists():
        shutil.rmtree(eval_directory)
    scores = []
    fresh_database()
    async with ours(eval_directory, backend) as client:
        await seed_ours(client, memories)
        for query in queries:
            _, answer = await timed(client, "search_memory", {"query": query["query"], "limit": 10})
            ranked = [hit["uri"] for hit in answer.structured_content["hits"]]
            scores.append((query["style"], ndcg_at_10(ranked, set(query["relevant"]))))
    result["ndcg"] = summarise(scores)
    return result


def write_backends_section(runs: list[dict[str, Any]], total: int) -> None:
    verdict = {True: "met", False: "**missed**"}
    by = {run["backend"]: run for run in runs}
    rows = []
    for run in runs:
        ratio = median(run["insert_n"]) / median(run["insert_1k"])
        rows.append(
            [
                run["backend"],
                f"{run['seeded_s']:.0f} s",
                ms(median(run["search"])),
                ms(p95(run["search"])),
                ms(median(run["short"])),
                ms(median(run["insert_1k"])),
                ms(median(run["insert_n"])),
                f"{ratio:.2f}x ({verdict[ratio <= 1.3]})",
                f"{run['ndcg']['all']:.3f}",
            ]
        )
    notes = []
    if "postgres" in by:
        pg = by["postgres"]
        notes.append(
            f"PostgreSQL search median {ms(median(pg['search']))} at N = {total:,}: "
            f"< 15 ms {verdict[median(pg['search']) < 15]}."
        )
        if "sqlite" in by:
            gap = pg["ndcg"]["all"] - by["sqlite"]["ndcg"]["all"]
            notes.append(
                f"nDCG@10 PostgreSQL minus SQLite: {gap:+.3f} "
                f"(within 0.03 or better: {verdict[gap >= -0.03]})."
            )
    styles = sorted(runs[0]["ndcg"])
    quality_rows = [[style, *(f"{run['ndcg'][style]:.3f}" for run in runs)] for style in styles]
    body = "\n\n".join(
        [
            f"hostd memory over stdio with the official Python MCP client (round trips), N = {total:,} "
            "memories of bench/memory_eval/generate.py seeded through import_memories, on the SQLite "
            "file and on the team database (PostgreSQL 15 started by the script with initdb/pg_ctl on "
            "127.0.0.1, `storage` in the config). Insert cost: the median of "
            f"{BACKEND_INSERTS} `create_memory` calls at N = 1,000 and at N; target at most 1.3x. "
            f"Search: {SEARCHES} queries of every style (limit 10), then the 1-2 character Chinese "
            "queries; target for PostgreSQL: median under 15 ms.",
            table(
                [
                    "backend",
                    "seeding",
                    "search median",
                    "search p95",
                    "1-2 char median",
                    "create at 1,000",
                    f"create at {total:,}",
                    "ratio (<= 1.3x)",
                    "nDCG@10",
                ],
                rows,
            ),
            " ".join(notes),
            "nDCG@10 by query style (bench/memory_eval, 2,100 memories, 66 labelled queries):",
            table(["style", *(run["backend"] for run in runs)], quality_rows),
        ]
    )
    write_section(
        "memory-backends",
        f"memory: SQLite and PostgreSQL side by side at {total:,} memories",
        body,
        packages=("hostd-memory", "hostd-db"),
    )


async def run_backends(total: int, backends: Sequence[str]) -> None:
    """The side-by-side cases; PostgreSQL is a throw-away server this script starts."""
    from hostd_testing.postgres import running_postgres

    runs = []
    if "sqlite" in backends:
        runs.append(await backend_case("sqlite", total))
    if "postgres" in backends:
        with running_postgres() as server:

            def fresh_database() -> None:
                os.environ[BENCH_DATABASE_ENV] = server.create_database("bench")

            runs.append(await backend_case("postgres", total, fresh_database))
    write_backends_section(runs, total)


async def run_search_only() -> None:
    """Only the search at N = 10,000 against the official server (section ``memory-search``): the
    ratio of the medians, as in the whole run, for a quick check of a ranking change."""
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    entry, their_version = install_official_server()
    queries = benchmark_queries(SEARCHES)
    corpus = build_corpus(10_000, seed=101, context_sentences=CONTEXT)
    bare = StdioServerParameters(command=sys.executable, args=[str(BASELINE)], env=dict(os.environ))
    floor: list[float] = []
    async with ours(SCRATCH / "ours-10k") as client, Client(bare) as floor_client:
        await seed_ours(client, corpus)
        mine = await searches(
            client, "search_memory", queries, ours_=True, floor=floor_client, floor_times=floor
        )
    write_jsonl(SCRATCH / "theirs-10k.jsonl", corpus)
    async with theirs(entry, SCRATCH / "theirs-10k.jsonl") as client:
        their = await searches(client, "search_nodes", queries, ours_=False)
    ratio = median(their) / median(mine)
    print(f"search at 10,000: ours {median(mine):.2f} ms, theirs {median(their):.2f} ms, ratio {ratio:.1f}x")
    body = "\n\n".join(
        [
            f"The search case of the whole run alone (`--only search`): {SEARCHES} queries at N = 10,000, "
            f"over stdio, against `{NPM_PACKAGE}` {their_version}.",
            table(
                ["server", "median", "p95", "ratio"],
                [
                    ["hostd memory `search_memory`", ms(median(mine)), ms(p95(mine)), f"{ratio:.1f}x faster"],
                    ["official `search_nodes`", ms(median(their)), ms(p95(their)), ""],
                    ["bare SDK `trivial` (floor)", ms(median(floor)), ms(p95(floor)), ""],
                ],
            ),
        ]
    )
    write_section("memory-search", "memory: search at 10,000 memories against the official server", body,
                  packages=("hostd-memory",))  # fmt: skip


async def run_quality(backends: Sequence[str]) -> None:
    """Search quality on both labelled sets, each backend: nDCG@10 on bench/memory_eval (team
    notes, Chinese and English) and recall@10 and nDCG@10 on the conversations (section
    ``memory-quality``). In process: quality does not depend on the transport."""
    from hostd_testing.postgres import running_postgres

    notes, note_queries = load()
    turns, questions = conversations.load()
    runs: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for backend in backends:
        if backend == "sqlite":
            runs[backend] = {
                "notes": await score_in_process(notes, note_queries),
                "chat": await score_conversations(turns, questions),
            }
            continue
        with running_postgres() as server:

            def fresh() -> dict[str, Any]:
                os.environ[BENCH_DATABASE_ENV] = server.create_database("quality")
                return {"storage": {"url_env": BENCH_DATABASE_ENV}}

            runs[backend] = {
                "notes": await score_in_process(notes, note_queries, fresh()),
                "chat": await score_conversations(turns, questions, fresh),
            }
    elapsed = time.perf_counter() - started
    names = list(runs)
    counts: dict[str, int] = {"all": len(questions)}
    for question in questions:
        counts[question["category"]] = counts.get(question["category"], 0) + 1
    chat_rows = [
        [
            category,
            counts[category],
            *(f"{runs[b]['chat']['recall'][category]:.3f}" for b in names),
            *(f"{runs[b]['chat']['ndcg'][category]:.3f}" for b in names),
        ]
        for category in runs[names[0]]["chat"]["recall"]
    ]
    note_counts: dict[str, int] = {"all": len(note_queries)}
    for query in note_queries:
        note_counts[query["style"]] = note_counts.get(query["style"], 0) + 1
    note_rows = [
        [style, note_counts[style], *(f"{runs[b]['notes'][style]:.3f}" for b in names)]
        for style in runs[names[0]]["notes"]
    ]
    verdict = {True: "met", False: "**missed**"}
    targets = " ".join(
        f"{b}: recall@10 {runs[b]['chat']['recall']['all']:.3f} (>= 0.70: "
        f"{verdict[runs[b]['chat']['recall']['all'] >= 0.70]}), memory_eval nDCG@10 "
        f"{runs[b]['notes']['all']:.3f}."
        for b in names
    )
    sessions = len({m["uri"].rsplit("/", 1)[0] for m in turns})
    chats = len({m["conversation"] for m in turns})
    body = "\n\n".join(
        [
            "`search_memory` (limit 10) in process, each backend on fresh stores (PostgreSQL 15 started by "
            f"the script with initdb/pg_ctl). Whole run {elapsed:.0f} s. {targets}",
            f"### Conversations (bench/memory_eval/conversations.py: {chats} conversations, {sessions} "
            f"sessions, {len(turns):,} turns, {len(questions)} questions)",
            "Each turn is one memory (`Maya (1:56 pm on 8 May, 2023): I finally went to the climbing gym "
            "yesterday!`); each conversation is searched in a store of its own. recall@10: the share of a "
            "question's evidence turns in the first ten hits (multi-hop questions have two), averaged.",
            table(
                [
                    "category",
                    "questions",
                    *(f"recall@10 {b}" for b in names),
                    *(f"nDCG@10 {b}" for b in names),
                ],
                chat_rows,
            ),
            f"### Team notes (bench/memory_eval: {len(notes):,} memories, {len(note_queries)} queries), "
            "nDCG@10",
            table(["query style", "queries", *names], note_rows),
        ]
    )
    write_section(
        "memory-quality",
        "memory: search quality on team notes and on long conversations, SQLite and PostgreSQL",
        body,
        packages=("hostd-memory", "hostd-db"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only",
        choices=["all", "filters", "backends", "postgres", "quality", "search"],
        default="all",
        help="filters: only the tag/time filter and related-memory cases at 100,000 (no npm); "
        "backends: SQLite and PostgreSQL side by side (section memory-backends); postgres: only the "
        "PostgreSQL cases of that section; quality: search quality on bench/memory_eval and on the "
        "conversations, both backends (section memory-quality, no npm); search: only the search at "
        "10,000 against the official server (section memory-search)",
    )
    parser.add_argument(
        "--memories", type=int, default=100_000, help="N for --only backends/postgres (default 100,000)"
    )
    arguments = parser.parse_args()
    if arguments.only == "quality":
        anyio.run(run_quality, ["sqlite", "postgres"])
    elif arguments.only == "search":
        anyio.run(run_search_only)
    elif arguments.only in ("backends", "postgres"):
        chosen = ["postgres"] if arguments.only == "postgres" else ["sqlite", "postgres"]
        anyio.run(run_backends, arguments.memories, chosen)
    else:
        anyio.run(run_filters_only if arguments.only == "filters" else run)


if __name__ == "__main__":
    main()
